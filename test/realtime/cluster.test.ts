import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { rowsOf } from "../../db/rows.ts";
import { type ClusterPushRelay, connectPushRelay } from "../../src/cluster/push-relay.ts";
import type { ServiceDeps } from "../../src/deps.ts";
import { createWorkspace } from "../helpers/app.ts";
import { cutListeningConnections, testDatabase } from "../helpers/database.ts";
import { startLeasedProcess } from "../helpers/leased-process.ts";
import { type Message, openSocket } from "../helpers/sockets.ts";

/**
 * Two processes' worth of services on one PostgreSQL database, each listening on loopback with
 * its own leases: `owner` is where the campaign's commands run, `other` holds the sockets.
 * Every push published on one reaches the other's sockets through the relay.
 */
const enabled = Boolean(process.env.DATABASE_URL);

type Workspace = Awaited<ReturnType<typeof createWorkspace>>;
interface Process {
  deps: ServiceDeps;
  url: string;
  relay: ClusterPushRelay;
  wsUrl: (path: string, token: string) => string;
  stop: () => Promise<void>;
}
let w: Workspace;
let owner: Process;
let other: Process;
let adminToken: string;
let campaignId: string;
const processes: Process[] = [];

async function startProcess(): Promise<Process> {
  const started = await startLeasedProcess(w.clock);
  const relay = await connectPushRelay(started.deps, {
    heartbeatMs: 100,
    sweepMs: 100,
    keepSeconds: 1,
  });
  const process: Process = {
    ...started,
    relay,
    async stop() {
      await relay.stop();
      await started.stop();
    },
  };
  processes.push(process);
  return process;
}

const call = async (process: Process, method: string, path: string, body?: unknown) => {
  const response = await fetch(`${process.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Message };
};

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
  w = await createWorkspace();
  adminToken = await w.login("admin@acme.test");
  owner = await startProcess();
  other = await startProcess();
  expect(await until(() => owner.relay.peers === 1 && other.relay.peers === 1, 2_000)).toBe(true);
  const created = await call(owner, "POST", "/api/v1/campaigns", { name: "Spring" });
  campaignId = created.body.data.campaign.id;
  // The campaign's first command makes `owner` its owner.
  expect((await call(owner, "GET", `/api/v1/campaigns/${campaignId}`)).status).toBe(200);
  expect(owner.deps.campaigns.leases.holds(campaignId)).toBe(true);
});

afterEach(async () => {
  for (const process of processes.splice(0)) await process.stop();
});

describe.skipIf(!enabled)("pushes reach the sockets of every process sharing the database", () => {
  test("a supervisor on one process sees a status change made on another, once, with its stats", async () => {
    const supervisor = await openSocket(other.wsUrl("/ws/supervisor", adminToken));
    await supervisor.next("snapshot");
    const started = Date.now();
    const changed = await call(owner, "POST", `/api/v1/campaigns/${campaignId}/status`, {
      action: "start",
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

  test("each process says which tenants it has supervisors of, at once when one connects", async () => {
    // Nobody supervises the workspace yet: the owner computes no stats for it.
    expect(owner.relay.supervisedElsewhere(w.acme.id)).toBe(false);
    const supervisor = await openSocket(other.wsUrl("/ws/supervisor", adminToken));
    // Sooner than the next heartbeat (every 100 ms here).
    expect(await until(() => owner.relay.supervisedElsewhere(w.acme.id), 60)).toBe(true);
    expect(other.relay.supervisedElsewhere(w.acme.id)).toBe(false);
    supervisor.socket.close();
    expect(await until(() => !owner.relay.supervisedElsewhere(w.acme.id), 1_000)).toBe(true);
  });

  test("after the relay's listening connection is cut, supervisors get a snapshot: pushes may have been lost", async () => {
    const supervisor = await openSocket(other.wsUrl("/ws/supervisor", adminToken));
    await supervisor.next("snapshot");
    await cutListeningConnections(await testDatabase());
    expect(await supervisor.next("snapshot", 5_000)).toMatchObject({ type: "snapshot" });
    supervisor.socket.close();
  });

  test("a status change sent to a process that does not own the campaign is pushed to that process's sockets", async () => {
    const supervisor = await openSocket(other.wsUrl("/ws/supervisor", adminToken));
    await supervisor.next("snapshot");
    const changed = await call(other, "POST", `/api/v1/campaigns/${campaignId}/status`, {
      action: "start",
    });
    expect(changed.status).toBe(200);
    expect(other.deps.campaigns.leases.holds(campaignId)).toBe(false);
    expect(await supervisor.next("campaign.status", 1_000)).toMatchObject({
      campaign_id: campaignId,
      status: "running",
    });
    supervisor.socket.close();
  });

  test("an agent's state changed on one process reaches its socket and supervisors on another", async () => {
    await w.user(w.acme.id, "agent@acme.test", "agent");
    const agentToken = await w.login("agent@acme.test");
    const agent = await openSocket(other.wsUrl("/ws/agent", agentToken));
    expect((await agent.next("agent.state")).agent.state).toBe("offline");
    const supervisor = await openSocket(other.wsUrl("/ws/supervisor", adminToken));
    await supervisor.next("snapshot");

    const response = await fetch(`${owner.url}/api/v1/agents/me/state`, {
      method: "POST",
      headers: { authorization: `Bearer ${agentToken}`, "content-type": "application/json" },
      body: JSON.stringify({ state: "ready", campaign_id: campaignId }),
    });
    expect(response.status).toBe(200);
    expect((await agent.next("agent.state", 1_000)).agent).toMatchObject({
      state: "ready",
      campaign_id: campaignId,
    });
    expect((await supervisor.next("agent.state", 1_000)).agent.state).toBe("ready");
    agent.socket.close();
    supervisor.socket.close();
  });

  test("a snapshot on a process that does not own the campaign shows its committed status", async () => {
    await call(owner, "POST", `/api/v1/campaigns/${campaignId}/status`, { action: "start" });
    const supervisor = await openSocket(other.wsUrl("/ws/supervisor", adminToken));
    const snapshot = await supervisor.next("snapshot");
    expect(snapshot.campaigns).toContainEqual(
      expect.objectContaining({ id: campaignId, status: "running", version: 2 }),
    );
    supervisor.socket.close();
  });

  test("a push over NOTIFY's 8,000 bytes crosses by reference, and the reference is swept", async () => {
    const supervisor = await openSocket(other.wsUrl("/ws/supervisor", adminToken));
    await supervisor.next("snapshot");
    const blob = "é".repeat(6_000);
    owner.deps.realtime.toCampaign(w.acme.id, campaignId, { type: "test.large", blob });
    const received = await supervisor.next("test.large", 1_000);
    expect(received.blob).toBe(blob);
    // Stored once, then swept once older than the relay keeps them (a second in this test).
    expect(await until(async () => (await storedMessages()) === 0, 3_000)).toBe(true);
    supervisor.socket.close();
  });

  test("a burst of 200 pushes, small and large, arrives in the order it was published", async () => {
    const supervisor = await openSocket(other.wsUrl("/ws/supervisor", adminToken));
    await supervisor.next("snapshot");
    for (let n = 0; n < 200; n++) {
      // Every 25th is too large for a notification; some turns of the event loop pass between.
      const padding = n % 25 === 7 ? "x".repeat(9_000) : "";
      owner.deps.realtime.toSupervisors(w.acme.id, { type: "test.burst", n, padding });
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
    await other.stop();
    processes.splice(processes.indexOf(other), 1);
    expect(await until(() => owner.relay.peers === 0, 1_000)).toBe(true);
  });
});
