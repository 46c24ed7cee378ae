import { describe, expect, test } from "bun:test";
import {
  type CampaignEvent,
  type CampaignSnapshot,
  type CampaignStatus,
  campaignActorFrom,
  restoredSnapshot,
} from "../../actors/campaign.machine.ts";
import type {
  CampaignCommand,
  SettingsChanges,
  SettingsCommand,
  StatusCommand,
} from "../../actors/commands.ts";
import { noLeads } from "../../actors/dialing.ts";
import { bodyHashOf, IdempotencyWindow } from "../../actors/idempotency.ts";
import { decide } from "../../actors/registry.ts";
import { ApiError } from "../../src/errors.ts";
import { completion } from "../../src/modules/campaigns/decide.ts";
import {
  agentsAtHand,
  campaignRecord,
  contextWith,
  dialingWith,
  inputsWith,
} from "../helpers/campaigns.ts";

/**
 * The campaign's own commands decided without a database: the writes, the events the actor
 * adopts once they commit, and the reply, from the actor's snapshot and the time alone.
 */
const NOW = Date.parse("2026-03-02T12:00:00.000Z");
const actor = { actorType: "user" as const, actorId: "0190c0de-0000-7000-8000-0000000000bb" };
const status = (action: "start" | "pause" | "stop", key: string | null = null): StatusCommand => ({
  type: "status",
  action,
  key,
  by: actor,
  requestId: "req-1",
});
const campaignStep = <C extends CampaignCommand>(
  snapshot: CampaignSnapshot,
  command: C,
  now: number,
) => decide(snapshot, command, inputsWith(), now);
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
      by: actor,
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
    const decided = completion(snapshot, done, NOW);
    expect(decided?.write).toEqual(
      expect.objectContaining({
        type: "status",
        to: "completed",
        action: "complete",
        by: { actorType: "system", actorId: null },
        entry: undefined,
      }),
    );
    expect(adopted(snapshot, decided ? [decided.event] : []).value).toBe("completed");
  });

  test("nothing is written while a lead is left, before the dialing state is loaded, or when not running", () => {
    const left = { ...done, leads: { ...done.leads, Retry: 1 } };
    for (const context of [
      contextWith("running", { dialing: left }),
      contextWith("running"),
      contextWith("paused", { dialing: done }),
    ]) {
      expect(completion(restoredSnapshot(context), context.dialing, NOW)).toBeUndefined();
    }
  });
});

describe("a settings change, decided", () => {
  const settings = (version: number, changes: SettingsChanges): SettingsCommand => ({
    type: "settings",
    version,
    changes,
    by: actor,
    requestId: "req-2",
  });

  test("on another version it is 409; a calling window that ends before it starts is 400", () => {
    expect(refusalOf(() => campaignStep(snapshotOf("draft"), settings(2, {}), NOW))).toEqual({
      status: 409,
      code: "version_conflict",
    });
    expect(
      refusalOf(() =>
        campaignStep(
          snapshotOf("draft"),
          settings(1, { calling_window: { start: "23:00", end: "21:00" } }),
          NOW,
        ),
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

describe("a campaign's stats, decided", () => {
  test("leads, calls and agents as the dialing state and the board hold them; nothing written", () => {
    const dialing = { ...dialingWith(), leads: { ...noLeads(), Fresh: 4, Completed: 2 } };
    const snapshot = restoredSnapshot(contextWith("running", { dialing }));
    const { campaign } = snapshot.context;
    const agents = agentsAtHand([
      {
        userId: "a",
        tenantId: campaign.tenantId,
        state: "ready",
        campaignId: campaign.id,
        callId: null,
        since: 0,
      },
      {
        userId: "b",
        tenantId: campaign.tenantId,
        state: "paused",
        campaignId: campaign.id,
        callId: null,
        since: 0,
      },
    ]);
    const decision = decide(snapshot, { type: "stats" }, inputsWith({ agents }), NOW);
    expect(decision.writes).toEqual([]);
    expect(decision.reply({})).toMatchObject({
      leads_total: 6,
      leads_by_state: { Fresh: 4, Completed: 2 },
      calls_in_flight: 0,
      agents_by_state: { ready: 1, paused: 1, on_call: 0 },
      dial_ratio: 1,
      dial_ratio_reason: "progressive: configured dial_ratio",
    });
    // Before its dialing state is loaded there is nothing to count.
    expect(
      decide(snapshotOf("running"), { type: "stats" }, inputsWith(), NOW).reply({}),
    ).toBeNull();
  });
});
