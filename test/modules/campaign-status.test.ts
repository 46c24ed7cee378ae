import { beforeEach, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { commitStatusChanges } from "../../db/queries/campaigns.ts";
import { rowsOf } from "../../db/rows.ts";
import { deleteExpiredReplies } from "../../src/modules/campaigns/service.ts";
import { createWorkspace } from "../helpers/app.ts";

let w: Awaited<ReturnType<typeof createWorkspace>>;
let adminToken: string;
let campaignId: string;
beforeEach(async () => {
  w = await createWorkspace();
  adminToken = await w.login("admin@acme.test");
  campaignId = (
    await w.request("POST", "/api/v1/campaigns", { token: adminToken, body: { name: "Q2" } })
  ).body.data.campaign.id;
});

const act = (action: unknown, options: { key?: string; token?: string; id?: string } = {}) =>
  w.request("POST", `/api/v1/campaigns/${options.id ?? campaignId}/status`, {
    token: options.token ?? adminToken,
    body: { action },
    headers: options.key === undefined ? {} : { "idempotency-key": options.key },
  });
const history = async () =>
  (await w.request("GET", `/api/v1/campaigns/${campaignId}/history`, { token: adminToken })).body;

/** A draft campaign started by the system, as the status statement takes it. */
const startChange = (id: string, expectedVersion: number) => ({
  campaignId: id,
  leaseToken: null,
  tenantId: w.acme.id,
  expectedVersion,
  action: "start",
  from: "draft" as const,
  to: "running" as const,
  actorType: "system",
  actorId: null,
  requestId: null,
  at: new Date(w.clock.now()),
});

describe("the status operation", () => {
  test("follows the transition table and refuses the rest with 409 invalid_transition", async () => {
    const steps: [string, number, string][] = [
      ["pause", 409, "draft"],
      ["stop", 409, "draft"],
      ["start", 200, "running"],
      ["start", 409, "running"],
      ["pause", 200, "paused"],
      ["pause", 409, "paused"],
      ["start", 200, "running"],
      ["stop", 200, "stopped"],
      ["stop", 409, "stopped"],
      ["pause", 409, "stopped"],
      ["start", 200, "running"],
      ["pause", 200, "paused"],
      ["stop", 200, "stopped"],
    ];
    for (const [action, status, after] of steps) {
      const response = await act(action);
      expect([action, response.status]).toEqual([action, status]);
      if (status === 409) expect(response.body.code).toBe("invalid_transition");
      else expect(response.body.data.campaign.status).toBe(after);
      const current = await w.request("GET", `/api/v1/campaigns/${campaignId}`, {
        token: adminToken,
      });
      expect(current.body.data.campaign.status).toBe(after);
    }
  });

  test("a bad action or body is 400", async () => {
    expect((await act("launch")).status).toBe(400);
    const extra = await w.request("POST", `/api/v1/campaigns/${campaignId}/status`, {
      token: adminToken,
      body: { action: "start", force: true },
    });
    expect(extra.status).toBe(400);
    expect(extra.body.field_errors).toEqual([{ field: "force", message: "unknown field" }]);
  });

  test("supervisors change status; agents cannot", async () => {
    await w.user(w.acme.id, "agent@acme.test", "agent");
    await w.user(w.acme.id, "sup@acme.test", "supervisor");
    const agent = await act("start", { token: await w.login("agent@acme.test") });
    expect(agent.status).toBe(403);
    const supervisor = await act("start", { token: await w.login("sup@acme.test") });
    expect(supervisor.status).toBe(200);
  });

  test("history lists every change with who, from, to, when and the request id, newest first", async () => {
    await act("start");
    await w.request("POST", `/api/v1/campaigns/${campaignId}/status`, {
      token: adminToken,
      body: { action: "pause" },
      headers: { "x-request-id": "pause-request-01" },
    });
    await act("pause");
    const body = await history();
    expect(body.total).toBe(2);
    expect(body.data.items[0]).toEqual({
      id: expect.any(String),
      campaign_id: campaignId,
      action: "pause",
      from: "running",
      to: "paused",
      actor_type: "user",
      actor_id: w.admin.id,
      actor_email: "admin@acme.test",
      request_id: "pause-request-01",
      created_at: expect.stringMatching(/Z$/),
    });
    expect(body.data.items[1]).toMatchObject({ action: "start", from: "draft", to: "running" });
  });

  test("thirty concurrent starts without a key: exactly one wins, the rest are 409", async () => {
    const responses = await Promise.all(Array.from({ length: 30 }, () => act("start")));
    const statuses = responses.map((response) => response.status).sort();
    expect(statuses.filter((status) => status === 200)).toHaveLength(1);
    expect(statuses.filter((status) => status === 409)).toHaveLength(29);
    expect((await history()).total).toBe(1);
  });
});

describe("status changes committed together", () => {
  test("twenty campaigns changed at once: each applied with its history and its key", async () => {
    const ids = [campaignId];
    for (let index = 1; index < 20; index++) {
      const created = await w.request("POST", "/api/v1/campaigns", {
        token: adminToken,
        body: { name: `Batch ${index}` },
      });
      ids.push(created.body.data.campaign.id);
    }
    const started = await Promise.all(ids.map((id) => act("start", { id, key: `batch-${id}` })));
    expect(started.map((response) => response.body.data.campaign.status)).toEqual(
      ids.map(() => "running"),
    );
    expect(started.map((response) => response.body.data.campaign.id)).toEqual(ids);
    w.restart();
    for (const [index, id] of ids.entries()) {
      const replay = await act("start", { id, key: `batch-${id}` });
      expect(replay.headers.get("idempotent-replayed")).toBe("true");
      expect(replay.body).toEqual(started[index]?.body);
      const changes = await w.request("GET", `/api/v1/campaigns/${id}/history`, {
        token: adminToken,
      });
      expect(changes.body.data.items.map((item: { to: string }) => item.to)).toEqual(["running"]);
    }
  });

  test("a change decided on a stale version writes nothing; the others in its batch apply", async () => {
    const other = (
      await w.request("POST", "/api/v1/campaigns", { token: adminToken, body: { name: "Q3" } })
    ).body.data.campaign.id;
    const change = (id: string, expectedVersion: number) => ({
      ...startChange(id, expectedVersion),
      idempotency: {
        campaignId: id,
        key: `stale-${id}`,
        bodyHash: "h",
        responseStatus: 200,
        responseBody: "{}",
        expiresAt: new Date(w.clock.now() + 60_000),
      },
    });
    const updated = await commitStatusChanges(w.deps.rawDb, [
      change(campaignId, 7),
      change(other, 1),
    ]);
    expect([...updated]).toEqual([other]);
    // Alone, a change goes by a statement of its own, with the same rule.
    expect([...(await commitStatusChanges(w.deps.rawDb, [change(campaignId, 7)]))]).toEqual([]);
    const keys = rowsOf<{ key: string }>(
      await w.deps.db.execute(sql`select key from campaign_idempotency_keys`),
    );
    expect(keys.map((row) => row.key)).toEqual([`stale-${other}`]);
    expect((await history()).total).toBe(0);
  });
});

describe("a status change's push in its commit", () => {
  test("the changes made are notified with their commit, in as few notifications as fit; a stale one is not", async () => {
    const raw = w.deps.rawDb;
    const ids = [campaignId];
    for (const name of ["B", "C", "D"]) {
      ids.push(
        (await w.request("POST", "/api/v1/campaigns", { token: adminToken, body: { name } })).body
          .data.campaign.id,
      );
    }
    const heard: string[] = [];
    const channel = "status_push_test";
    const stop =
      raw.kind === "pglite"
        ? await raw.client.listen(channel, (payload) => heard.push(payload))
        : (await raw.client.listen(channel, (payload) => heard.push(payload))).unlisten;
    // Two entries fit in a notification.
    const notices = { channel, prefix: '{"m":[', suffix: "]}", maxBytes: 100 };
    const entry = (id: string) => JSON.stringify({ id });
    const change = (id: string, expectedVersion: number) => ({
      ...startChange(id, expectedVersion),
      push: { notices, entry: entry(id) },
    });
    const [stale, b, c, d] = ids as [string, string, string, string];
    const updated = await commitStatusChanges(raw, [
      change(stale, 7),
      change(b, 1),
      change(c, 1),
      change(d, 1),
    ]);
    expect([...updated].sort()).toEqual([b, c, d].sort());
    // Alone, by the statement of its own.
    expect([...(await commitStatusChanges(raw, [change(stale, 7)]))]).toEqual([]);
    expect([...(await commitStatusChanges(raw, [change(stale, 1)]))]).toEqual([stale]);
    const deadline = Date.now() + 2_000;
    while (heard.length < 3 && Date.now() < deadline) await Bun.sleep(10);
    await Bun.sleep(50);
    await stop();
    const notified = heard.map((payload) =>
      JSON.parse(payload).m.map((item: { id: string }) => item.id),
    );
    expect(notified.slice(0, 2).sort()).toEqual([[b], [c, d]]);
    expect(notified.slice(2)).toEqual([[stale]]);
  });
});

describe("the campaigns table", () => {
  // A status change writes status, version and updated_at; an index on any of them would make
  // every change add entries to every index instead of updating the row in place (HOT).
  test("no index covers a column a status change writes, and its pages keep room for updates", async () => {
    const indexed = rowsOf<{ column: string }>(
      await w.deps.db.execute(sql`
        select a.attname as column from pg_index i
        join pg_attribute a on a.attrelid = i.indrelid and a.attnum = any(i.indkey)
        where i.indrelid = 'campaigns'::regclass`),
    ).map((row) => row.column);
    expect(indexed.length).toBeGreaterThan(0);
    for (const written of ["status", "version", "updated_at"]) {
      expect(indexed).not.toContain(written);
    }
    const [options] = rowsOf<{ reloptions: string[] | null }>(
      await w.deps.db.execute(
        sql`select reloptions from pg_class where oid = 'campaigns'::regclass`,
      ),
    );
    expect(options?.reloptions).toEqual(["fillfactor=50"]);
  });
});

describe("Idempotency-Key", () => {
  test("the same key and body replays the first response, marked as replayed", async () => {
    const first = await act("start", { key: "start-1" });
    expect(first.status).toBe(200);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    const again = await act("start", { key: "start-1" });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect((await history()).total).toBe(1);
  });

  test("thirty concurrent requests with one key execute once and all get the same reply", async () => {
    const responses = await Promise.all(
      Array.from({ length: 30 }, () => act("start", { key: "burst" })),
    );
    expect(new Set(responses.map((response) => response.status))).toEqual(new Set([200]));
    const bodies = new Set(responses.map((response) => JSON.stringify(response.body)));
    expect(bodies.size).toBe(1);
    expect(
      responses.filter((response) => response.headers.get("idempotent-replayed") === "true"),
    ).toHaveLength(29);
    expect((await history()).total).toBe(1);
  });

  test("the same key with a different body is 422 idempotency_key_reused", async () => {
    await act("start", { key: "k" });
    const reused = await act("pause", { key: "k" });
    expect(reused.status).toBe(422);
    expect(reused.body.code).toBe("idempotency_key_reused");
    expect((await history()).total).toBe(1);
  });

  test("a 409 is kept and replayed like a success", async () => {
    const refused = await act("pause", { key: "p" });
    expect(refused.status).toBe(409);
    await act("start");
    const replay = await act("pause", { key: "p" });
    expect(replay.status).toBe(409);
    expect(replay.body).toEqual(refused.body);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
  });

  test("requests refused before executing are not kept", async () => {
    await w.user(w.acme.id, "agent@acme.test", "agent");
    expect((await act("start", { key: "x", token: await w.login("agent@acme.test") })).status).toBe(
      403,
    );
    expect((await act("launch", { key: "x" })).status).toBe(400);
    expect((await act("start", { key: "x", id: crypto.randomUUID() })).status).toBe(404);
    const executed = await act("start", { key: "x" });
    expect(executed.status).toBe(200);
    expect(executed.headers.get("idempotent-replayed")).toBeNull();
  });

  test("the window lasts 60 s from the first request; after it the key starts a new request", async () => {
    const first = await act("start", { key: "w" });
    w.clock.advance(59_999);
    expect((await act("start", { key: "w" })).headers.get("idempotent-replayed")).toBe("true");
    await act("pause");
    w.clock.advance(1);
    const fresh = await act("start", { key: "w" });
    expect(fresh.status).toBe(200);
    expect(fresh.headers.get("idempotent-replayed")).toBeNull();
    expect(fresh.body.data.campaign.version).toBeGreaterThan(first.body.data.campaign.version);
    expect((await history()).total).toBe(3);
  });

  test("keys are scoped to their campaign", async () => {
    const other = (
      await w.request("POST", "/api/v1/campaigns", { token: adminToken, body: { name: "Q3" } })
    ).body.data.campaign.id;
    await act("start", { key: "shared" });
    const there = await act("start", { key: "shared", id: other });
    expect(there.status).toBe(200);
    expect(there.body.data.campaign.id).toBe(other);
  });

  test("keys are the caller's own: another user's request under one executes; a new token of the same user replays", async () => {
    await w.user(w.acme.id, "sup@acme.test", "supervisor");
    const supervisor = await w.login("sup@acme.test");
    await act("start", { key: "start-q2" });
    await act("pause");
    const theirs = await act("start", { key: "start-q2", token: supervisor });
    expect(theirs.status).toBe(200);
    expect(theirs.headers.get("idempotent-replayed")).toBeNull();
    expect(theirs.body.data.campaign.status).toBe("running");
    const mine = await act("start", { key: "start-q2", token: await w.login("admin@acme.test") });
    expect(mine.headers.get("idempotent-replayed")).toBe("true");
    // Under a key of their own, another body is still theirs alone to reuse.
    expect((await act("pause", { key: "start-q2", token: supervisor })).status).toBe(422);
    expect((await history()).total).toBe(3);
  });

  test("keys must be 1 to 255 printable ASCII characters", async () => {
    for (const key of ["", "x".repeat(256), "tab\there", "é"]) {
      const response = await act("start", { key });
      expect([key, response.status]).toEqual([key, 400]);
    }
    expect((await act("start", { key: "~ ok key 255 !".padEnd(255, "z") })).status).toBe(200);
  });

  test("a restart keeps the window and the status", async () => {
    const first = await act("start", { key: "survives" });
    w.restart();
    const replay = await act("start", { key: "survives" });
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.body).toEqual(first.body);
    // The same bytes, key order included: the reply is kept as the text first sent.
    expect(JSON.stringify(replay.body)).toBe(JSON.stringify(first.body));
    expect((await act("pause", { key: "survives" })).status).toBe(422);
  });

  test("records past their window are deleted in batches; open ones stay and still replay", async () => {
    // More expired records than one batch deletes, then one key that is still open.
    const { db } = w.deps;
    await db.execute(sql`
      insert into campaign_idempotency_keys
        (campaign_id, key, body_hash, response_status, response_body, expires_at)
      select ${campaignId}::uuid, 'old-' || i, 'h', 200, '{}',
        ${new Date(w.clock.now()).toISOString()}::timestamptz
      from generate_series(1, 4500) as i`);
    await act("start", { key: "open" });
    expect(await deleteExpiredReplies(w.deps)).toBe(4500);
    expect(await deleteExpiredReplies(w.deps)).toBe(0);
    const left = rowsOf<{ key: string }>(
      await db.execute(sql`select key from campaign_idempotency_keys`),
    );
    // Stored under the caller's id and the key.
    expect(left.map((row) => row.key.split("\n")[1])).toEqual(["open"]);
    w.restart();
    expect((await act("start", { key: "open" })).headers.get("idempotent-replayed")).toBe("true");
  });

  test("the header is ignored on other endpoints", async () => {
    const headers = { "idempotency-key": "same" };
    const one = await w.request("POST", "/api/v1/campaigns", {
      token: adminToken,
      body: { name: "dup" },
      headers,
    });
    const two = await w.request("POST", "/api/v1/campaigns", {
      token: adminToken,
      body: { name: "dup" },
      headers,
    });
    expect([one.status, two.status]).toEqual([201, 201]);
    expect(one.body.data.campaign.id).not.toBe(two.body.data.campaign.id);
    expect(two.headers.get("idempotent-replayed")).toBeNull();
  });
});
