import { beforeEach, describe, expect, test } from "bun:test";
import { CAMPAIGN_DEFAULTS } from "../../src/modules/campaigns/defaults.ts";
import { createWorkspace } from "../helpers/app.ts";

let w: Awaited<ReturnType<typeof createWorkspace>>;
let adminToken: string;
beforeEach(async () => {
  w = await createWorkspace();
  adminToken = await w.login("admin@acme.test");
});

const create = (body: Record<string, unknown>, token = adminToken) =>
  w.request("POST", "/api/v1/campaigns", { token, body });

describe("creating campaigns", () => {
  test("a draft with the contract's defaults", async () => {
    const response = await create({ name: "Spring renewals" });
    expect(response.status).toBe(201);
    expect(response.body.data.campaign).toEqual({
      id: expect.any(String),
      tenant_id: w.acme.id,
      name: "Spring renewals",
      status: "draft",
      dial_mode: "progressive",
      caller_id: null,
      calling_window: { start: "08:00", end: "21:00" },
      max_attempts: 3,
      retry_delay_seconds: 3600,
      dial_ratio: 1,
      max_abandon_rate: 0.03,
      regulatory_profile: "us",
      opt_out_digit: "9",
      amd_enabled: false,
      amd_budget_ms: 3500,
      machine_action: "hangup",
      amd_sample_percent: 0,
      wrap_up_seconds: 0,
      disposition_codes: CAMPAIGN_DEFAULTS.disposition_codes,
      default_disposition: "no_contact",
      after_call_pause_seconds: 0,
      preview_timeout_seconds: 60,
      screen_pop_url: null,
      messages: { abandon: null, voicemail: null, opt_out: null },
      effective_calling_window: {
        sun: { start: "08:00", end: "21:00" },
        mon: { start: "08:00", end: "21:00" },
        tue: { start: "08:00", end: "21:00" },
        wed: { start: "08:00", end: "21:00" },
        thu: { start: "08:00", end: "21:00" },
        fri: { start: "08:00", end: "21:00" },
        sat: { start: "08:00", end: "21:00" },
      },
      version: 1,
      created_at: expect.stringMatching(/Z$/),
      updated_at: expect.stringMatching(/Z$/),
    });
  });

  test("every setting is accepted at its bounds", async () => {
    const response = await create({
      name: "x".repeat(200),
      dial_mode: "predictive",
      caller_id: "+442071838750",
      calling_window: { start: "00:00", end: "23:59" },
      max_attempts: 50,
      retry_delay_seconds: 2_592_000,
      dial_ratio: 5,
      max_abandon_rate: 0.1,
    });
    expect(response.status).toBe(201);
    const low = await create({
      name: "y",
      max_attempts: 1,
      retry_delay_seconds: 60,
      dial_ratio: 1,
      max_abandon_rate: 0,
    });
    expect(low.status).toBe(201);
  });

  test("each value out of range names its field", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ name: "" }, "name"],
      [{ name: "   " }, "name"],
      [{ name: "x".repeat(201) }, "name"],
      [{ name: "a", dial_mode: "auto" }, "dial_mode"],
      [{ name: "a", caller_id: "4155550100" }, "caller_id"],
      [{ name: "a", caller_id: "+0155" }, "caller_id"],
      [{ name: "a", calling_window: { start: "8:00", end: "21:00" } }, "calling_window.start"],
      [{ name: "a", calling_window: { start: "08:00", end: "24:00" } }, "calling_window.end"],
      [{ name: "a", calling_window: { start: "21:00", end: "08:00" } }, "calling_window.start"],
      [{ name: "a", calling_window: { start: "09:00", end: "09:00" } }, "calling_window.start"],
      [{ name: "a", max_attempts: 0 }, "max_attempts"],
      [{ name: "a", max_attempts: 51 }, "max_attempts"],
      [{ name: "a", max_attempts: 2.5 }, "max_attempts"],
      [{ name: "a", retry_delay_seconds: 59 }, "retry_delay_seconds"],
      [{ name: "a", retry_delay_seconds: 2_592_001 }, "retry_delay_seconds"],
      [{ name: "a", dial_ratio: 0.9 }, "dial_ratio"],
      [{ name: "a", dial_ratio: 5.1 }, "dial_ratio"],
      [{ name: "a", max_abandon_rate: -0.01 }, "max_abandon_rate"],
      [{ name: "a", max_abandon_rate: 0.11 }, "max_abandon_rate"],
      [{ name: "a", status: "running" }, "status"],
      [{}, "name"],
    ];
    for (const [body, field] of cases) {
      const response = await create(body);
      expect([JSON.stringify(body), response.status]).toEqual([JSON.stringify(body), 400]);
      expect(response.body.message).toBe("invalid request body");
      expect(response.body.field_errors.map((e: { field: string }) => e.field)).toContain(field);
    }
  });

  test("only admins create; agents read; cross-tenant reads are 404", async () => {
    await w.user(w.acme.id, "agent@acme.test", "agent");
    await w.user(w.acme.id, "sup@acme.test", "supervisor");
    const agentToken = await w.login("agent@acme.test");
    const supToken = await w.login("sup@acme.test");
    expect((await create({ name: "no" }, agentToken)).status).toBe(403);
    expect((await create({ name: "no" }, supToken)).status).toBe(403);
    const id = (await create({ name: "yes" })).body.data.campaign.id;
    expect((await w.request("GET", `/api/v1/campaigns/${id}`, { token: agentToken })).status).toBe(
      200,
    );
    expect((await w.request("GET", "/api/v1/campaigns", { token: agentToken })).body.total).toBe(1);

    const other = await w.tenant("other.test");
    await w.user(other.id, "boss@other.test", "admin");
    const otherToken = await w.login("boss@other.test");
    for (const [method, path, body] of [
      ["GET", `/api/v1/campaigns/${id}`, undefined],
      ["PATCH", `/api/v1/campaigns/${id}`, { version: 1, name: "mine" }],
      ["POST", `/api/v1/campaigns/${id}/status`, { action: "start" }],
      ["GET", `/api/v1/campaigns/${id}/history`, undefined],
    ] as const) {
      const response = await w.request(method, path, { token: otherToken, body });
      expect([method, path, response.status]).toEqual([method, path, 404]);
      expect(response.body.code).toBe("not_found");
    }
    expect((await w.request("GET", "/api/v1/campaigns", { token: otherToken })).body.total).toBe(0);
  });
});

describe("reading campaigns", () => {
  test("one campaign carries stats; the list pages newest first and filters by status", async () => {
    const ids: string[] = [];
    for (const name of ["a", "b", "c"]) {
      w.clock.advance(1000);
      ids.push((await create({ name })).body.data.campaign.id);
    }
    await w.request("POST", `/api/v1/campaigns/${ids[1]}/status`, {
      token: adminToken,
      body: { action: "start" },
    });
    const one = await w.request("GET", `/api/v1/campaigns/${ids[1]}`, { token: adminToken });
    expect(one.body.data.campaign.status).toBe("running");
    expect(one.body.data.campaign.stats).toMatchObject({
      leads_total: 0,
      leads_by_state: { Fresh: 0, DoNotCall: 0 },
      calls_in_flight: 0,
      agents_by_state: { ready: 0, on_call: 0 },
      abandon_rate: 0,
    });
    const list = await w.request("GET", "/api/v1/campaigns?limit=2", { token: adminToken });
    expect(list.body.data.items.map((c: { name: string }) => c.name)).toEqual(["c", "b"]);
    expect(list.body.total).toBe(3);
    const running = await w.request("GET", "/api/v1/campaigns?status=running", {
      token: adminToken,
    });
    expect(running.body.data.items.map((c: { id: string }) => c.id)).toEqual([ids[1]]);
    const bad = await w.request("GET", "/api/v1/campaigns?status=flying", { token: adminToken });
    expect(bad.status).toBe(400);
    expect(
      (await w.request("GET", "/api/v1/campaigns/not-a-uuid", { token: adminToken })).status,
    ).toBe(404);
    expect(
      (await w.request("GET", `/api/v1/campaigns/${crypto.randomUUID()}`, { token: adminToken }))
        .status,
    ).toBe(404);
  });
});

describe("updating campaigns", () => {
  test("a patch with the current version applies and bumps it; a stale one is 409 version_conflict", async () => {
    const id = (await create({ name: "v" })).body.data.campaign.id;
    const first = await w.request("PATCH", `/api/v1/campaigns/${id}`, {
      token: adminToken,
      body: { version: 1, name: "renamed", calling_window: { start: "09:30", end: "17:00" } },
    });
    expect(first.status).toBe(200);
    expect(first.body.data.campaign).toMatchObject({
      name: "renamed",
      version: 2,
      calling_window: { start: "09:30", end: "17:00" },
      max_attempts: 3,
    });
    const stale = await w.request("PATCH", `/api/v1/campaigns/${id}`, {
      token: adminToken,
      body: { version: 1, max_attempts: 5 },
    });
    expect(stale.status).toBe(409);
    expect(stale.body.code).toBe("version_conflict");
    const missing = await w.request("PATCH", `/api/v1/campaigns/${id}`, {
      token: adminToken,
      body: { max_attempts: 5 },
    });
    expect(missing.status).toBe(400);
    expect(missing.body.field_errors[0].field).toBe("version");
    const status = await w.request("PATCH", `/api/v1/campaigns/${id}`, {
      token: adminToken,
      body: { version: 2, status: "running" },
    });
    expect(status.status).toBe(400);
  });

  test("a status change bumps the version too", async () => {
    const id = (await create({ name: "v" })).body.data.campaign.id;
    const started = await w.request("POST", `/api/v1/campaigns/${id}/status`, {
      token: adminToken,
      body: { action: "start" },
    });
    expect(started.body.data.campaign).toMatchObject({ status: "running", version: 2 });
    const stale = await w.request("PATCH", `/api/v1/campaigns/${id}`, {
      token: adminToken,
      body: { version: 1, name: "late" },
    });
    expect(stale.status).toBe(409);
    const patched = await w.request("PATCH", `/api/v1/campaigns/${id}`, {
      token: adminToken,
      body: { version: 2, name: "on time" },
    });
    expect(patched.body.data.campaign).toMatchObject({
      status: "running",
      version: 3,
      name: "on time",
    });
  });
});
