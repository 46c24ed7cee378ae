import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import postgres from "postgres";
import type { RawClient } from "../../db/client.ts";
import { fenceCondition } from "../../db/fence.ts";
import { insertIdempotencyKey } from "../../db/queries/campaigns.ts";
import { runStatement } from "../../db/statement.ts";
import { isLeaseLost, PostgresLeases } from "../../src/cluster/leases.ts";
import { silentLogger } from "../../src/logger.ts";
import { createWorkspace } from "../helpers/app.ts";

/**
 * Campaign leases of two processes on one PostgreSQL database, with a lease shortened to
 * 400 ms: who owns a campaign, takeovers after a lapse, and writes refused by their fence.
 */
const enabled = Boolean(process.env.DATABASE_URL);
const TIMING = { ttlMs: 400, renewMs: 100 };

type Workspace = Awaited<ReturnType<typeof createWorkspace>>;
let w: Workspace;
let raw: RawClient;
const made: PostgresLeases[] = [];

const leasesAt = (url: string) => {
  const leases = new PostgresLeases(raw, silentLogger, crypto.randomUUID(), url, TIMING);
  made.push(leases);
  return leases;
};

async function campaign(status = "draft", tenantId = w.acme.id) {
  const created = await w.request("POST", `/api/v1/campaigns?tenant_id=${tenantId}`, {
    token: await w.login("root@platform.test"),
    body: { name: `c-${crypto.randomUUID()}` },
  });
  const id = created.body.data.campaign.id as string;
  if (status !== "draft")
    await runStatement(raw, "update campaigns set status = $2 where id = $1::uuid", [id, status]);
  return id;
}

/** A status write of the campaign as its owner would make it, fenced by `token`. */
const fencedWrite = (id: string, token: number | null) =>
  runStatement(
    raw,
    `update campaigns set updated_at = now() where id = $1::uuid and ${fenceCondition("$1", "$2")}`,
    [id, token],
  );

beforeEach(async () => {
  if (!enabled) return;
  w = await createWorkspace();
  raw = w.deps.rawDb;
});

afterEach(() => {
  for (const leases of made.splice(0)) leases.stop();
});

describe.skipIf(!enabled)("campaign leases on PostgreSQL", () => {
  test("the first process to ask owns a campaign; the other is told where it is", async () => {
    const id = await campaign();
    const a = leasesAt("http://a.test");
    const b = leasesAt("http://b.test");
    const owned = await a.resolve(w.acme.id, id);
    expect(owned.kind).toBe("local");
    expect(a.holds(id)).toBe(true);
    expect(await b.resolve(w.acme.id, id)).toEqual({ kind: "remote", url: "http://a.test" });
    expect(b.holds(id)).toBe(false);
    // Another tenant's campaign, or none at all, gets no lease.
    const other = await w.tenant("globex.test");
    expect((await b.resolve(other.id, id)).kind).toBe("missing");
    expect((await b.resolve(w.acme.id, crypto.randomUUID())).kind).toBe("missing");
  });

  test("a lapsed lease is taken with a larger token, and the old owner's writes are refused", async () => {
    const id = await campaign();
    const a = leasesAt("http://a.test");
    const b = leasesAt("http://b.test");
    const first = await a.resolve(w.acme.id, id);
    if (first.kind !== "local" || first.token === null) throw new Error("expected a lease");
    expect(await fencedWrite(id, first.token)).toEqual([]);
    // A stalls: no renewal. Past the lease, B takes it.
    await Bun.sleep(TIMING.ttlMs + 50);
    expect(a.holds(id)).toBe(false);
    const second = await b.resolve(w.acme.id, id);
    if (second.kind !== "local" || second.token === null) throw new Error("expected a takeover");
    expect(second.token).toBeGreaterThan(first.token);
    const refused = await fencedWrite(id, first.token).catch((error) => error);
    expect(refused.code).toBe("DL001");
    expect(await fencedWrite(id, second.token)).toEqual([]);
    // The batch form leaves the stale row out instead of failing.
    const [held] = await runStatement<{ stale: boolean; current: boolean }>(
      raw,
      "select dialer_lease_held($1::uuid, $2::bigint) as stale, dialer_lease_held($1::uuid, $3::bigint) as current",
      [id, first.token, second.token],
    );
    expect(held).toEqual({ stale: false, current: true });
    // Nor does the old owner record a refusal's reply that the new owner would replay.
    const reply = {
      campaignId: id,
      key: "late-409",
      bodyHash: "h",
      responseStatus: 409,
      responseBody: "{}",
      expiresAt: new Date(Date.now() + 60_000),
    };
    const late = await insertIdempotencyKey(w.deps.db, reply, {
      campaignId: id,
      token: first.token,
    }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(isLeaseLost(late)).toBe(true);
    await insertIdempotencyKey(w.deps.db, reply, { campaignId: id, token: second.token });
    const [recorded] = await runStatement<{ count: number }>(
      raw,
      "select count(*)::int as count from campaign_idempotency_keys where campaign_id = $1::uuid",
      [id],
    );
    expect(recorded?.count).toBe(1);
  });

  test("an owner renewing keeps its lease; one that finds it taken drops it and says so", async () => {
    const id = await campaign();
    const a = leasesAt("http://a.test");
    const b = leasesAt("http://b.test");
    const changes: string[] = [];
    a.onChange((change, campaignId) => changes.push(`${change}:${campaignId}`));
    await a.resolve(w.acme.id, id);
    a.start();
    await Bun.sleep(TIMING.ttlMs * 3);
    expect(a.holds(id)).toBe(true);
    expect((await b.resolve(w.acme.id, id)).kind).toBe("remote");
    // A pauses (its timer stops) long enough for B to take over, then renews again.
    a.stop();
    await Bun.sleep(TIMING.ttlMs + 50);
    // B remembers A as the owner until a forward to A fails, as one to a stalled A would.
    expect(await b.resolve(w.acme.id, id)).toEqual({ kind: "remote", url: "http://a.test" });
    b.forgetOwner(id);
    expect((await b.resolve(w.acme.id, id)).kind).toBe("local");
    a.start();
    await Bun.sleep(TIMING.renewMs * 3);
    expect(a.held()).toEqual([]);
    expect(changes).toEqual([`taken:${id}`, `lost:${id}`]);
  });

  test("a lease taken while a renewal is under way is kept: the renewal judges only the leases it was sent for", async () => {
    const [first, second] = [await campaign(), await campaign()];
    const a = leasesAt("http://a.test");
    const changes: string[] = [];
    a.onChange((change, campaignId) => changes.push(`${change}:${campaignId}`));
    await a.resolve(w.acme.id, first);
    // The first lease's row is held on a connection of another pool: the renewal waits on it.
    const elsewhere = postgres(process.env.DATABASE_URL as string, { max: 1, onnotice: () => {} });
    const locked = Promise.withResolvers<void>();
    const release = Promise.withResolvers<void>();
    const holder = elsewhere.begin(async (tx) => {
      await tx.unsafe("select 1 from campaign_leases where campaign_id = $1::uuid for update", [
        first,
      ]);
      locked.resolve();
      await release.promise;
    });
    await locked.promise;
    a.start();
    await Bun.sleep(TIMING.renewMs * 1.5);
    expect((await a.resolve(w.acme.id, second)).kind).toBe("local");
    release.resolve();
    await holder;
    await elsewhere.end();
    await Bun.sleep(TIMING.renewMs * 2);
    expect(a.holds(first)).toBe(true);
    expect(a.holds(second)).toBe(true);
    expect(changes).toEqual([`taken:${first}`, `taken:${second}`]);
  });

  test("a released lease is taken at once; orphaned running and paused campaigns are taken by a sweep", async () => {
    const running = await campaign("running");
    const paused = await campaign("paused");
    const draft = await campaign();
    const a = leasesAt("http://a.test");
    const b = leasesAt("http://b.test");
    expect((await a.takeOrphans()).sort()).toEqual([running, paused].sort());
    expect(await b.takeOrphans()).toEqual([]);
    await a.resolve(w.acme.id, draft);
    await a.releaseAll();
    expect(a.held()).toEqual([]);
    expect((await b.resolve(w.acme.id, draft)).kind).toBe("local");
    expect((await b.takeOrphans()).sort()).toEqual([running, paused].sort());
  });

  test("a process hands some of its running campaigns over; the taker gets exactly those", async () => {
    const running = [];
    for (let index = 0; index < 4; index++) running.push(await campaign("running"));
    const draft = await campaign();
    const a = leasesAt("http://a.test");
    const b = leasesAt("http://b.test");
    expect((await a.takeOrphans()).sort()).toEqual([...running].sort());
    await a.resolve(w.acme.id, draft);
    const changes: string[] = [];
    a.onChange((change, id) => changes.push(`${change}:${id}`));

    // Draft campaigns are not counted: they need nobody to run them.
    const before = await b.spread();
    expect(before.map((share) => [share.owner, share.held])).toEqual([[a.instanceId, 4]]);
    expect(before[0]?.url).toBe("http://a.test");

    expect(await a.handOver(2, a.instanceId)).toEqual([]);
    const given = await a.handOver(2, b.instanceId);
    expect(given).toHaveLength(2);
    expect(changes.sort()).toEqual(given.map((id) => `released:${id}`).sort());
    const kept = running.filter((id) => !given.includes(id));
    expect(a.held().sort()).toEqual([...kept, draft].sort());
    // Only what was handed over is taken: the others' leases are live.
    expect((await b.takeOrphans(undefined, running)).sort()).toEqual([...given].sort());
    expect((await b.spread()).map((share) => share.held)).toEqual([2, 2]);
  });

  test("renewals after a hand-over leave the handed-over leases ended, for the taker to take", async () => {
    const running = [];
    for (let index = 0; index < 3; index++) running.push(await campaign("running"));
    const a = leasesAt("http://a.test");
    const b = leasesAt("http://b.test");
    expect(await a.takeOrphans()).toHaveLength(3);
    a.start();
    const given = await a.handOver(2, b.instanceId);
    await Bun.sleep(TIMING.renewMs * 3);
    expect((await b.takeOrphans(undefined, running)).sort()).toEqual([...given].sort());
    expect(a.held()).toEqual(running.filter((id) => !given.includes(id)));
  });

  test("a lease held at an address where nothing listens is taken without waiting for it to lapse", async () => {
    const running = await campaign("running");
    // A process that was killed: its address refuses connections, its lease has seconds left.
    const dead = new PostgresLeases(raw, silentLogger, crypto.randomUUID(), "http://127.0.0.1:1", {
      ttlMs: 60_000,
      renewMs: 1_000,
    });
    expect(await dead.takeOrphans()).toEqual([running]);
    const b = leasesAt("http://b.test");
    expect(await b.takeOrphans()).toEqual([running]);
    const draft = await campaign();
    await dead.resolve(w.acme.id, draft);
    expect(await b.resolve(w.acme.id, draft)).toEqual({
      kind: "remote",
      url: "http://127.0.0.1:1",
    });
    expect((await b.resolve(w.acme.id, draft, "http://127.0.0.1:1")).kind).toBe("local");
  });
});
