import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { rowsOf } from "../../db/rows.ts";
import { createApp, createServiceDeps } from "../../src/app.ts";
import { type ClusterPushRelay, connectPushRelay } from "../../src/cluster/push-relay.ts";
import { loadConfig } from "../../src/config.ts";
import { silentLogger } from "../../src/logger.ts";
import { createWorkspace, TEST_SECRET } from "../helpers/app.ts";
import { testDatabase } from "../helpers/database.ts";
import { listenOnLoopback, openSocket } from "../helpers/sockets.ts";

/**
 * Two processes' worth of services on one PostgreSQL database, each listening on its own
 * port: `owner` is where changes are made, `other` holds the sockets. Every push published on
 * one reaches the other's sockets through the relay.
 */
const enabled = Boolean(process.env.DATABASE_URL);

type Workspace = Awaited<ReturnType<typeof createWorkspace>>;
let owner: Workspace;
let other: { deps: ReturnType<typeof createServiceDeps>; app: ReturnType<typeof createApp> };
let listening: ReturnType<typeof listenOnLoopback>[] = [];
let relays: ClusterPushRelay[] = [];
let adminToken: string;
let campaignId: string;

const otherUrl = (path: string, token: string) =>
  (listening[1] as (typeof listening)[0]).wsUrl(path, token);

async function until(check: () => boolean | Promise<boolean>, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await Bun.sleep(10);
  }
  return check();
}

const storedMessages = async () =>
  rowsOf<{ count: number }>(
    await owner.deps.db.execute(sql`select count(*)::int as count from cluster_messages`),
  )[0]?.count;

beforeEach(async () => {
  if (!enabled) return;
  owner = await createWorkspace();
  const deps = createServiceDeps({
    database: await testDatabase(),
    config: loadConfig({ AUTH_JWT_SECRET: TEST_SECRET }),
    clock: owner.clock,
    logger: silentLogger,
    jwtSecret: TEST_SECRET,
  });
  other = { deps, app: createApp(deps) };
  listening = [listenOnLoopback(owner), listenOnLoopback(other)];
  const options = { heartbeatMs: 100, sweepMs: 100, keepSeconds: 1 };
  relays = [
    await connectPushRelay(owner.deps, options),
    await connectPushRelay(other.deps, options),
  ];
  expect(await until(() => relays.every((relay) => relay.peers === 1), 2_000)).toBe(true);
  adminToken = await owner.login("admin@acme.test");
  campaignId = (
    await owner.request("POST", "/api/v1/campaigns", {
      token: adminToken,
      body: { name: "Spring" },
    })
  ).body.data.campaign.id;
});

afterEach(async () => {
  for (const relay of relays.splice(0)) await relay.stop();
  for (const server of listening.splice(0)) await server.stop();
});

describe.skipIf(!enabled)("pushes reach the sockets of every process sharing the database", () => {
  test("a supervisor on one process sees a status change made on another, once, with its stats", async () => {
    const supervisor = await openSocket(otherUrl("/ws/supervisor", adminToken));
    await supervisor.next("snapshot");
    const started = Date.now();
    const changed = await owner.request("POST", `/api/v1/campaigns/${campaignId}/status`, {
      token: adminToken,
      body: { action: "start" },
    });
    expect(changed.status).toBe(200);
    expect(await supervisor.next("campaign.status", 1_000)).toMatchObject({
      campaign_id: campaignId,
      status: "running",
      from: "draft",
    });
    expect(Date.now() - started).toBeLessThan(1_000);
    // The owner computes the stats though no socket of its own listens.
    expect(await supervisor.next("campaign.stats", 1_000)).toMatchObject({
      campaign_id: campaignId,
    });
    await Bun.sleep(200);
    expect(supervisor.messages.filter((message) => message.type === "campaign.status")).toEqual([]);
    supervisor.socket.close();
  });

  test("an agent's state changed on one process reaches its socket and supervisors on another", async () => {
    await owner.user(owner.acme.id, "agent@acme.test", "agent");
    const agentToken = await owner.login("agent@acme.test");
    const agent = await openSocket(otherUrl("/ws/agent", agentToken));
    expect((await agent.next("agent.state")).agent.state).toBe("offline");
    const supervisor = await openSocket(otherUrl("/ws/supervisor", adminToken));
    await supervisor.next("snapshot");

    const changed = await owner.request("POST", "/api/v1/agents/me/state", {
      token: agentToken,
      body: { state: "ready", campaign_id: campaignId },
    });
    expect(changed.status).toBe(200);
    expect((await agent.next("agent.state", 1_000)).agent).toMatchObject({
      state: "ready",
      campaign_id: campaignId,
    });
    expect((await supervisor.next("agent.state", 1_000)).agent.state).toBe("ready");
    agent.socket.close();
    supervisor.socket.close();
  });

  test("a snapshot shows the status committed on another process, not an actor's older copy", async () => {
    // The other process loads the campaign's actor while it is a draft.
    const read = await other.app.handle(
      new Request(`http://localhost/api/v1/campaigns/${campaignId}`, {
        headers: { authorization: `Bearer ${adminToken}` },
      }),
    );
    expect(read.status).toBe(200);
    expect(other.deps.campaigns.peek(campaignId)?.campaign.status).toBe("draft");
    await owner.request("POST", `/api/v1/campaigns/${campaignId}/status`, {
      token: adminToken,
      body: { action: "start" },
    });
    const supervisor = await openSocket(otherUrl("/ws/supervisor", adminToken));
    const snapshot = await supervisor.next("snapshot");
    expect(snapshot.campaigns).toContainEqual(
      expect.objectContaining({ id: campaignId, status: "running" }),
    );
    supervisor.socket.close();
  });

  test("a push over NOTIFY's 8,000 bytes crosses by reference, and the reference is swept", async () => {
    const supervisor = await openSocket(otherUrl("/ws/supervisor", adminToken));
    await supervisor.next("snapshot");
    const blob = "é".repeat(6_000);
    owner.deps.realtime.toCampaign(owner.acme.id, campaignId, { type: "test.large", blob });
    const received = await supervisor.next("test.large", 1_000);
    expect(received.blob).toBe(blob);
    // Stored once, then swept once older than the relay keeps them (a second in this test).
    expect(await until(async () => (await storedMessages()) === 0, 3_000)).toBe(true);
    supervisor.socket.close();
  });

  test("a burst of 200 pushes, small and large, arrives in the order it was published", async () => {
    const supervisor = await openSocket(otherUrl("/ws/supervisor", adminToken));
    await supervisor.next("snapshot");
    for (let n = 0; n < 200; n++) {
      // Every 25th is too large for a notification; some turns of the event loop pass between.
      const padding = n % 25 === 7 ? "x".repeat(9_000) : "";
      owner.deps.realtime.toSupervisors(owner.acme.id, { type: "test.burst", n, padding });
      if (n % 30 === 0) await Bun.sleep(0);
    }
    expect(
      await until(
        () => supervisor.messages.filter((message) => message.type === "test.burst").length >= 200,
        3_000,
      ),
    ).toBe(true);
    const order = supervisor.messages
      .filter((message) => message.type === "test.burst")
      .map((message) => message.n);
    expect(order).toEqual(Array.from({ length: 200 }, (_, n) => n));
    supervisor.socket.close();
  });

  test("a process stopped says goodbye: the other stops relaying to it", async () => {
    await relays.pop()?.stop();
    expect(await until(() => relays[0]?.peers === 0, 1_000)).toBe(true);
  });
});
