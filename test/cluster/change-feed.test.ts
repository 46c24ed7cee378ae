import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { createApp, createServiceDeps } from "../../src/app.ts";
import { connectChangeFeed } from "../../src/cluster/change-feed.ts";
import { loadConfig } from "../../src/config.ts";
import { silentLogger } from "../../src/logger.ts";
import { createWorkspace, TEST_SECRET } from "../helpers/app.ts";
import { cutListeningConnections, testDatabase } from "../helpers/database.ts";

/**
 * Two processes' worth of services on one PostgreSQL database: a change committed through one
 * reaches the other's caches within a second, through NOTIFY.
 */
const enabled = Boolean(process.env.DATABASE_URL);

type Workspace = Awaited<ReturnType<typeof createWorkspace>>;
let w: Workspace;
let other: { deps: ReturnType<typeof createServiceDeps>; app: ReturnType<typeof createApp> };
const stops: (() => Promise<void>)[] = [];

const onOther = async (method: string, path: string, token: string) => {
  const response = await other.app.handle(
    new Request(`http://localhost${path}`, {
      method,
      headers: { authorization: `Bearer ${token}` },
    }),
  );
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};

/** A read-only key of the workspace, made through the first process. */
async function createKey(admin: string) {
  const created = await w.request("POST", "/api/v1/api-keys", {
    token: admin,
    body: { name: "integration", scopes: { campaigns: "read" } },
  });
  return { key: created.body.data.key as string, id: created.body.data.api_key.id as string };
}

/** Polls until `check` holds, for at most a second: the feed's promise. */
async function within1s(check: () => Promise<boolean>) {
  const deadline = Date.now() + 1_000;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await Bun.sleep(20);
  }
  return check();
}

beforeEach(async () => {
  if (!enabled) return;
  w = await createWorkspace();
  const deps = createServiceDeps({
    database: await testDatabase(),
    config: loadConfig({ AUTH_JWT_SECRET: TEST_SECRET }),
    clock: w.clock,
    logger: silentLogger,
    jwtSecret: TEST_SECRET,
  });
  other = { deps, app: createApp(deps) };
  stops.push(await connectChangeFeed(w.deps), await connectChangeFeed(other.deps));
});

afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

describe.skipIf(!enabled)("changes reach every process sharing the database", () => {
  test("a key revoked through one process is refused by the other within a second", async () => {
    const admin = await w.login("admin@acme.test");
    const { key, id: keyId } = await createKey(admin);
    // The other process has the key cached as valid.
    expect((await onOther("GET", "/api/v1/campaigns", key)).status).toBe(200);
    await w.request("DELETE", `/api/v1/api-keys/${keyId}`, { token: admin });
    expect(
      await within1s(async () => (await onOther("GET", "/api/v1/campaigns", key)).status === 401),
    ).toBe(true);
  });

  test("a node revoked through one process is refused by the other within a second", async () => {
    const admin = await w.login("admin@acme.test");
    const created = await w.request("POST", "/api/v1/edge-nodes", {
      token: admin,
      body: { name: "edge", max_concurrent_calls: 1 },
    });
    const nodeKey = created.body.data.key as string;
    // A claim reads the node from the cache alone (a heartbeat writes its row, and would
    // find the revocation there).
    const claim = async () => {
      const response = await other.app.handle(
        new Request("http://localhost/api/v1/nodes/jobs/claim", {
          method: "POST",
          headers: { authorization: `Bearer ${nodeKey}`, "content-type": "application/json" },
          body: JSON.stringify({ max: 1 }),
        }),
      );
      return response.status;
    };
    expect(await claim()).toBe(200);
    await w.request("DELETE", `/api/v1/edge-nodes/${created.body.data.edge_node.id}`, {
      token: admin,
    });
    expect(await within1s(async () => (await claim()) === 401)).toBe(true);
  });

  test("a user disabled or re-roled through one process is refused or narrowed by the other within a second", async () => {
    const admin = await w.login("admin@acme.test");
    const supervisor = await w.user(w.acme.id, "lead@acme.test", "supervisor");
    const agent = await w.user(w.acme.id, "agent@acme.test", "agent");
    const supervisorToken = await w.login("lead@acme.test");
    const agentToken = await w.login("agent@acme.test");
    expect((await onOther("GET", "/api/v1/agents", supervisorToken)).status).toBe(200);
    expect((await onOther("GET", "/api/v1/agents/me", agentToken)).status).toBe(200);

    await w.request("PATCH", `/api/v1/users/${agent.id}`, {
      token: admin,
      body: { status: "disabled" },
    });
    await w.request("PATCH", `/api/v1/users/${supervisor.id}`, {
      token: admin,
      body: { role: "agent" },
    });
    expect(
      await within1s(async () => {
        const refused = await onOther("GET", "/api/v1/agents/me", agentToken);
        return refused.status === 403 && refused.body.code === "account_disabled";
      }),
    ).toBe(true);
    expect(
      await within1s(
        async () => (await onOther("GET", "/api/v1/agents", supervisorToken)).status === 403,
      ),
    ).toBe(true);
  });

  test("after its listening connection is cut, a process catches up on what it missed: a key revoked, a user disabled", async () => {
    const admin = await w.login("admin@acme.test");
    const agent = await w.user(w.acme.id, "agent@acme.test", "agent");
    const agentToken = await w.login("agent@acme.test");
    const { key, id: keyId } = await createKey(admin);
    expect((await onOther("GET", "/api/v1/campaigns", key)).status).toBe(200);
    expect((await onOther("GET", "/api/v1/agents/me", agentToken)).status).toBe(200);
    // Changes whose announcements were lost: written straight to the database.
    await w.deps.db.execute(sql`update api_keys set revoked_at = now() where id = ${keyId}`);
    await w.deps.db.execute(
      sql`update users set status = 'disabled', version = version + 1 where id = ${agent.id}`,
    );
    expect((await onOther("GET", "/api/v1/campaigns", key)).status).toBe(200);
    // The connection that listens is cut; postgres.js reconnects and listens again.
    await cutListeningConnections(await testDatabase());
    const caughtUp = async () =>
      (await onOther("GET", "/api/v1/campaigns", key)).status === 401 &&
      (await onOther("GET", "/api/v1/agents/me", agentToken)).status === 403;
    const deadline = Date.now() + 5_000;
    while (Date.now() < deadline && !(await caughtUp())) await Bun.sleep(50);
    expect(await caughtUp()).toBe(true);
  });

  test("an agent's presence changed through one process shows in the other's board within a second, as remote", async () => {
    const admin = await w.login("admin@acme.test");
    const agent = await w.user(w.acme.id, "agent@acme.test", "agent");
    const agentToken = await w.login("agent@acme.test");
    const campaignId = (
      await w.request("POST", "/api/v1/campaigns", { token: admin, body: { name: "Shared" } })
    ).body.data.campaign.id as string;
    const heard: boolean[] = [];
    other.deps.dialer.agents.subscribe((changed, change) => {
      if (changed.userId === agent.id) heard.push(change.remote);
    });
    // The other process's sockets are not told: the process that made the change tells its own.
    const pushed: string[] = [];
    other.deps.realtime.attach({
      publish: (_topic, data) => pushed.push(data),
      subscriberCount: () => 1,
    });
    const ready = await w.request("POST", "/api/v1/agents/me/state", {
      token: agentToken,
      body: { state: "ready", campaign_id: campaignId },
    });
    expect(
      await within1s(async () => other.deps.dialer.agents.longestReady(campaignId) !== undefined),
    ).toBe(true);
    expect(other.deps.dialer.agents.get(agent.id)).toMatchObject({
      state: "ready",
      campaignId,
      email: "agent@acme.test",
      since: Date.parse(ready.body.data.agent.since),
    });
    // The other process answers from its own board.
    expect((await onOther("GET", "/api/v1/agents/me", agentToken)).body).toMatchObject({
      data: { agent: { state: "ready", campaign_id: campaignId } },
    });

    await w.request("POST", "/api/v1/agents/me/state", {
      token: agentToken,
      body: { state: "offline" },
    });
    expect(await within1s(async () => other.deps.dialer.agents.get(agent.id) === undefined)).toBe(
      true,
    );
    expect(heard).toEqual([true, true]);
    expect(pushed.filter((data) => data.includes("agent.state"))).toEqual([]);
    expect(other.deps.dialer.agents.version(agent.id)).toBe(w.deps.dialer.agents.version(agent.id));
  });
});
