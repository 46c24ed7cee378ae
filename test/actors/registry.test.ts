import { describe, expect, test } from "bun:test";
import { SimulatedClock } from "xstate";
import type { RestorableContext } from "../../actors/campaign.machine.ts";
import { campaignMachine } from "../../actors/campaign.machine.ts";
import type { CallEventCommand, StatusCommand } from "../../actors/commands.ts";
import { type LiveCall, noLeads } from "../../actors/dialing.ts";
import { LiveCalls } from "../../actors/live-calls.ts";
import type { CampaignStore, Clock } from "../../actors/ports.ts";
import { CampaignRegistry } from "../../actors/registry.ts";
import type { AgentPresence } from "../../src/dialer/agents.ts";
import type { Logger } from "../../src/logger.ts";
import { silentLogger } from "../../src/logger.ts";
import {
  agentsAtHand,
  campaignRecord,
  dialingWith,
  hopperLead,
  inputsWith,
  liveCall,
  memoryPort,
} from "../helpers/campaigns.ts";
import { ManualClock } from "../helpers/clock.ts";

/** A store over a map, counting loads: what the registry restores from. */
function memoryStore(contexts: RestorableContext[]) {
  const rows = new Map(contexts.map((context) => [context.campaign.id, context]));
  const store: CampaignStore & { loads: number } = {
    loads: 0,
    async load(id) {
      store.loads++;
      await Bun.sleep(5);
      return rows.get(id);
    },
    async loadActive() {
      return [...rows.values()].filter((context) =>
        ["running", "paused"].includes(context.campaign.status),
      );
    },
    async loadDialing() {
      return dialingWith();
    },
    async campaignsWithLiveCalls() {
      return [];
    },
  };
  return store;
}

const tenantId = campaignRecord().tenantId;
const by = { actorType: "user" as const, actorId: "0190c0de-0000-7000-8000-0000000000bb" };
const status = (action: "start" | "pause" | "stop", key: string | null = null): StatusCommand => ({
  type: "status",
  action,
  key,
  by,
  requestId: "req-1",
});

/** A registry over `store` whose commands commit to memory (`memoryPort`). */
function registryOf(
  store: CampaignStore,
  options: { clock?: Clock; machine?: typeof campaignMachine; logger?: Logger } = {},
) {
  const registry = new CampaignRegistry(
    store,
    options.clock ?? new SimulatedClock(),
    options.logger ?? silentLogger,
    options.machine,
  );
  const port = memoryPort();
  registry.connect(port);
  return { registry, port };
}

describe("campaign registry", () => {
  test("restores running and paused campaigns at start, leaving the rest for first use", async () => {
    const store = memoryStore([
      { campaign: campaignRecord({ id: "c-running", status: "running" }), idempotency: {} },
      { campaign: campaignRecord({ id: "c-paused", status: "paused" }), idempotency: {} },
      { campaign: campaignRecord({ id: "c-draft", status: "draft" }), idempotency: {} },
    ]);
    const { registry } = registryOf(store);
    expect(await registry.hydrateActive()).toBe(2);
    expect(registry.peek("c-running")?.campaign.status).toBe("running");
    expect(registry.peek("c-draft")).toBeUndefined();
  });

  test("concurrent first commands share one load (the init gate) and run one at a time", async () => {
    const store = memoryStore([{ campaign: campaignRecord({ id: "c1" }), idempotency: {} }]);
    const order: string[] = [];
    const registry = new CampaignRegistry(store, new SimulatedClock(), silentLogger);
    registry.connect(
      memoryPort({
        async commit(writes) {
          const write = writes[0];
          const name = write?.type === "status" ? write.action : "?";
          order.push(`${name}:start`);
          await Bun.sleep(5);
          order.push(`${name}:end`);
          return { relayed: false };
        },
      }),
    );
    await Promise.all(
      (["start", "pause", "stop"] as const).map((action) =>
        registry.run({ tenantId, campaignId: "c1" }, status(action)),
      ),
    );
    expect(store.loads).toBe(1);
    expect(order).toEqual([
      "start:start",
      "start:end",
      "pause:start",
      "pause:end",
      "stop:start",
      "stop:end",
    ]);
    expect(registry.peek("c1")?.campaign.status).toBe("stopped");
  });

  test("another tenant's campaign is not found, and nothing is decided for it", async () => {
    const store = memoryStore([{ campaign: campaignRecord({ id: "c1" }), idempotency: {} }]);
    const { registry, port } = registryOf(store);
    await expect(
      registry.run({ tenantId: "another-tenant", campaignId: "c1" }, status("start")),
    ).rejects.toMatchObject({
      status: 404,
    });
    await expect(
      registry.run({ tenantId, campaignId: "nope" }, status("start")),
    ).rejects.toMatchObject({
      status: 404,
    });
    expect(port.written).toEqual([]);
  });

  test("the actor adopts a decision only once its writes have committed; a failed commit leaves nothing behind", async () => {
    const record = campaignRecord({ id: "c1", status: "running" });
    const store = memoryStore([{ campaign: record, idempotency: {} }]);
    const registry = new CampaignRegistry(store, new SimulatedClock(), silentLogger);
    let fail = true;
    const seen: string[] = [];
    registry.connect(
      memoryPort({
        async commit(writes) {
          seen.push(`commit ${writes.map((write) => write.type).join(",")}`);
          await Bun.sleep(1);
          if (fail) throw new Error("the database is away");
          seen.push(`status then ${registry.peek("c1")?.campaign.status}`);
          return { relayed: false };
        },
      }),
    );
    const run = () => registry.run({ tenantId, campaignId: "c1" }, status("pause"));
    await expect(run()).rejects.toThrow("the database is away");
    // Forgotten: the next command restores it from the database.
    expect(registry.peek("c1")).toBeUndefined();
    fail = false;
    expect((await run()).status).toBe(200);
    expect(registry.peek("c1")?.campaign.status).toBe("paused");
    expect(seen).toEqual(["commit status", "commit status", "status then running"]);
    expect(store.loads).toBe(2);
  });

  test("a failing actor is contained and restored from its last committed state", async () => {
    const store = memoryStore([{ campaign: campaignRecord({ id: "c1" }), idempotency: {} }]);
    const failing = campaignMachine.provide({
      actions: {
        adoptStatus: () => {
          throw new Error("boom");
        },
      },
    });
    const { registry } = registryOf(store, { machine: failing });
    await registry.run({ tenantId, campaignId: "c1" }, status("start"));
    expect(registry.peek("c1")).toBeUndefined();
    const { registry: healthy } = registryOf(store);
    expect(await healthy.run({ tenantId, campaignId: "c1" }, { type: "stats" })).toEqual(
      expect.any(Object),
    );
    expect(healthy.peek("c1")?.campaign.status).toBe("draft");
    expect(store.loads).toBe(2);
  });

  test("campaigns idle for a while forget their expired replies; open replies stay", async () => {
    const ids = ["c-idle", "c-busy", "c-open"];
    const store = memoryStore(
      ids.map((id) => ({ campaign: campaignRecord({ id, status: "paused" }), idempotency: {} })),
    );
    const clock = new ManualClock(1_000_000);
    const { registry } = registryOf(store, { clock });
    await registry.hydrateActive();
    // A status change's reply is kept for 60 s from when it was made.
    const at = (time: number) => clock.advance(time - clock.now());
    const record = async (id: string, key: string, time: number) => {
      at(time);
      await registry.run({ tenantId, campaignId: id }, status("start", key));
    };
    await record("c-idle", "k1", 950_000);
    await record("c-busy", "k2", 962_000);
    await record("c-open", "k3", 1_040_000);
    at(1_026_000);
    const sizes = () => ids.map((id) => registry.peek(id)?.idempotency.size);
    expect(sizes()).toEqual([1, 1, 1]);
    // c-busy's reply expired only 4 s ago: a change of its own may yet prune it.
    expect(registry.forgetIdleReplies(5_000)).toBe(1);
    expect(sizes()).toEqual([0, 1, 1]);
    at(1_028_000);
    expect(registry.forgetIdleReplies(5_000)).toBe(1);
    expect(sizes()).toEqual([0, 0, 1]);
    expect(registry.forgetIdleReplies(5_000)).toBe(0);
  });

  test("status changes are announced to subscribers; a failing subscriber harms no one", async () => {
    const store = memoryStore([{ campaign: campaignRecord({ id: "c1" }), idempotency: {} }]);
    const { registry } = registryOf(store);
    const seen: string[] = [];
    registry.subscribe(() => {
      throw new Error("listener bug");
    });
    registry.subscribe((event) => seen.push(`${event.from}->${event.to}`));
    await registry.run({ tenantId, campaignId: "c1" }, status("start"));
    expect(seen).toEqual(["draft->running"]);
  });
});

describe("a campaign's commands in batches", () => {
  const record = campaignRecord({
    id: "c1",
    status: "running",
    dialRatio: 5,
    callingWindowStart: "00:00",
    callingWindowEnd: "23:59",
  });
  const claimed = (id: string): LiveCall =>
    liveCall({
      id,
      tenantId,
      campaignId: "c1",
      leadId: `lead-${id}`,
      leaseExpiresAt: new Date(2_000_000),
      claimedAt: new Date(1_000_000),
      ringingAt: new Date(1_000_000),
      updatedAt: new Date(1_000_000),
      lead: { id: `lead-${id}`, phone: "+14155552671", timezone: "UTC", fields: {}, attempts: 1 },
    });
  const event = (callId: string, type: "answered" | "ringing" | "ended"): CallEventCommand => ({
    type: "call.event",
    nodeId: "node-1",
    callId,
    event: type,
    at: 1_001_000,
    hangupCause: type === "ended" ? "NORMAL_CLEARING" : null,
    bridgeMs: null,
  });
  const ready = (userId: string, since: number): AgentPresence => ({
    userId,
    tenantId,
    state: "ready",
    campaignId: "c1",
    callId: null,
    since,
  });

  function dialingRegistry(campaign = record) {
    const store: CampaignStore = {
      load: async () => ({ campaign, idempotency: {} }),
      loadActive: async () => [],
      loadDialing: async () => ({
        ...dialingWith(),
        hopper: [hopperLead("fresh-1"), hopperLead("fresh-2")],
        hopperFilledAt: 1_001_000,
        calls: LiveCalls.of([claimed("a"), claimed("b"), claimed("c")]),
        leads: { ...noLeads(), Dialing: 3, Fresh: 5 },
      }),
      campaignsWithLiveCalls: async () => [],
    };
    const registry = new CampaignRegistry(store, new ManualClock(1_001_000), silentLogger);
    const commits: string[][] = [];
    let release: () => void = () => {};
    let held: Promise<void> | undefined;
    let gathering: { promise: Promise<void>; resolve: () => void } | undefined;
    registry.connect(
      memoryPort({
        gather: async () => {
          if (gathering) await gathering.promise;
          return inputsWith({
            agents: agentsAtHand([ready("agent-1", 1), ready("agent-2", 2)]),
            dialNode: { nodeId: "node-1" },
          });
        },
        async commit(writes) {
          commits.push(writes.map((write) => write.type));
          if (held) await held;
          commits.push(writes.map((write) => `${write.type} done`));
          // A claim's statement marks every lead it was given.
          const marked = writes.flatMap((write) =>
            write.type === "claim"
              ? write.claim.candidates.map((c) => ({
                  id: c.leadId,
                  prior: "Fresh" as const,
                  attempts: 1,
                }))
              : [],
          );
          return { marked };
        },
      }),
    );
    const hold = () => {
      held = new Promise((resolve) => {
        release = () => {
          held = undefined;
          resolve();
        };
      });
    };
    /** Holds the reads of the commands that come next, until `releaseReads`. */
    const holdReads = () => {
      gathering = Promise.withResolvers<void>();
    };
    const releaseReads = () => {
      gathering?.resolve();
      gathering = undefined;
    };
    return { registry, commits, hold, release: () => release(), holdReads, releaseReads };
  }
  const target = { tenantId, campaignId: "c1" };

  test("commands waiting side by side are committed together, each decided on what every decision sent before it leaves", async () => {
    const { registry, commits, hold, release } = dialingRegistry();
    hold();
    // The first waits on its commit; the two answers that arrive meanwhile make one batch.
    const first = registry.run(target, event("c", "ringing"));
    await Bun.sleep(5);
    const answers = Promise.all([
      registry.run(target, event("a", "answered")),
      registry.run(target, event("b", "answered")),
    ]);
    await Bun.sleep(5);
    release();
    await first;
    const [a, b] = await answers;
    expect(commits.filter((commit) => !commit[0]?.endsWith("done"))).toEqual([
      ["save"],
      ["bridge", "bridge"],
    ]);
    // Both were ready: the second answer goes to the agent the first left ready.
    expect([a.call.agent_id, b.call.agent_id]).toEqual(["agent-1", "agent-2"]);
    // The answers were sent while the first commit was still under way.
    expect(commits.slice(0, 2)).toEqual([["save"], ["bridge", "bridge"]]);
  });

  test("a batch whose reads are gathered while the commits before it are adopted carries on with them: what follows is decided on it", async () => {
    const { registry, commits, hold, release, holdReads, releaseReads } = dialingRegistry();
    hold();
    const first = registry.run(target, event("c", "ringing"));
    await Bun.sleep(5);
    // The answer's reads take longer than the commit under way, which is adopted meanwhile.
    holdReads();
    const answered = registry.run(target, event("a", "answered"));
    await Bun.sleep(5);
    release();
    await first;
    hold();
    releaseReads();
    await Bun.sleep(5);
    // The answer is sent and its commit held: the call's end is decided after it, on it.
    const ended = registry.run(target, event("a", "ended"));
    await Bun.sleep(5);
    release();
    expect((await answered).call).toMatchObject({ status: "answered", agent_id: "agent-1" });
    expect((await ended).call).toMatchObject({
      status: "ended",
      outcome: "answered",
      agent_id: "agent-1",
    });
    expect(commits.filter((commit) => !commit[0]?.endsWith("done"))).toEqual([
      ["save"],
      ["bridge"],
      ["end"],
    ]);
  });

  test("a refusal fails alone; a second command about one call waits for the next batch", async () => {
    const { registry, commits, hold, release } = dialingRegistry();
    hold();
    const first = registry.run(target, event("c", "ringing"));
    await Bun.sleep(5);
    const refused = (error: unknown) => error;
    const unknown = registry
      .run({ ...target, missing: "call" }, event("nope", "ringing"))
      .catch(refused);
    const end = registry.run(target, event("a", "ended"));
    const again = registry.run(target, event("a", "ended")).catch(refused);
    const other = registry.run(target, event("b", "ringing"));
    await Bun.sleep(5);
    release();
    await first;
    expect(await unknown).toMatchObject({ status: 404 });
    expect((await end).call.status).toBe("ended");
    // The repeat is decided once the end has committed: no longer in flight, and this port
    // holds no rows to answer it from.
    expect(await again).toMatchObject({ status: 404 });
    expect((await other).call.status).toBe("ringing");
    expect(commits.filter((commit) => !commit[0]?.endsWith("done"))).toEqual([
      ["save"],
      ["end"],
      ["save"],
    ]);
  });

  test("a claim that reserves no agent commits while the calls in flight go on; the next claim steps aside until it is adopted", async () => {
    const { registry, commits, hold, release } = dialingRegistry();
    const claim = (count: number) => ({
      type: "claim" as const,
      nodeId: "node-1",
      capacity: null,
      count,
      claimKey: null,
    });
    hold();
    const placed = registry.run(target, claim(1));
    await Bun.sleep(5);
    // The claim's commit is held: a second claim, whose pacing must count the first's calls,
    // steps aside, and an event of a call in flight behind it is decided and sent meanwhile.
    const next = registry.run(target, claim(1));
    const ringing = registry.run(target, event("a", "ringing"));
    await Bun.sleep(5);
    expect(commits).toEqual([["claim"], ["save"]]);
    release();
    expect(await placed).toEqual([expect.objectContaining({ lead_id: "fresh-1" })]);
    expect((await ringing).call.status).toBe("ringing");
    expect(await next).toEqual([expect.objectContaining({ lead_id: "fresh-2" })]);
  });

  test("a dial that reserves its agent goes first; the answer and the agent's pause after it", async () => {
    const { registry, commits, hold, release } = dialingRegistry({
      ...record,
      dialMode: "preview",
    });
    // Preview: the claim only offers agent-1 (longest ready) a lead.
    const offered = await registry.run(target, {
      type: "claim",
      nodeId: "node-1",
      capacity: null,
      count: 1,
      claimKey: null,
    });
    expect(offered).toEqual([]);
    expect(commits.flat()).toEqual([]);
    commits.length = 0;
    hold();
    const placed = registry.run(target, { type: "call.dial", agentId: "agent-1", leadId: null });
    await Bun.sleep(5);
    // Its commit is held: a call in flight answered meanwhile, and the reserved agent's own
    // pause, wait for it.
    const order: string[] = [];
    const answered = registry.run(target, event("a", "answered"));
    const paused = registry
      .run(target, {
        type: "agent.state",
        agent: { userId: "agent-1", tenantId, email: "one@acme.test" },
        state: "paused",
        campaignId: null,
      })
      .then(() => order.push("paused"));
    void placed.then(() => order.push("placed"));
    await Bun.sleep(5);
    expect(commits).toEqual([["claim", "nodeCommand"]]);
    expect(order).toEqual([]);
    release();
    const { call } = await placed;
    expect(call?.agent_id).toBe("agent-1");
    expect((await answered).call.status).toBe("answered");
    await paused;
    expect(order).toEqual(["placed", "paused"]);
  });
});
