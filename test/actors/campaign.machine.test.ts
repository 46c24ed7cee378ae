import { describe, expect, test } from "bun:test";
import { SimulatedClock, transition } from "xstate";
import {
  ACTION_EVENTS,
  type CampaignStatus,
  campaignActorFrom,
  campaignMachine,
  restoredSnapshot,
  type StatusAction,
  statusAfter,
} from "../../actors/campaign.machine.ts";
import {
  bodyHashOf,
  IDEMPOTENCY_WINDOW_MS,
  type IdempotencyEntry,
  IdempotencyWindow,
} from "../../actors/idempotency.ts";
import { contextWith } from "../helpers/campaigns.ts";

const STATUSES: CampaignStatus[] = ["draft", "running", "paused", "stopped", "completed"];
const ACTIONS: StatusAction[] = ["start", "pause", "stop"];

/** The contract's table; every pair not listed is an invalid transition. */
const ALLOWED: Record<string, CampaignStatus> = {
  "draft:start": "running",
  "paused:start": "running",
  "stopped:start": "running",
  "completed:start": "running",
  "running:pause": "paused",
  "running:stop": "stopped",
  "paused:stop": "stopped",
};

const committed = { version: 2, updatedAt: "2026-03-02T12:01:00.000Z" };

describe("campaign status table", () => {
  for (const from of STATUSES) {
    for (const action of ACTIONS) {
      const expected = ALLOWED[`${from}:${action}`];
      test(`${from} + ${action} → ${expected ?? "refused"}`, () => {
        const snapshot = restoredSnapshot(contextWith(from));
        const event = { type: ACTION_EVENTS[action], ...committed };
        expect(snapshot.can(event)).toBe(expected !== undefined);
        // What the service reads before it commits agrees with the step the actor takes.
        expect(statusAfter(snapshot, event)).toBe(expected);
        const [next] = transition(campaignMachine, snapshot, event);
        expect(next.value).toBe(expected ?? from);
        expect(next.context.campaign.status).toBe(expected ?? from);
        if (expected) expect(next.context.campaign.version).toBe(2);
      });
    }
  }

  test("completion happens only from running", () => {
    for (const from of STATUSES) {
      const can = restoredSnapshot(contextWith(from)).can({
        type: "campaign.complete",
        ...committed,
      });
      expect(can).toBe(from === "running");
    }
  });

  test("a status change is emitted with from and to", () => {
    const actor = campaignActorFrom(restoredSnapshot(contextWith("draft")));
    const seen: unknown[] = [];
    actor.on("campaign.statusChanged", (event) => seen.push(event));
    actor.start();
    actor.send({ type: "campaign.start", ...committed });
    expect(seen).toEqual([
      {
        type: "campaign.statusChanged",
        campaignId: expect.any(String),
        tenantId: expect.any(String),
        from: "draft",
        to: "running",
        relayed: false,
      },
    ]);
  });

  test("a settings update keeps the status the machine owns", () => {
    const actor = campaignActorFrom(restoredSnapshot(contextWith("running"))).start();
    const campaign = {
      ...actor.getSnapshot().context.campaign,
      name: "Renamed",
      status: "draft" as const,
      version: 5,
    };
    actor.send({ type: "campaign.updated", campaign });
    expect(actor.getSnapshot().context.campaign).toMatchObject({
      name: "Renamed",
      status: "running",
      version: 5,
    });
  });
});

describe("idempotency window", () => {
  const clock = new SimulatedClock();
  const body = { action: "start" };
  const entryAt = (now: number) => ({
    key: "k-1",
    bodyHash: bodyHashOf(body),
    status: 200,
    text: JSON.stringify({ status: "success", data: {} }),
    expiresAt: now + IDEMPOTENCY_WINDOW_MS,
  });

  test("a key replays within 60 s of its first request and is forgotten after", () => {
    clock.set(1_000_000);
    const actor = campaignActorFrom(restoredSnapshot(contextWith("draft")), { clock }).start();
    actor.send({ type: "idempotency.recorded", entry: entryAt(clock.now()) });
    clock.increment(IDEMPOTENCY_WINDOW_MS - 1);
    const lookup = () =>
      actor.getSnapshot().context.idempotency.lookup("k-1", bodyHashOf(body), clock.now()).kind;
    expect(lookup()).toBe("replay");
    clock.increment(1);
    expect(lookup()).toBe("miss");
    // Recording the next key forgets the expired one.
    actor.send({ type: "idempotency.recorded", entry: { ...entryAt(clock.now()), key: "k-2" } });
    expect(actor.getSnapshot().context.idempotency.size).toBe(1);
  });

  test("the same key with another body is a mismatch; key order and spacing do not matter", () => {
    clock.set(2_000_000);
    const window = IdempotencyWindow.from([entryAt(clock.now())]);
    expect(window.lookup("k-1", bodyHashOf({ action: "stop" }), clock.now()).kind).toBe("mismatch");
    expect(bodyHashOf({ b: 1, a: [2, { d: 3, c: 4 }] })).toBe(
      bodyHashOf({ a: [2, { c: 4, d: 3 }], b: 1 }),
    );
  });

  test("a status change remembers its reply in the same step", () => {
    clock.set(2_500_000);
    const actor = campaignActorFrom(restoredSnapshot(contextWith("draft")), { clock }).start();
    const reply = entryAt(clock.now());
    actor.send({ type: "campaign.start", ...committed, reply });
    const { context } = actor.getSnapshot();
    expect(context.campaign.status).toBe("running");
    expect(context.idempotency.lookup("k-1", reply.bodyHash, clock.now())).toEqual({
      kind: "replay",
      entry: reply,
    });
  });

  test("an actor restored from a persisted snapshot keeps an open window and its status", () => {
    clock.set(3_000_000);
    const first = campaignActorFrom(restoredSnapshot(contextWith("draft")), { clock }).start();
    first.send({ type: "campaign.start", ...committed });
    first.send({ type: "idempotency.recorded", entry: entryAt(clock.now()) });
    const persisted = JSON.parse(JSON.stringify(first.getPersistedSnapshot()));
    first.stop();

    clock.increment(30_000);
    const restored = campaignActorFrom(persisted, { clock }).start();
    expect(restored.getSnapshot().value).toBe("running");
    const lookup = restored
      .getSnapshot()
      .context.idempotency.lookup("k-1", bodyHashOf(body), clock.now());
    expect(lookup.kind).toBe("replay");
    expect(restored.getSnapshot().can({ type: "campaign.pause", ...committed })).toBe(true);
  });
});

describe("window entries", () => {
  test("come back exactly as recorded, whatever their hash and text hold", () => {
    const entries = [
      { key: "a:1", bodyHash: "x:y", status: 409, text: '{"a":":1:2:"}', expiresAt: 1_000 },
      { key: "b", bodyHash: "", status: 200, text: "", expiresAt: 1_764_000_000_000 },
      { key: "c", bodyHash: "h".repeat(64), status: 422, text: "ünïcode ✓", expiresAt: 2e12 },
    ];
    const [first, , third] = entries as [IdempotencyEntry, IdempotencyEntry, IdempotencyEntry];
    const window = IdempotencyWindow.from(entries);
    expect(Object.values(window.toJSON())).toEqual(entries);
    expect(window.lookup("a:1", "x:y", 999)).toEqual({ kind: "replay", entry: first });
    expect(window.lookup("a:1", "x", 999).kind).toBe("mismatch");
    expect(window.lookup("a:1", "x:y", 1_000).kind).toBe("miss");
    expect(window.lookup("c", "h".repeat(64), 0)).toEqual({ kind: "replay", entry: third });
  });
  test("keys whose digests collide are kept apart, pruned and recorded again", () => {
    const entry = (key: string, expiresAt: number) => ({
      key,
      bodyHash: "h",
      status: 200,
      text: `{"key":"${key}"}`,
      expiresAt,
    });
    const window = new IdempotencyWindow(() => 7);
    for (const [key, expiresAt] of [
      ["a", 60_100],
      ["b", 60_200],
      ["c", 60_300],
    ] as const)
      window.record(entry(key, expiresAt));
    expect(window.size).toBe(3);
    expect(window.lookup("a", "h", 0)).toEqual({ kind: "replay", entry: entry("a", 60_100) });
    expect(window.lookup("b", "h", 0)).toEqual({ kind: "replay", entry: entry("b", 60_200) });
    expect(window.lookup("c", "x", 0)).toEqual({ kind: "mismatch", entry: entry("c", 60_300) });
    expect(window.lookup("d", "h", 0).kind).toBe("miss");
    // b again once a and b have expired: both go, and b is filed where a was.
    window.record(entry("b", 120_250));
    expect(window.size).toBe(2);
    expect(window.lookup("a", "h", 60_250).kind).toBe("miss");
    expect(window.lookup("b", "h", 60_250)).toEqual({ kind: "replay", entry: entry("b", 120_250) });
    expect(window.lookup("c", "h", 60_250)).toEqual({ kind: "replay", entry: entry("c", 60_300) });
    expect(Object.keys(window.toJSON())).toEqual(["c", "b"]);
    // c, filed by its key, is older than b, filed under the digest.
    expect(window.oldestExpiresAt).toBe(60_300);
    expect(IdempotencyWindow.from(window).toJSON()).toEqual(window.toJSON());
  });
});

describe("window pruning", () => {
  test("only the expired old end of the window goes", () => {
    const entry = (key: string, expiresAt: number) => ({
      key,
      bodyHash: "h",
      status: 200,
      text: "{}",
      expiresAt,
    });
    // Given out of order, as rows may come back from the database.
    const window = IdempotencyWindow.from([entry("c", 300), entry("a", 100), entry("b", 200)]);
    window.prune(99);
    expect(Object.keys(window.toJSON())).toEqual(["a", "b", "c"]);
    window.prune(200);
    expect(Object.keys(window.toJSON())).toEqual(["c"]);
    window.record(entry("a", 400));
    window.prune(300);
    expect(Object.keys(window.toJSON())).toEqual(["a"]);
    const empty = new IdempotencyWindow();
    empty.prune(1);
    expect(empty.size).toBe(0);
    expect(empty.oldestExpiresAt).toBeUndefined();
  });
});
