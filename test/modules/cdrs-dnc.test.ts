import { beforeEach, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { insertCampaign } from "../../db/queries/campaigns.ts";
import { rowsOf } from "../../db/rows.ts";
import { cdrs } from "../../db/schema/index.ts";
import { createWorkspace } from "../helpers/app.ts";
import { importFile } from "../helpers/leads.ts";

let w: Awaited<ReturnType<typeof createWorkspace>>;
let adminToken: string;
beforeEach(async () => {
  w = await createWorkspace();
  adminToken = await w.login("admin@acme.test");
});

describe("do-not-call list", () => {
  test("a CSV upload adds its numbers and reports the rest by row", async () => {
    await w.request("POST", "/api/v1/dnc", { token: adminToken, body: { phone: "+14155550001" } });
    const upload = (body: string, type = "text/csv") =>
      w.app.handle(
        new Request("http://localhost/api/v1/dnc/import", {
          method: "POST",
          headers: { authorization: `Bearer ${adminToken}`, "content-type": type },
          body,
        }),
      );
    const csv = [
      "name,Phone",
      "Ada,+1 415 555 0001",
      "Grace,(415) 555-0002",
      "Linus,+14155550003",
      "Ken,not a number",
      "Dup,+14155550003",
      "Nobody,",
    ].join("\n");
    const response = await upload(csv);
    expect(response.status).toBe(200);
    const { report } = ((await response.json()) as { data: { report: Record<string, unknown> } })
      .data;
    expect(report).toEqual({
      rows: 6,
      added: 1,
      already_listed: 1,
      rejected: 4,
      rejections: [
        { row: 3, value: "(415) 555-0002", reason: "invalid_phone" },
        { row: 5, value: "not a number", reason: "invalid_phone" },
        { row: 6, value: "+14155550003", reason: "duplicate" },
        { row: 7, value: "", reason: "missing_phone" },
      ],
    });
    const listed = await w.request("GET", "/api/v1/dnc?phone=%2B1415555000", { token: adminToken });
    expect(listed.body.data.items).toContainEqual(
      expect.objectContaining({
        phone: "+14155550003",
        source: "import",
        added_by: "admin@acme.test",
      }),
    );
    // A list without a header is read from its first column.
    const plain = await upload("+14155550004\n+14155550005\n");
    expect(
      ((await plain.json()) as { data: { report: { added: number } } }).data.report.added,
    ).toBe(2);
    expect((await upload("{}", "application/json")).status).toBe(415);
    // A quote never closed takes the rest of the file with it: its row says so.
    const unclosed = await upload(
      'name,phone\n"x,y",+14155550007\n"open,+14155550008\n+14155550009,z\n',
    );
    expect(((await unclosed.json()) as { data: { report: unknown } }).data.report).toEqual({
      rows: 2,
      added: 1,
      already_listed: 0,
      rejected: 1,
      rejections: [
        { row: 3, value: expect.stringContaining("open,+14155550008"), reason: "unclosed_quote" },
      ],
    });
    // Blank lines skipped before it do not move the row it is said on.
    const afterBlank = await upload('phone\n\n+14155550010\n"+14155550011\n+14155550012\n');
    expect(
      ((await afterBlank.json()) as { data: { report: { rejections: unknown } } }).data.report
        .rejections,
    ).toEqual([
      { row: 3, value: expect.stringContaining("+14155550011"), reason: "unclosed_quote" },
    ]);
    // 100,000 numbers at most, with or without a header.
    const rowsOf = (count: number) => `+14155550013\n${"x\n".repeat(count - 1)}`;
    expect((await upload(rowsOf(100_001))).status).toBe(413);
    expect((await upload(`phone\n${rowsOf(100_000)}`)).status).toBe(200);
    // Nothing to add is said, not reported as nothing done.
    for (const empty of ["", "phone\n"]) {
      const none = await upload(empty);
      expect(none.status).toBe(422);
      expect(
        ((await none.json()) as { field_errors: { field: string }[] }).field_errors[0]?.field,
      ).toBe("file");
    }
    await w.user(w.acme.id, "lead@acme.test", "supervisor");
    const supervisor = await w.login("lead@acme.test");
    const refused = await w.app.handle(
      new Request("http://localhost/api/v1/dnc/import", {
        method: "POST",
        headers: { authorization: `Bearer ${supervisor}`, "content-type": "text/csv" },
        body: "+14155550006",
      }),
    );
    expect(refused.status).toBe(403);
  });

  test("numbers are added as typed, stored E.164, listed, found and removed", async () => {
    const added = await w.request("POST", "/api/v1/dnc", {
      token: adminToken,
      body: { phone: "+1 (415) 555-2671" },
    });
    expect(added.status).toBe(201);
    expect(added.body.data).toEqual({
      dnc_entry: {
        phone: "+14155552671",
        source: "user",
        added_by: "admin@acme.test",
        created_at: expect.stringMatching(/Z$/),
      },
      already_listed: false,
    });
    // A second add says the number was listed already.
    const again = await w.request("POST", "/api/v1/dnc", {
      token: adminToken,
      body: { phone: "+14155552671" },
    });
    expect(again.status).toBe(201);
    expect(again.body.data.already_listed).toBe(true);
    await w.request("POST", "/api/v1/dnc", { token: adminToken, body: { phone: "+442079460123" } });
    const list = await w.request("GET", "/api/v1/dnc?phone=%2B1%20415%20555%202671", {
      token: adminToken,
    });
    expect(list.body.total).toBe(1);
    // A prefix finds every number starting with it, typed as people type it.
    for (const [prefix, found] of [
      ["%2B1415", ["+14155552671"]],
      ["1%20415", ["+14155552671"]],
      ["44", ["+442079460123"]],
      ["%2B", ["+442079460123", "+14155552671"]],
      ["%2B19", []],
    ] as const) {
      const page = await w.request("GET", `/api/v1/dnc?phone=${prefix}`, { token: adminToken });
      expect([prefix, page.body.data.items.map((e: { phone: string }) => e.phone)]).toEqual([
        prefix,
        found,
      ]);
    }
    // A key's addition names the key.
    const key = (
      await w.request("POST", "/api/v1/api-keys", {
        token: adminToken,
        body: { name: "CRM sync", scopes: { leads: "write" } },
      })
    ).body.data.key as string;
    const byKey = await w.request("POST", "/api/v1/dnc", {
      token: key,
      body: { phone: "+14155552672" },
    });
    expect(byKey.body.data.dnc_entry).toMatchObject({
      source: "api",
      added_by: "API key CRM sync",
    });
    const listedByKey = await w.request("GET", "/api/v1/dnc?phone=%2B14155552672", {
      token: adminToken,
    });
    expect(listedByKey.body.data.items[0].added_by).toBe("API key CRM sync");
    const word = await w.request("GET", "/api/v1/dnc?phone=abc", { token: adminToken });
    expect(word.status).toBe(400);
    expect(word.body.field_errors[0].field).toBe("phone");
    const bad = await w.request("POST", "/api/v1/dnc", {
      token: adminToken,
      body: { phone: "12" },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.field_errors[0].field).toBe("phone");
    // A path decoded once: `%25` is a `%`, no number, and `%252B…` is not `+…`.
    for (const path of ["%25", "%252B14155552671", "12"]) {
      const refused = await w.request("DELETE", `/api/v1/dnc/${path}`, { token: adminToken });
      expect([refused.status, refused.body.message]).toEqual([400, "invalid path parameters"]);
    }
    const removed = await w.request("DELETE", "/api/v1/dnc/%2B14155552671", { token: adminToken });
    expect(removed.status).toBe(200);
    expect(removed.body.data.dnc_entry).toMatchObject({
      phone: "+14155552671",
      added_by: "admin@acme.test",
    });
    expect(
      (await w.request("DELETE", "/api/v1/dnc/%2B14155552671", { token: adminToken })).status,
    ).toBe(404);
  });

  test("additions and removals are audited with who, which number and when", async () => {
    const key = await w.request("POST", "/api/v1/api-keys", {
      token: adminToken,
      body: { name: "crm", scopes: { leads: "write" } },
    });
    const addedAt = new Date(w.clock.now()).toISOString();
    const added = await w.request("POST", "/api/v1/dnc", {
      token: key.body.data.key,
      body: { phone: "+1 415 555 2671" },
      headers: { "x-request-id": "dnc-add-0001" },
    });
    expect(added.status).toBe(201);
    // Adding a number already listed writes nothing, so it records nothing.
    await w.request("POST", "/api/v1/dnc", { token: adminToken, body: { phone: "+14155552671" } });
    w.clock.advance(5_000);
    const removedAt = new Date(w.clock.now()).toISOString();
    const removed = await w.request("DELETE", "/api/v1/dnc/%2B14155552671", { token: adminToken });
    expect(removed.status).toBe(200);
    const trail = await w.request("GET", "/api/v1/audit-events?limit=2", { token: adminToken });
    expect(trail.body.data.items).toMatchObject([
      {
        action: "dnc.removed",
        actor_type: "user",
        actor_id: w.admin.id,
        target_type: "dnc_entry",
        target_id: "+14155552671",
        details: { phone: "+14155552671" },
        created_at: removedAt,
      },
      {
        action: "dnc.added",
        actor_type: "api_key",
        actor_id: key.body.data.api_key.id,
        target_id: "+14155552671",
        request_id: "dnc-add-0001",
        details: { phone: "+14155552671" },
        created_at: addedAt,
      },
    ]);
  });

  test("imports refuse numbers on the list", async () => {
    await w.request("POST", "/api/v1/dnc", { token: adminToken, body: { phone: "+14155552672" } });
    const campaign = (
      await w.request("POST", "/api/v1/campaigns", { token: adminToken, body: { name: "c" } })
    ).body.data.campaign;
    const list = await w.request("POST", `/api/v1/campaigns/${campaign.id}/lead-lists`, {
      token: adminToken,
      body: { name: "l", caller_id: "+14155550100" },
    });
    const response = await importFile(
      w,
      `/api/v1/campaigns/${campaign.id}/lead-lists/${list.body.data.lead_list.id}/import`,
      adminToken,
      "phone,timezone\n+14155552671,UTC\n+14155552672,UTC\n",
    );
    expect(response.body.data.import).toMatchObject({
      imported: 1,
      rejected: 1,
      errors: [{ row: 2, column: "phone", reason: "do_not_call" }],
    });
  });

  test("numbers listed while a file is imported end its leads, whichever commits first", async () => {
    const campaign = (
      await w.request("POST", "/api/v1/campaigns", { token: adminToken, body: { name: "c" } })
    ).body.data.campaign;
    const phones = Array.from({ length: 3_000 }, (_, i) => `+1415556${String(i).padStart(4, "0")}`);
    for (const round of [1, 2]) {
      const list = await w.request("POST", `/api/v1/campaigns/${campaign.id}/lead-lists`, {
        token: adminToken,
        body: { name: `l${round}`, caller_id: "+14155550100" },
      });
      const path = `/api/v1/campaigns/${campaign.id}/lead-lists/${list.body.data.lead_list.id}/import`;
      const file = `phone,timezone\n${phones.map((phone) => `${phone},UTC`).join("\n")}\n`;
      let importing = true;
      const imported = importFile(w, path, adminToken, file).finally(() => {
        importing = false;
      });
      // Numbers listed one after another for as long as the import runs: before its look at
      // the list, during the rest of it, and as it commits.
      const unlisted = phones.filter((_, i) => i % 7 === round);
      while (importing && unlisted.length > 0) {
        const phone = unlisted.shift() as string;
        const added = await w.request("POST", "/api/v1/dnc", {
          token: adminToken,
          body: { phone },
        });
        expect(added.status).toBe(201);
      }
      expect((await imported).status).toBe(200);
    }
    const leads = rowsOf<{ state: string; count: number }>(
      await w.deps.db.execute(sql`
        select l.state, count(*)::int as count from leads l
        join dnc_numbers d on d.tenant_id = l.tenant_id and d.phone = l.phone
        where l.campaign_id = ${campaign.id}::uuid group by l.state`),
    );
    expect(leads.filter((row) => row.state !== "DoNotCall")).toEqual([]);
  });
});

describe("CDRs", () => {
  test("are listed newest first with filters on started_at, campaign, lead and outcome", async () => {
    const now = new Date(w.clock.now());
    const campaign = await insertCampaign(w.deps.db, {
      id: Bun.randomUUIDv7(),
      tenantId: w.acme.id,
      name: "c",
      status: "running",
      dialMode: "progressive",
      callerId: null,
      callingWindowStart: "08:00",
      callingWindowEnd: "21:00",
      maxAttempts: 3,
      retryDelaySeconds: 3600,
      dialRatio: 1,
      maxAbandonRate: 0.03,
      version: 1,
      createdAt: now,
      updatedAt: now,
    });
    const record = (minute: number, outcome: "answered" | "busy") => ({
      id: Bun.randomUUIDv7(),
      tenantId: w.acme.id,
      callId: crypto.randomUUID(),
      campaignId: campaign.id,
      leadListId: crypto.randomUUID(),
      leadId: crypto.randomUUID(),
      phone: "+14155552671",
      callerId: "+14155550100",
      attempt: 1,
      outcome,
      startedAt: new Date(Date.parse("2026-03-02T12:00:00Z") + minute * 60_000),
      ringSeconds: 5,
      talkSeconds: outcome === "answered" ? 60 : 0,
      createdAt: new Date(Date.parse("2026-03-02T12:00:00Z") + minute * 60_000),
    });
    await w.deps.db
      .insert(cdrs)
      .values([record(0, "answered"), record(1, "busy"), record(2, "answered")]);
    const all = await w.request("GET", "/api/v1/cdrs", { token: adminToken });
    expect(all.status).toBe(200);
    expect(all.body.total).toBe(3);
    expect(all.body.data.items[0]).toMatchObject({
      outcome: "answered",
      started_at: "2026-03-02T12:02:00.000Z",
      edge_node_id: null,
    });
    const window = await w.request(
      "GET",
      "/api/v1/cdrs?from=2026-03-02T12:01:00Z&to=2026-03-02T12:02:00Z",
      { token: adminToken },
    );
    expect(window.body.data.items.map((c: { outcome: string }) => c.outcome)).toEqual(["busy"]);
    const answered = await w.request(
      "GET",
      `/api/v1/cdrs?outcome=answered&campaign_id=${campaign.id}`,
      { token: adminToken },
    );
    expect(answered.body.total).toBe(2);
    for (const query of [
      "from=yesterday",
      "to=2026-03-02",
      "from=2026-13-02T12:00:00Z",
      "outcome=lost",
      "campaign_id=x",
    ]) {
      const bad = await w.request("GET", `/api/v1/cdrs?${query}`, { token: adminToken });
      expect([query, bad.status]).toEqual([query, 400]);
    }
    // A range whose start is after its end is refused, not answered empty.
    const reversed = await w.request(
      "GET",
      "/api/v1/cdrs?from=2026-03-02T13:00:00Z&to=2026-03-02T12:00:00Z",
      { token: adminToken },
    );
    expect(reversed.status).toBe(422);
    expect(reversed.body.field_errors[0].field).toBe("from");
    await w.user(w.acme.id, "agent@acme.test", "agent");
    expect(
      (await w.request("GET", "/api/v1/cdrs", { token: await w.login("agent@acme.test") })).status,
    ).toBe(403);
  });
});

describe("CDR export", () => {
  test("Accept: text/csv streams every matching record with neutralised cells", async () => {
    const base = {
      tenantId: w.acme.id,
      campaignId: crypto.randomUUID(),
      leadListId: crypto.randomUUID(),
      leadId: crypto.randomUUID(),
      phone: "+14155552671",
      callerId: "+14155550100",
      attempt: 1,
      ringSeconds: 3,
      talkSeconds: 0,
    };
    const rows = Array.from({ length: 1205 }, (_, i) => ({
      ...base,
      id: Bun.randomUUIDv7(),
      callId: crypto.randomUUID(),
      outcome: i % 2 ? ("busy" as const) : ("no_answer" as const),
      hangupCause: i === 0 ? "=cmd|' /C calc'!A0" : "USER_BUSY",
      startedAt: new Date(Date.parse("2026-03-02T12:00:00Z") + i * 1000),
      createdAt: new Date(Date.parse("2026-03-02T12:00:00Z") + i * 1000),
    }));
    await w.deps.db.insert(cdrs).values(rows);
    const response = await w.app.handle(
      new Request("http://localhost/api/v1/cdrs?outcome=no_answer", {
        headers: { authorization: `Bearer ${adminToken}`, accept: "text/csv" },
      }),
    );
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("text/csv");
    const lines = (await response.text())
      .replace(/^\uFEFF/, "")
      .trim()
      .split("\r\n");
    expect(lines[0]?.startsWith("id,call_id,campaign_id")).toBe(true);
    expect(lines).toHaveLength(1 + 603);
    expect(lines.at(-1)).toContain(",'=cmd|' /C calc'!A0,");
    // Phones stay as they are: `+` and digits compute nothing.
    expect(lines.at(-1)).toContain(",+14155552671,+14155550100,");
  });
});
