import { beforeEach, describe, expect, test } from "bun:test";
import fc from "fast-check";
import { createWorkspace } from "../helpers/app.ts";
import { importFile } from "../helpers/leads.ts";

type Workspace = Awaited<ReturnType<typeof createWorkspace>>;
let w: Workspace;
let token: string;
let base: string;

async function setUp(env: Record<string, string> = {}) {
  w = await createWorkspace({ env });
  token = await w.login("admin@acme.test");
  const campaign = (
    await w.request("POST", "/api/v1/campaigns", { token, body: { name: "Imports" } })
  ).body.data.campaign;
  const list = await w.request("POST", `/api/v1/campaigns/${campaign.id}/lead-lists`, {
    token,
    body: { name: "Main", caller_id: "+14155550100" },
  });
  base = `/api/v1/campaigns/${campaign.id}/lead-lists/${list.body.data.lead_list.id}`;
}
beforeEach(() => setUp());

const upload = (csv: string | Uint8Array | null, fields?: Record<string, string>) =>
  importFile(w, `${base}/import`, token, csv, fields);
const leads = async (query = "") =>
  (await w.request("GET", `${base}/leads${query}`, { token })).body;
const listCount = async () =>
  (await w.request("GET", base, { token })).body.data.lead_list.lead_count;

describe("import results", () => {
  test("imports valid rows as Fresh leads with the other columns in fields", async () => {
    const response = await upload(
      "phone,timezone,first_name,notes\n+14155552671,America/Chicago,Ann,VIP\n",
    );
    expect(response.status).toBe(200);
    expect(response.body.data.import).toEqual({
      id: expect.any(String),
      lead_list_id: base.split("/").at(-1),
      imported: 1,
      rejected: 0,
      errors: [],
      started_at: expect.stringMatching(/Z$/),
      finished_at: expect.stringMatching(/Z$/),
    });
    const [lead] = (await leads()).data.items;
    expect(lead).toMatchObject({
      phone: "+14155552671",
      timezone: "America/Chicago",
      zone_source: "column",
      state: "Fresh",
      attempts: 0,
      fields: { first_name: "Ann", notes: "VIP" },
      next_attempt_at: null,
      last_outcome: null,
    });
    expect(await listCount()).toBe(1);
    const campaign = await w.request("GET", base.split("/lead-lists")[0] as string, { token });
    expect(campaign.body.data.campaign.stats).toMatchObject({
      leads_total: 1,
      leads_by_state: { Fresh: 1, Dialing: 0 },
    });
  });

  test("every row rejection reason, numbered from the first data row", async () => {
    const csv = [
      "phone,timezone,name",
      "+14155552671,America/New_York,ok",
      ",America/New_York,no phone",
      "not a phone,America/New_York,bad phone",
      "4155552672,America/New_York,no region",
      "+18005550123,,toll-free without a zone",
      "+14155552674,+05:00,offset",
      "+14155552675,EST,abbreviation",
      "+14155552676,Mars/Olympus,unknown",
      "+1 (415) 555-2671,UTC,duplicate in file",
      "+14155552677,UTC",
      "+14155552678,UTC,x,extra",
    ].join("\n");
    const response = await upload(csv);
    expect(response.status).toBe(200);
    const report = response.body.data.import;
    expect(report.imported).toBe(1);
    expect(report.rejected).toBe(10);
    expect(report.errors).toEqual([
      { row: 2, column: "phone", reason: "missing_phone" },
      { row: 3, column: "phone", reason: "invalid_phone" },
      { row: 4, column: "phone", reason: "invalid_phone" },
      { row: 5, column: "phone", reason: "unknown_timezone" },
      { row: 6, column: "timezone", reason: "invalid_timezone" },
      { row: 7, column: "timezone", reason: "invalid_timezone" },
      { row: 8, column: "timezone", reason: "invalid_timezone" },
      { row: 9, column: "phone", reason: "duplicate" },
      { row: 10, column: null, reason: "too_few_cells" },
      { row: 11, column: null, reason: "too_many_cells" },
    ]);
  });

  test("a quote that never closes is said so, on the row where it opens", async () => {
    const csv = [
      "phone,timezone,note",
      "+14155552671,UTC,fine",
      '+14155552672,UTC,"never closed',
      "+14155552673,UTC,swallowed",
    ].join("\n");
    const report = (await upload(csv)).body.data.import;
    expect(report.imported).toBe(1);
    expect(report.errors).toEqual([{ row: 2, column: null, reason: "unclosed_quote" }]);
  });

  test("default_region reads national numbers; links are stored canonical", async () => {
    const response = await upload(
      "phone,timezone\n(415) 555-2671,US/Pacific\n020 7183 8750,Europe/London\n",
      {
        phone_column: "phone",
        timezone_column: "timezone",
        default_region: "US",
      },
    );
    expect(response.body.data.import).toMatchObject({ imported: 1, rejected: 1 });
    const items = (await leads()).data.items;
    expect(
      items.map((lead: { phone: string; timezone: string }) => [lead.phone, lead.timezone]),
    ).toEqual([["+14155552671", "America/Los_Angeles"]]);
  });

  test("re-importing the same file rejects everything as duplicate", async () => {
    const csv = "phone,timezone\n+14155552671,UTC\n+14155552672,UTC\n";
    await upload(csv);
    const again = await upload(csv);
    expect(again.body.data.import).toMatchObject({ imported: 0, rejected: 2 });
    expect(again.body.data.import.errors.map((e: { reason: string }) => e.reason)).toEqual([
      "duplicate",
      "duplicate",
    ]);
    expect(await listCount()).toBe(2);
  });

  test("only the first 100 errors are listed; counts cover every row", async () => {
    const rows = Array.from({ length: 150 }, (_, i) => `bad-${i},UTC`).join("\n");
    const response = await upload(`phone,timezone\n${rows}\n`);
    expect(response.body.data.import.rejected).toBe(150);
    expect(response.body.data.import.errors).toHaveLength(100);
    expect(response.body.data.import.errors[99].row).toBe(100);
  });
});

type Lead = { phone: string; timezone: string; zone_source: string };
const zonesOfLeads = async () =>
  ((await leads("?limit=100")).data.items as Lead[])
    .map((lead) => [lead.phone, lead.timezone, lead.zone_source])
    .sort(([a], [b]) => String(a).localeCompare(String(b)));

describe("zones from the number", () => {
  const noZoneColumn = [
    "phone,name",
    "+12125550123,New York",
    "+13125550123,Chicago",
    "+13035550123,Denver",
    "+14155550123,San Francisco",
    "+18505550123,Florida panhandle",
    "+442079460123,London",
    "+14165550123,Toronto",
    "+18005550123,toll-free",
  ].join("\n");

  test("without a zone column, each lead takes its number's first zone; a number in none is rejected", async () => {
    const response = await upload(noZoneColumn, { phone_column: "phone" });
    expect(response.status).toBe(200);
    expect(response.body.data.import).toMatchObject({
      imported: 7,
      rejected: 1,
      errors: [{ row: 8, column: "phone", reason: "unknown_timezone" }],
    });
    expect(await zonesOfLeads()).toEqual([
      ["+12125550123", "America/New_York", "number"],
      ["+13035550123", "America/Denver", "number"],
      ["+13125550123", "America/Chicago", "number"],
      ["+14155550123", "America/Los_Angeles", "number"],
      // A Canadian number shares +1 with the United States: it is valid all the same.
      ["+14165550123", "America/Toronto", "number"],
      // 850 spans Central and Eastern: the first is stored, the claim applies both.
      ["+18505550123", "America/Chicago", "number"],
      ["+442079460123", "Europe/London", "number"],
    ]);
    const [london] = (await leads("?phone=%2B442079460123")).data.items;
    expect(london.fields).toEqual({ name: "London" });
  });

  test("default_timezone places a number in no zone, stored canonical", async () => {
    const response = await upload(noZoneColumn, { phone_column: "phone", default_timezone: "UTC" });
    expect(response.body.data.import).toMatchObject({ imported: 8, rejected: 0 });
    const found = await zonesOfLeads();
    expect(found).toContainEqual(["+18005550123", "Etc/UTC", "default"]);
    expect(found).toContainEqual(["+12125550123", "America/New_York", "number"]);
  });

  test("an empty zone cell is inferred; a filled one is checked and wins", async () => {
    const csv = [
      "phone,timezone",
      "+12125550123,",
      "+13125550123,  ",
      "+14155550123,Europe/Paris",
      "+13035550123,EST",
      "+18005550123,",
      "+18005550124,America/Phoenix",
    ].join("\n");
    const response = await upload(csv);
    expect(response.body.data.import).toMatchObject({
      imported: 4,
      rejected: 2,
      errors: [
        { row: 4, column: "timezone", reason: "invalid_timezone" },
        { row: 5, column: "phone", reason: "unknown_timezone" },
      ],
    });
    expect(await zonesOfLeads()).toEqual([
      ["+12125550123", "America/New_York", "number"],
      ["+13125550123", "America/Chicago", "number"],
      ["+14155550123", "Europe/Paris", "column"],
      ["+18005550124", "America/Phoenix", "column"],
    ]);
  });

  test("an empty timezone_column is no zone column", async () => {
    const response = await upload("phone,timezone\n+12125550123,Europe/Paris\n", {
      phone_column: "phone",
      timezone_column: "",
    });
    expect(response.body.data.import).toMatchObject({ imported: 1, rejected: 0 });
    const [lead] = (await leads()).data.items;
    expect(lead).toMatchObject({
      timezone: "America/New_York",
      zone_source: "number",
      fields: { timezone: "Europe/Paris" },
    });
  });

  test("the zones the service stores are accepted back, Etc/UTC and Etc/GMT included", async () => {
    const csv = [
      "phone,timezone",
      "+14155550101,Etc/UTC",
      "+14155550102,UTC",
      "+14155550103,GMT",
      "+14155550104,Etc/GMT",
      "+14155550105,US/Eastern",
      "+14155550106,",
    ].join("\n");
    expect((await upload(csv)).body.data.import).toMatchObject({ imported: 6, rejected: 0 });
    const stored = await zonesOfLeads();
    expect(stored.map(([, zone]) => zone)).toEqual([
      "Etc/UTC",
      "Etc/UTC",
      "Etc/GMT",
      "Etc/GMT",
      "America/New_York",
      "America/Los_Angeles",
    ]);
    // The leads as stored, imported into another list, keep their zones.
    const campaignPath = base.split("/lead-lists")[0];
    const other = await w.request("POST", `${campaignPath}/lead-lists`, {
      token,
      body: { name: "Again", caller_id: "+14155550100" },
    });
    const otherBase = `${campaignPath}/lead-lists/${other.body.data.lead_list.id}`;
    const again = await importFile(
      w,
      `${otherBase}/import`,
      token,
      `phone,timezone\n${stored.map(([phone, zone]) => `${phone},${zone}`).join("\n")}\n`,
    );
    expect(again.body.data.import).toMatchObject({ imported: 6, rejected: 0 });
    const items = (await w.request("GET", `${otherBase}/leads?limit=100`, { token })).body.data
      .items as Lead[];
    expect(items.map((lead) => lead.timezone).sort()).toEqual(
      stored.map(([, zone]) => zone as string).sort(),
    );
  });
});

describe("the files people have", () => {
  const expectTwo = async (csv: string | Uint8Array, fields?: Record<string, string>) => {
    const response = await upload(csv, fields);
    expect([
      response.status,
      response.body.data?.import.imported,
      response.body.data?.import.rejected,
    ]).toEqual([200, 2, 0]);
    return (await leads()).data.items;
  };

  test("a UTF-8 BOM, CRLF line ends and a trailing blank line", () =>
    expectTwo("\uFEFFphone,timezone\r\n+14155552671,UTC\r\n+14155552672,UTC\r\n\r\n"));
  test("CRLF and LF mixed, either way round", async () => {
    for (const [head, rows] of [
      ["\r\n", "\n"],
      ["\n", "\r\n"],
    ] as const) {
      await setUp();
      const items = await expectTwo(
        `phone,timezone,name${head}+14155552671,UTC,a${rows}+14155552672,UTC,b${rows}`,
      );
      const names = items.map((lead: { fields: { name: string } }) => lead.fields.name).sort();
      expect(names).toEqual(["a", "b"]);
    }
  });
  test("semicolons", () =>
    expectTwo("phone;timezone;note\n+14155552671;UTC;a,b\n+14155552672;UTC;c\n"));
  test("tabs", () => expectTwo("phone\ttimezone\n+14155552671\tUTC\n+14155552672\tUTC\n"));
  test("quoted cells with delimiters, quotes and newlines", async () => {
    const items = await expectTwo(
      'phone,timezone,note\n"+14155552671",UTC,"one, ""two""\nthree"\n+14155552672,UTC,plain\n',
    );
    const notes = items.map((lead: { fields: { note: string } }) => lead.fields.note).sort();
    expect(notes).toEqual(['one, "two"\nthree', "plain"]);
  });
  test("header names with spaces", () =>
    expectTwo("Phone Number , Time Zone,First Name\n+14155552671,UTC,A\n+14155552672,UTC,B\n", {
      phone_column: "Phone Number",
      timezone_column: "Time Zone",
    }));
  test("repeated, blank and special header names each keep their column's cells", async () => {
    const items = await expectTwo(
      "phone,name,name,,, name ,__proto__,constructor,timezone\n" +
        "+14155552671,first,second,e1,e2,third,proto,ctor,UTC\n" +
        "+14155552672,a,b,c,d,e,f,g,UTC\n",
    );
    const first = items.find((lead: { phone: string }) => lead.phone === "+14155552671");
    expect(Object.entries(first.fields).sort()).toEqual([
      ["__proto__", "proto"],
      ["column_4", "e1"],
      ["column_5", "e2"],
      ["constructor", "ctor"],
      ["name", "first"],
      ["name_2", "second"],
      ["name_3", "third"],
    ]);
  });
  test("cells are stored verbatim, formula-like ones included", async () => {
    const items = await expectTwo(
      'phone,timezone,note\n+14155552671,UTC,=HYPERLINK("x")\n+14155552672,UTC, spaced \n',
    );
    const notes = items.map((lead: { fields: { note: string } }) => lead.fields.note).sort();
    expect(notes).toEqual([" spaced ", '=HYPERLINK("x")']);
  });
});

describe("whole-request errors", () => {
  const expect400 = async (response: Awaited<ReturnType<typeof upload>>, field: string) => {
    expect(response.status).toBe(400);
    expect(response.body.code).toBe("invalid_request");
    expect(response.body.field_errors.map((e: { field: string }) => e.field)).toContain(field);
    expect(await listCount()).toBe(0);
  };
  test("missing file", async () => expect400(await upload(null), "file"));
  test("missing phone_column", async () =>
    expect400(await upload("phone,timezone\n", { timezone_column: "timezone" }), "phone_column"));
  test("a timezone_column absent from the header", async () =>
    expect400(
      await upload("phone,zone\n+14155552671,UTC\n", {
        phone_column: "phone",
        timezone_column: "timezone",
      }),
      "timezone_column",
    ));
  test("a named column absent from the header", async () =>
    expect400(await upload("tel,timezone\n+14155552671,UTC\n"), "phone_column"));
  test("an empty file", async () => expect400(await upload(""), "file"));
  test("a file of blank lines", async () => expect400(await upload("\n\n\n"), "file"));
  test("a bad default_region", async () =>
    expect400(
      await upload("phone,timezone\n+14155552671,UTC\n", {
        phone_column: "phone",
        timezone_column: "timezone",
        default_region: "XX",
      }),
      "default_region",
    ));
  test("a bad default_timezone, named with a bad default_region", async () => {
    for (const zone of ["Mars/Olympus", "EST", "+05:00"]) {
      const response = await upload("phone\n+18005550123\n", {
        phone_column: "phone",
        default_timezone: zone,
        default_region: "XX",
      });
      await expect400(response, "default_timezone");
      expect(response.body.field_errors.map((e: { field: string }) => e.field).sort()).toEqual([
        "default_region",
        "default_timezone",
      ]);
    }
    expect((await w.request("GET", `${base}/imports`, { token })).body.total).toBe(0);
  });
  test("a binary file", async () => {
    const bytes = new Uint8Array(2048).map((_, i) => (i * 7919) % 256);
    await expect400(await upload(bytes), "file");
  });
  test("Latin-1 text", async () => {
    const latin1 = new Uint8Array([
      ...new TextEncoder().encode("phone,timezone,name\n+14155552671,UTC,Jos"),
      0xe9,
      10,
    ]);
    await expect400(await upload(latin1), "file");
  });
  test("a JSON body", async () => {
    const response = await w.request("POST", `${base}/import`, {
      token,
      body: { phone_column: "phone" },
    });
    expect(response.status).toBe(400);
  });
});

describe("all or nothing", () => {
  test("a fault half-way through the file leaves no lead behind", async () => {
    const good = Array.from(
      { length: 5000 },
      (_, i) => `+1415555${String(1000 + i).padStart(4, "0")},UTC`,
    ).join("\n");
    const bytes = new Uint8Array([
      ...new TextEncoder().encode(`phone,timezone\n${good}\n+14155550000,UTC,`),
      0xff,
      10,
    ]);
    const response = await upload(bytes);
    expect(response.status).toBe(400);
    expect((await leads()).total).toBe(0);
    expect(await listCount()).toBe(0);
    const imports = await w.request("GET", `${base}/imports`, { token });
    expect(imports.body.total).toBe(0);
  });

  test("a client that disconnects mid-upload leaves nothing behind", async () => {
    const form = new FormData();
    form.append("phone_column", "phone");
    form.append("timezone_column", "timezone");
    form.append(
      "file",
      new Blob([`phone,timezone\n${"+14155552671,UTC\n".repeat(2000)}`]),
      "l.csv",
    );
    const whole = new Uint8Array(await new Response(form).arrayBuffer());
    const contentType = new Response(form).headers.get("content-type") as string;
    // Half the body, then the connection fails.
    const broken = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(whole.slice(0, whole.length / 2));
        controller.error(new Error("connection reset"));
      },
    });
    const response = await w.app.handle(
      new Request(`http://localhost${base}/import`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": contentType },
        body: broken,
      }),
    );
    expect(response.status).toBe(400);
    expect((await leads()).total).toBe(0);
    expect((await w.request("GET", `${base}/imports`, { token })).body.total).toBe(0);
  });

  test("a file over IMPORT_MAX_ROWS is 413 and writes nothing", async () => {
    await setUp({ IMPORT_MAX_ROWS: "3" });
    const response = await upload(
      "phone,timezone\n+14155552671,UTC\n+14155552672,UTC\n+14155552673,UTC\n+14155552674,UTC\n",
    );
    expect(response.status).toBe(413);
    expect(response.body.code).toBe("payload_too_large");
    expect((await leads()).total).toBe(0);
    const exactly = await upload(
      "phone,timezone\n+14155552671,UTC\n+14155552672,UTC\n+14155552673,UTC\n",
    );
    expect(exactly.body.data.import.imported).toBe(3);
  });

  test("a file over IMPORT_MAX_BYTES is 413 and writes nothing", async () => {
    await setUp({ IMPORT_MAX_BYTES: "64" });
    const response = await upload(
      "phone,timezone\n+14155552671,UTC\n+14155552672,UTC\n+14155552673,UTC\n",
    );
    expect(response.status).toBe(413);
    expect((await leads()).total).toBe(0);
  });

  test("concurrent imports into one list run one after the other; duplicates stay exact", async () => {
    const csv = Array.from({ length: 200 }, (_, i) => `+1415555${String(2000 + i)},UTC`).join("\n");
    const results = await Promise.all(
      Array.from({ length: 4 }, () => upload(`phone,timezone\n${csv}\n`)),
    );
    const imported = results
      .map((response) => response.body.data.import.imported)
      .sort((a, b) => a - b);
    expect(imported).toEqual([0, 0, 0, 200]);
    expect((await leads()).total).toBe(200);
    expect(await listCount()).toBe(200);
  });
});

describe("reading leads and imports", () => {
  test("filter by state and by phone as typed", async () => {
    await upload("phone,timezone\n+14155552671,UTC\n+14155552672,UTC\n");
    expect((await leads("?state=Fresh")).total).toBe(2);
    expect((await leads("?state=Dialing")).total).toBe(0);
    expect(
      (await leads("?phone=%2B1%20415-555-2672")).data.items.map((l: { phone: string }) => l.phone),
    ).toEqual(["+14155552672"]);
    expect((await w.request("GET", `${base}/leads?state=Lost`, { token })).status).toBe(400);
  });

  test("past imports are listed; rejected rows download as neutralised CSV", async () => {
    await upload(
      'phone,timezone,note\n+14155552671,UTC,fine\n=1+2,UTC,formula\n+14155552671,UTC,"@dup, again"\n',
    );
    const imports = await w.request("GET", `${base}/imports`, { token });
    expect(imports.body.total).toBe(1);
    const [record] = imports.body.data.items;
    expect(record).toMatchObject({ imported: 1, rejected: 2 });
    const response = await w.app.handle(
      new Request(`http://localhost${base}/imports/${record.id}/rejected.csv`, {
        headers: { authorization: `Bearer ${token}` },
      }),
    );
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("text/csv");
    const text = (await response.text()).replace(/^\uFEFF/, "");
    expect(text.split("\r\n")).toEqual([
      "phone,timezone,note,reason",
      "'=1+2,UTC,formula,invalid_phone",
      '+14155552671,UTC,"\'@dup, again",duplicate',
      "",
    ]);
  });

  test("supervisors read lists and leads; only admins create and import; other tenants get 404", async () => {
    await w.user(w.acme.id, "sup@acme.test", "supervisor");
    await w.user(w.acme.id, "agent@acme.test", "agent");
    const supToken = await w.login("sup@acme.test");
    const agentToken = await w.login("agent@acme.test");
    expect((await w.request("GET", `${base}/leads`, { token: supToken })).status).toBe(200);
    expect((await w.request("GET", `${base}/leads`, { token: agentToken })).status).toBe(403);
    expect((await importFile(w, `${base}/import`, supToken, "phone,timezone\n")).status).toBe(403);
    const campaignPath = base.split("/lead-lists")[0];
    const create = await w.request("POST", `${campaignPath}/lead-lists`, {
      token: supToken,
      body: { name: "x", caller_id: "+14155550100" },
    });
    expect(create.status).toBe(403);

    const other = await w.tenant("other.test");
    await w.user(other.id, "boss@other.test", "admin");
    const otherToken = await w.login("boss@other.test");
    expect((await w.request("GET", base, { token: otherToken })).status).toBe(404);
    expect(
      (await importFile(w, `${base}/import`, otherToken, "phone,timezone\n+14155552671,UTC\n"))
        .status,
    ).toBe(404);
    expect(await listCount()).toBe(0);
  });

  test("lead lists validate name and caller_id", async () => {
    const campaignPath = base.split("/lead-lists")[0];
    const bad = await w.request("POST", `${campaignPath}/lead-lists`, {
      token,
      body: { name: "", caller_id: "555" },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.field_errors.map((e: { field: string }) => e.field).sort()).toEqual([
      "caller_id",
      "name",
    ]);
    const lists = await w.request("GET", `${campaignPath}/lead-lists`, { token });
    expect(lists.body.total).toBe(1);
  });
});

describe("property: every data row is counted once", () => {
  test("imported + rejected equals the data rows, and the list grew by imported", async () => {
    const phone = fc.oneof(
      fc.integer({ min: 2_000_000, max: 2_000_040 }).map((n) => `+1415${n}`),
      fc.constantFrom("", "abc", "+1", "12345"),
    );
    const zone = fc.constantFrom("UTC", "America/New_York", "US/Eastern", "EST", "", "+01:00");
    const cell = fc.string({ maxLength: 6 });
    const row = fc.tuple(phone, zone, cell).map(([p, z, c]) => [p, z, c]);
    const ragged = fc.oneof(
      row,
      row.map((r) => r.slice(0, 2)),
      row.map((r) => [...r, "x"]),
    );
    const quote = (value: string) => `"${value.replaceAll('"', '""')}"`;
    await fc.assert(
      fc.asyncProperty(fc.array(ragged, { minLength: 1, maxLength: 30 }), async (rows) => {
        const before = await listCount();
        const csv = `phone,timezone,note\n${rows.map((cells) => cells.map(quote).join(",")).join("\n")}\n`;
        const response = await upload(csv);
        expect(response.status).toBe(200);
        const { imported, rejected } = response.body.data.import;
        expect(imported + rejected).toBe(rows.length);
        expect(await listCount()).toBe(before + imported);
        expect((await leads()).total).toBe(before + imported);
      }),
      { numRuns: 25 },
    );
  });
});

describe("work after the commit", () => {
  test("a failure after the import committed still answers the report, and the work is retried", async () => {
    const campaigns = w.deps.campaigns;
    const run = campaigns.run.bind(campaigns);
    let attempts = 0;
    campaigns.run = ((...args: Parameters<typeof run>) => {
      if (args[1].type === "leads.recount" && ++attempts === 1)
        return Promise.reject(new Error("campaign actor unavailable"));
      return run(...args);
    }) as typeof run;
    const warnings: string[] = [];
    w.deps.logger = { ...w.deps.logger, warn: (message) => warnings.push(message) };
    const response = await upload("phone,timezone\n+14155552671,America/Chicago\n");
    expect(response.status).toBe(200);
    expect(response.body.data.import).toMatchObject({ imported: 1, rejected: 0 });
    expect((await leads()).data.items).toHaveLength(1);
    expect(await listCount()).toBe(1);
    expect(warnings).toEqual(["import follow-up failed: lead counts"]);
    await Bun.sleep(1_200);
    expect(attempts).toBe(2);
  });
});
