import { describe, expect, test } from "bun:test";
import { SimulatedClock } from "xstate";
import {
  type CampaignEvent,
  type CampaignSnapshot,
  type CampaignStatus,
  campaignActorFrom,
  restoredSnapshot,
} from "../../actors/campaign.machine.ts";
import { noLeads } from "../../actors/dialing.ts";
import { bodyHashOf, IdempotencyWindow } from "../../actors/idempotency.ts";
import type { CampaignPipeline, CampaignStore } from "../../actors/ports.ts";
import { CampaignRegistry } from "../../actors/registry.ts";
import { ApiError } from "../../src/errors.ts";
import { silentLogger } from "../../src/logger.ts";
import {
  type CampaignCommand,
  type CampaignWrite,
  type CommitFacts,
  campaignStep,
} from "../../src/modules/campaigns/commands.ts";
import { campaignRecord, contextWith, dialingWith } from "../helpers/campaigns.ts";

/**
 * The campaign's own commands decided without a database: the writes, the events the actor
 * adopts once they commit, and the reply, from the actor's snapshot and the time alone.
 */
const NOW = Date.parse("2026-03-02T12:00:00.000Z");
const actor = { actorType: "user" as const, actorId: "0190c0de-0000-7000-8000-0000000000bb" };
const status = (
  action: "start" | "pause" | "stop",
  key?: string,
): Extract<CampaignCommand, { type: "status" }> => ({
  type: "status",
  action,
  key,
  actor,
  requestId: "req-1",
});
const snapshotOf = (from: CampaignStatus): CampaignSnapshot =>
  restoredSnapshot(contextWith(from, { idempotency: new IdempotencyWindow() }));

/** The snapshot after an actor from `snapshot` adopted `events` (its window records in place). */
function adopted(snapshot: CampaignSnapshot, events: CampaignEvent[]): CampaignSnapshot {
  const actor = campaignActorFrom(snapshot).start();
  for (const event of events) actor.send(event);
  const after = actor.getSnapshot();
  actor.stop();
  return after;
}

const refusalOf = (decide: () => unknown) => {
  try {
    decide();
  } catch (error) {
    if (error instanceof ApiError) return { status: error.status, code: error.code };
    throw error;
  }
  throw new Error("not refused");
};

describe("a status change, decided", () => {
  test("a change allowed writes the status with the reply under its key; the actor adopts it after the commit", () => {
    const snapshot = snapshotOf("running");
    const decision = campaignStep(snapshot, status("pause", "k1"), NOW);
    expect(decision.writes).toHaveLength(1);
    const [write] = decision.writes;
    expect(write).toMatchObject({
      type: "status",
      to: "paused",
      action: "pause",
      actor,
      requestId: "req-1",
      at: new Date(NOW),
      entry: { key: "k1", status: 200, bodyHash: bodyHashOf({ action: "pause" }) },
    });
    const reply = decision.reply({ relayed: true });
    expect(reply.status).toBe(200);
    expect(JSON.parse(reply.text).data.campaign).toMatchObject({ status: "paused", version: 2 });
    expect(write?.type === "status" && write.entry?.text).toBe(reply.text);
    const events = decision.adopt({ relayed: true });
    expect(events).toEqual([
      expect.objectContaining({ type: "campaign.pause", version: 2, relayed: true }),
    ]);
    const after = adopted(snapshot, events);
    expect(after.value).toBe("paused");
    expect(after.context.idempotency.lookup("k1", bodyHashOf({ action: "pause" }), NOW).kind).toBe(
      "replay",
    );
  });

  test("a change the table refuses is 409; under a key its reply is written and kept", () => {
    expect(refusalOf(() => campaignStep(snapshotOf("draft"), status("pause"), NOW))).toEqual({
      status: 409,
      code: "invalid_transition",
    });
    const snapshot = snapshotOf("draft");
    const decision = campaignStep(snapshot, status("pause", "k2"), NOW);
    expect(decision.writes).toEqual([
      { type: "reply", campaignId: snapshot.context.campaign.id, entry: expect.any(Object) },
    ]);
    const reply = decision.reply({ relayed: false });
    expect(reply.status).toBe(409);
    expect(JSON.parse(reply.text).code).toBe("invalid_transition");
    const after = adopted(snapshot, decision.adopt({ relayed: false }));
    expect(after.value).toBe("draft");
    expect(after.context.idempotency.lookup("k2", bodyHashOf({ action: "pause" }), NOW).kind).toBe(
      "replay",
    );
  });

  test("a key already answered is replayed without a write; with another body it is 422", () => {
    const snapshot = snapshotOf("running");
    const first = campaignStep(snapshot, status("pause", "k3"), NOW);
    const after = adopted(snapshot, first.adopt({ relayed: false }));
    const again = campaignStep(after, status("pause", "k3"), NOW + 1_000);
    expect(again.writes).toEqual([]);
    expect(again.adopt({ relayed: false })).toEqual([]);
    expect(again.reply({ relayed: false })).toEqual({
      ...first.reply({ relayed: false }),
      replayed: true,
    });
    expect(refusalOf(() => campaignStep(after, status("stop", "k3"), NOW + 1_000))).toEqual({
      status: 422,
      code: "idempotency_key_reused",
    });
  });
});

describe("completion, decided", () => {
  const done = { ...dialingWith(), leads: { ...noLeads(), Completed: 3 } };

  test("a running campaign whose leads are all final and with no call in flight completes, by the system", () => {
    const snapshot = restoredSnapshot(contextWith("running", { dialing: done }));
    const decision = campaignStep(snapshot, { type: "complete" }, NOW);
    expect(decision.writes).toEqual([
      expect.objectContaining({
        type: "status",
        to: "completed",
        action: "complete",
        actor: { actorType: "system", actorId: null },
        entry: undefined,
      }),
    ]);
    expect(adopted(snapshot, decision.adopt({ relayed: false })).value).toBe("completed");
  });

  test("nothing is written while a lead is left, before the dialing state is loaded, or when not running", () => {
    const left = { ...done, leads: { ...done.leads, Retry: 1 } };
    for (const context of [
      contextWith("running", { dialing: left }),
      contextWith("running"),
      contextWith("paused", { dialing: done }),
    ]) {
      const decision = campaignStep(restoredSnapshot(context), { type: "complete" }, NOW);
      expect(decision.writes).toEqual([]);
      expect(decision.adopt({ relayed: false })).toEqual([]);
    }
  });
});

describe("a settings change, decided", () => {
  const settings = (
    version: number,
    changes: Record<string, string>,
  ): Extract<CampaignCommand, { type: "settings" }> => ({
    type: "settings",
    version,
    settings: changes,
    changes,
    actor,
    requestId: "req-2",
  });

  test("on another version it is 409; a calling window that ends before it starts is 400", () => {
    expect(refusalOf(() => campaignStep(snapshotOf("draft"), settings(2, {}), NOW))).toEqual({
      status: 409,
      code: "version_conflict",
    });
    expect(
      refusalOf(() =>
        campaignStep(snapshotOf("draft"), settings(1, { callingWindowStart: "23:00" }), NOW),
      ),
    ).toEqual({ status: 400, code: "invalid_request" });
  });

  test("the actor adopts, and the reply shows, the campaign as the database wrote it", () => {
    const snapshot = snapshotOf("draft");
    const decision = campaignStep(snapshot, settings(1, { name: "Autumn" }), NOW);
    expect(decision.writes).toEqual([
      expect.objectContaining({ type: "settings", settings: { name: "Autumn" } }),
    ]);
    const written = campaignRecord({ name: "Autumn", version: 2 });
    const after = adopted(snapshot, decision.adopt({ relayed: false, campaign: written }));
    expect(after.context.campaign).toMatchObject({ name: "Autumn", version: 2, status: "draft" });
    expect(decision.reply({ relayed: false, campaign: written }).campaign).toMatchObject({
      name: "Autumn",
      version: 2,
    });
  });
});

describe("a command through the registry's pipeline", () => {
  const record = campaignRecord({ status: "running" });
  const store: CampaignStore = {
    load: async () => ({ campaign: record, idempotency: {} }),
    loadActive: async () => [],
    loadDialing: async () => dialingWith(),
    campaignsWithLiveCalls: async () => [],
  };

  test("the actor adopts the decision only once its writes have committed; a failed commit leaves it as it was", async () => {
    const registry = new CampaignRegistry(store, new SimulatedClock(), silentLogger);
    const seen: string[] = [];
    let fail = true;
    const pipeline: CampaignPipeline<CampaignCommand, CampaignWrite, CommitFacts, unknown> = {
      step: (snapshot, command, now) => {
        const decision = campaignStep(snapshot, command, now);
        return {
          ...decision,
          adopt: (facts) => {
            seen.push("adopt");
            return decision.adopt(facts);
          },
        };
      },
      commit: async (writes) => {
        seen.push(`commit ${writes.map((write) => write.type).join(",")}`);
        await Bun.sleep(1);
        if (fail) throw new Error("the database is away");
        return { relayed: false };
      },
    };
    const run = () => registry.execute(record.tenantId, record.id, status("pause"), pipeline);
    await expect(run()).rejects.toThrow("the database is away");
    expect(registry.peek(record.id)?.campaign.status).toBe("running");
    fail = false;
    expect((await run()).found).toBe(true);
    expect(registry.peek(record.id)?.campaign.status).toBe("paused");
    expect(seen).toEqual(["commit status", "commit status", "adopt"]);
    // Another tenant's campaign is not found, and nothing is decided for it.
    expect(await registry.execute("another", record.id, status("start"), pipeline)).toEqual({
      found: false,
    });
    expect(seen).toHaveLength(3);
  });
});
