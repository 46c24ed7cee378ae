import { describe, expect, test } from "bun:test";
import { SimulatedClock } from "xstate";
import type { RestorableContext } from "../../actors/campaign.machine.ts";
import { campaignMachine } from "../../actors/campaign.machine.ts";
import type { CampaignStore } from "../../actors/ports.ts";
import { CampaignRegistry } from "../../actors/registry.ts";
import { silentLogger } from "../../src/logger.ts";
import { campaignRecord, dialingWith } from "../helpers/campaigns.ts";

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

const committed = { version: 2, updatedAt: "2026-03-02T12:01:00.000Z" };
const tenantId = campaignRecord().tenantId;

describe("campaign registry", () => {
  test("restores running and paused campaigns at start, leaving the rest for first use", async () => {
    const store = memoryStore([
      { campaign: campaignRecord({ id: "c-running", status: "running" }), idempotency: {} },
      { campaign: campaignRecord({ id: "c-paused", status: "paused" }), idempotency: {} },
      { campaign: campaignRecord({ id: "c-draft", status: "draft" }), idempotency: {} },
    ]);
    const registry = new CampaignRegistry(store, new SimulatedClock(), silentLogger);
    expect(await registry.hydrateActive()).toBe(2);
    expect(registry.peek("c-running")?.campaign.status).toBe("running");
    expect(registry.peek("c-draft")).toBeUndefined();
  });

  test("concurrent first commands share one load (the init gate) and run one at a time", async () => {
    const store = memoryStore([{ campaign: campaignRecord({ id: "c1" }), idempotency: {} }]);
    const registry = new CampaignRegistry(store, new SimulatedClock(), silentLogger);
    const order: string[] = [];
    await Promise.all(
      ["a", "b", "c"].map((name) =>
        registry.withCampaign(tenantId, "c1", async () => {
          order.push(`${name}:start`);
          await Bun.sleep(5);
          order.push(`${name}:end`);
        }),
      ),
    );
    expect(store.loads).toBe(1);
    expect(order).toEqual(["a:start", "a:end", "b:start", "b:end", "c:start", "c:end"]);
  });

  test("another tenant's campaign is not found", async () => {
    const store = memoryStore([{ campaign: campaignRecord({ id: "c1" }), idempotency: {} }]);
    const registry = new CampaignRegistry(store, new SimulatedClock(), silentLogger);
    expect(await registry.withCampaign("another-tenant", "c1", async () => 1)).toEqual({
      found: false,
    });
    expect(await registry.withCampaign(tenantId, "nope", async () => 1)).toEqual({ found: false });
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
    const registry = new CampaignRegistry(store, new SimulatedClock(), silentLogger, failing);
    await registry.withCampaign(tenantId, "c1", async (actor) =>
      actor.send({ type: "campaign.start", ...committed }),
    );
    expect(registry.peek("c1")).toBeUndefined();
    const status = await registry.withCampaign(
      tenantId,
      "c1",
      async (actor) => actor.getSnapshot().value,
    );
    expect(status).toEqual({ found: true, value: "draft" });
    expect(store.loads).toBe(2);
  });

  test("campaigns idle for a while forget their expired replies; open replies stay", async () => {
    const ids = ["c-idle", "c-busy", "c-open"];
    const store = memoryStore(
      ids.map((id) => ({ campaign: campaignRecord({ id, status: "running" }), idempotency: {} })),
    );
    const clock = new SimulatedClock();
    clock.set(1_000_000);
    const registry = new CampaignRegistry(store, clock, silentLogger);
    await registry.hydrateActive();
    const record = (id: string, key: string, expiresAt: number) =>
      registry.withCampaign(tenantId, id, async (actor) =>
        actor.send({
          type: "idempotency.recorded",
          entry: { key, bodyHash: "h", status: 200, text: "{}", expiresAt },
        }),
      );
    await record("c-idle", "k1", 1_010_000);
    await record("c-busy", "k2", 1_022_000);
    await record("c-open", "k3", 1_100_000);
    clock.set(1_026_000);
    const sizes = () => ids.map((id) => registry.peek(id)?.idempotency.size);
    expect(sizes()).toEqual([1, 1, 1]);
    // c-busy's reply expired only 4 s ago: a change of its own may yet prune it.
    expect(registry.forgetIdleReplies(5_000)).toBe(1);
    expect(sizes()).toEqual([0, 1, 1]);
    clock.set(1_028_000);
    expect(registry.forgetIdleReplies(5_000)).toBe(1);
    expect(sizes()).toEqual([0, 0, 1]);
    expect(registry.forgetIdleReplies(5_000)).toBe(0);
  });

  test("status changes are announced to subscribers; a failing subscriber harms no one", async () => {
    const store = memoryStore([{ campaign: campaignRecord({ id: "c1" }), idempotency: {} }]);
    const registry = new CampaignRegistry(store, new SimulatedClock(), silentLogger);
    const seen: string[] = [];
    registry.subscribe(() => {
      throw new Error("listener bug");
    });
    registry.subscribe((event) => seen.push(`${event.from}->${event.to}`));
    await registry.withCampaign(tenantId, "c1", async (actor) =>
      actor.send({ type: "campaign.start", ...committed }),
    );
    expect(seen).toEqual(["draft->running"]);
  });
});
