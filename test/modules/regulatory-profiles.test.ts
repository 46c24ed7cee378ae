import { beforeEach, describe, expect, test } from "bun:test";
import { createWorkspace } from "../helpers/app.ts";
import { importFile, recordAbandonMessage } from "../helpers/leads.ts";

/**
 * Regulatory profiles over HTTP: how a campaign chooses one and who may, the window they
 * allow, the governor over progressive dialing, the per-number caps and cool-downs across a
 * workspace's campaigns, the eligibility answer, and what jobs and CDRs record.
 */
type Workspace = Awaited<ReturnType<typeof createWorkspace>>;
let w: Workspace;
let admin: string;
let supervisor: string;
let nodeKey: string;

/** 17:00Z on a Monday is noon in New York and 17:00 in London. */
const NOON_NEW_YORK = Date.parse("2026-03-02T17:00:00Z");
const HOUR = 3_600_000;

interface Job {
  call_id: string;
  lead_id: string;
  campaign_id: string;
  agent_id: string | null;
  timeout_seconds: number;
  abandon_message_required: boolean;
}

beforeEach(async () => {
  w = await createWorkspace();
  w.clock.advance(NOON_NEW_YORK - w.clock.now());
  admin = await w.login("admin@acme.test");
  await w.user(w.acme.id, "super@acme.test", "supervisor");
  supervisor = await w.login("super@acme.test");
  nodeKey = (
    await w.request("POST", "/api/v1/edge-nodes", {
      token: admin,
      body: { name: "edge", max_concurrent_calls: 50 },
    })
  ).body.data.key;
});

const createCampaign = (body: Record<string, unknown>, token = admin) =>
  w.request("POST", "/api/v1/campaigns", { token, body: { name: "Rules", ...body } });

/** A running campaign with one list of `csv`, and `agents` agents ready on it. */
async function runningCampaign(
  body: Record<string, unknown>,
  csv: string,
  agents: string[] = ["agent@acme.test"],
) {
  const campaign = (await createCampaign(body)).body.data.campaign;
  const list = await w.request("POST", `/api/v1/campaigns/${campaign.id}/lead-lists`, {
    token: admin,
    body: { name: "L", caller_id: "+14155550100" },
  });
  const listPath = `/api/v1/campaigns/${campaign.id}/lead-lists/${list.body.data.lead_list.id}`;
  const imported = await importFile(w, `${listPath}/import`, admin, csv);
  expect(imported.body.data.import.rejected).toBe(0);
  await w.request("POST", `/api/v1/campaigns/${campaign.id}/status`, {
    token: admin,
    body: { action: "start" },
  });
  const tokens: string[] = [];
  for (const email of agents) {
    await w.user(w.acme.id, email, "agent");
    const token = await w.login(email);
    tokens.push(token);
    await w.request("POST", "/api/v1/agents/me/state", {
      token,
      body: { state: "ready", campaign_id: campaign.id },
    });
  }
  const leads = async () =>
    (await w.request("GET", `${listPath}/leads`, { token: admin })).body.data.items as {
      id: string;
      state: string;
      next_attempt_at: string | null;
    }[];
  return { id: campaign.id as string, tokens, leads };
}

const claim = async (max = 10) =>
  (await w.request("POST", "/api/v1/nodes/jobs/claim", { token: nodeKey, body: { max } })).body.data
    .jobs as Job[];
const event = (callId: string, type: string, extra: Record<string, unknown> = {}) =>
  w.request("POST", `/api/v1/nodes/calls/${callId}/events`, {
    token: nodeKey,
    body: { type, at: new Date(w.clock.now()).toISOString(), ...extra },
  });
const eligibility = async (campaignId: string, leadId: string) =>
  (
    await w.request("GET", `/api/v1/campaigns/${campaignId}/leads/${leadId}/eligibility`, {
      token: admin,
    })
  ).body.data;
const codes = (answer: { reasons: { code: string }[] }) =>
  answer.reasons.map((reason) => reason.code);

describe("choosing a profile", () => {
  test("a campaign takes the workspace's default, us for a new workspace; an admin changes it", async () => {
    const first = (await createCampaign({})).body.data.campaign;
    expect(first.regulatory_profile).toBe("us");
    const changed = await w.request("PATCH", `/api/v1/tenants/${w.acme.id}`, {
      token: admin,
      body: { regulatory_profile: "uk" },
    });
    expect(changed.status).toBe(200);
    expect(changed.body.data.tenant.regulatory_profile).toBe("uk");
    expect((await createCampaign({})).body.data.campaign.regulatory_profile).toBe("uk");
    const unknown = await w.request("PATCH", `/api/v1/tenants/${w.acme.id}`, {
      token: admin,
      body: { regulatory_profile: "eu" },
    });
    expect(unknown.status).toBe(422);
  });

  test("an unknown profile and a window the profile never allows are 422 naming the field", async () => {
    const unknown = await createCampaign({ regulatory_profile: "mars" });
    expect(unknown.status).toBe(422);
    expect(unknown.body.code).toBe("validation_failed");
    expect(unknown.body.field_errors).toEqual([
      { field: "regulatory_profile", message: expect.stringContaining("us, uk, ca, none") },
    ]);
    const night = await createCampaign({ calling_window: { start: "22:00", end: "23:00" } });
    expect(night.status).toBe(422);
    expect(night.body.field_errors[0].field).toBe("calling_window");
    const wide = await createCampaign({ calling_window: { start: "00:00", end: "23:59" } });
    expect(wide.status).toBe(201);
    expect(wide.body.data.campaign.effective_calling_window.mon).toEqual({
      start: "08:00",
      end: "21:00",
    });
    const unregulated = await createCampaign({
      regulatory_profile: "none",
      calling_window: { start: "22:00", end: "23:00" },
    });
    expect(unregulated.status).toBe(201);
  });

  test("supervisors change the profile and the pacing, never to none nor anything else; the change is audited", async () => {
    const campaign = (await createCampaign({})).body.data.campaign;
    const path = `/api/v1/campaigns/${campaign.id}`;
    const toCanada = await w.request("PATCH", path, {
      token: supervisor,
      body: { version: campaign.version, regulatory_profile: "ca" },
    });
    expect(toCanada.status).toBe(200);
    expect(toCanada.body.data.campaign.regulatory_profile).toBe("ca");
    const version = toCanada.body.data.campaign.version;
    for (const body of [
      { version, regulatory_profile: "none" },
      { version, max_attempts: 9 },
      { version, dial_ratio: 2, caller_id: "+14155550111" },
    ]) {
      expect((await w.request("PATCH", path, { token: supervisor, body })).status).toBe(403);
    }
    // The pacing is theirs: stored as set (the governor caps what is used).
    const paced = await w.request("PATCH", path, {
      token: supervisor,
      body: { version, dial_mode: "predictive", dial_ratio: 2.5, max_abandon_rate: 0.02 },
    });
    expect(paced.status).toBe(200);
    expect(paced.body.data.campaign).toMatchObject({
      dial_mode: "predictive",
      dial_ratio: 2.5,
      max_abandon_rate: 0.02,
    });
    const pacedVersion = paced.body.data.campaign.version;
    expect((await createCampaign({ regulatory_profile: "none" }, supervisor)).status).toBe(403);
    const byAdmin = await w.request("PATCH", path, {
      token: admin,
      body: { version: pacedVersion, regulatory_profile: "none" },
    });
    expect(byAdmin.body.data.campaign.regulatory_profile).toBe("none");
    const audit = await w.request("GET", "/api/v1/audit-events", { token: admin });
    const changes = audit.body.data.items
      .filter((item: { action: string }) => item.action === "campaign.updated")
      .map((item: { details: { changes: unknown } }) => item.details.changes);
    expect(changes).toContainEqual({ regulatory_profile: "ca" });
    expect(changes).toContainEqual({ regulatory_profile: "none" });
    expect(changes).toContainEqual({
      dial_mode: "predictive",
      dial_ratio: 2.5,
      max_abandon_rate: 0.02,
    });
  });
});

describe("the window is the overlap", () => {
  // 11:37Z is 06:37 in New York (EST).
  const EARLY = Date.parse("2026-03-02T11:37:00Z");

  test("a 00:00–23:59 window dials no lead before 08:00 its time; the lead waits, then is dialled", async () => {
    w.clock.advance(EARLY - w.clock.now());
    const campaign = await runningCampaign(
      { calling_window: { start: "00:00", end: "23:59" } },
      "phone,timezone\n+14155552671,America/New_York\n",
    );
    expect(await claim()).toEqual([]);
    const [lead] = await campaign.leads();
    const answer = await eligibility(campaign.id, lead?.id as string);
    expect(answer).toMatchObject({
      dialable: false,
      next_eligible_at: "2026-03-02T13:00:00.000Z",
      zone: { value: "America/New_York", source: "column" },
      profile: { name: "us", version: "2025-04-11" },
    });
    expect(answer.reasons).toEqual([
      expect.objectContaining({ code: "legal_hours", until: "2026-03-02T13:00:00.000Z" }),
    ]);
    w.clock.advance(Date.parse("2026-03-02T13:00:00Z") - w.clock.now());
    expect(await claim()).toHaveLength(1);
  });

  test("a profile changed on a running campaign applies from the next claim", async () => {
    w.clock.advance(EARLY - w.clock.now());
    const campaign = await runningCampaign(
      { regulatory_profile: "none", calling_window: { start: "00:00", end: "23:59" } },
      "phone,timezone\n+14155552671,America/New_York\n+14155552672,America/New_York\n",
      ["one@acme.test"],
    );
    expect(await claim(1)).toHaveLength(1);
    const current = (await w.request("GET", `/api/v1/campaigns/${campaign.id}`, { token: admin }))
      .body.data.campaign;
    await w.request("PATCH", `/api/v1/campaigns/${campaign.id}`, {
      token: admin,
      body: { version: current.version, regulatory_profile: "us" },
    });
    await w.user(w.acme.id, "two@acme.test", "agent");
    await w.request("POST", "/api/v1/agents/me/state", {
      token: await w.login("two@acme.test"),
      body: { state: "ready", campaign_id: campaign.id },
    });
    expect(await claim(1)).toEqual([]);
  });
});

describe("the governor", () => {
  const csv = `phone,timezone\n${[1, 2, 3, 4, 5, 6]
    .map((n) => `+1415555267${n},America/New_York`)
    .join("\n")}\n`;

  test("progressive at ratio 2 starts with no abandon budget: one call per ready agent, each reserved", async () => {
    const campaign = await runningCampaign({ dial_ratio: 2 }, csv, ["a@acme.test", "b@acme.test"]);
    const jobs = await claim();
    expect(jobs).toHaveLength(2);
    expect(jobs.every((job) => job.agent_id !== null)).toBe(true);
    const stats = (await w.request("GET", `/api/v1/campaigns/${campaign.id}`, { token: admin }))
      .body.data.campaign.stats;
    expect(stats.dial_ratio_reason).toStartWith("governor:");
    // Answered, each call goes to the agent reserved for it: none can be abandoned.
    for (const job of jobs) {
      const answered = await event(job.call_id, "answered");
      expect(answered.body.data.call).toMatchObject({ action: "bridge", agent_id: job.agent_id });
    }
  });

  test("under none the same settings dial at the configured ratio, unreserved", async () => {
    await runningCampaign({ dial_ratio: 2, regulatory_profile: "none" }, csv, [
      "a@acme.test",
      "b@acme.test",
    ]);
    const jobs = await claim();
    expect(jobs).toHaveLength(4);
    expect(jobs.every((job) => job.agent_id === null)).toBe(true);
  });
});

describe("caps and cool-downs per number, across the workspace", () => {
  test("a Florida number takes at most 3 attempts in 24 h across campaigns", async () => {
    // 305 is Miami: Florida's 08:00–20:00 and its three attempts a day.
    const csv = "phone,timezone\n+13055552671,America/New_York\n";
    const settings = { max_attempts: 10, retry_delay_seconds: 60 };
    const first = await runningCampaign(settings, csv, ["a@acme.test"]);
    const second = await runningCampaign(settings, csv, ["b@acme.test"]);
    const startedAt = w.clock.now();
    let placed = 0;
    for (let round = 0; round < 3; round++) {
      const jobs = await claim();
      for (const job of jobs) {
        await event(job.call_id, "ended", { hangup_cause: "NO_ANSWER" });
        placed++;
      }
      w.clock.advance(61_000);
    }
    expect(placed).toBe(3);
    expect(await claim()).toEqual([]);
    const waiting = [...(await first.leads()), ...(await second.leads())].find(
      (lead) => lead.state === "Retry",
    ) as { id: string };
    const campaignOf = (await first.leads()).some((lead) => lead.id === waiting.id)
      ? first
      : second;
    const answer = await eligibility(campaignOf.id, waiting.id);
    expect(codes(answer)).toEqual(["attempt_cap"]);
    const cap = answer.reasons.find((reason: { code: string }) => reason.code === "attempt_cap");
    expect(cap.until).toBe(new Date(startedAt + 24 * HOUR).toISOString());
    expect(answer.next_eligible_at).toBe(new Date(startedAt + 24 * HOUR).toISOString());
  });

  test("a UK number is not redialled within 72 h of an abandoned call", async () => {
    const campaign = await runningCampaign(
      { regulatory_profile: "uk", max_attempts: 5, retry_delay_seconds: 60 },
      "phone,timezone\n+442071838751,Europe/London\n",
      ["a@acme.test"],
    );
    await recordAbandonMessage(w, admin, campaign.id);
    const [job] = await claim();
    // The agent steps away: the answered call finds no one and is abandoned.
    await w.request("POST", "/api/v1/agents/me/state", {
      token: campaign.tokens[0] as string,
      body: { state: "paused" },
    });
    expect((await event(job?.call_id as string, "answered")).body.data.call.action).toBe("hangup");
    await event(job?.call_id as string, "ended", { hangup_cause: "NORMAL_CLEARING" });
    const endedAt = w.clock.now();
    w.clock.advance(120_000);
    await w.request("POST", "/api/v1/agents/me/state", {
      token: campaign.tokens[0] as string,
      body: { state: "ready", campaign_id: campaign.id },
    });
    expect(await claim()).toEqual([]);
    const [lead] = await campaign.leads();
    const answer = await eligibility(campaign.id, lead?.id as string);
    expect(answer.reasons).toEqual([
      expect.objectContaining({
        code: "cooldown",
        until: new Date(endedAt + 72 * HOUR).toISOString(),
      }),
    ]);
    expect(lead?.next_attempt_at).toBe(new Date(endedAt + 72 * HOUR).toISOString());
  });

  test("a UK call bridged to its agent past 2 s is abandoned in law: no redial within 72 h", async () => {
    const campaign = await runningCampaign(
      { regulatory_profile: "uk", max_attempts: 5, retry_delay_seconds: 60 },
      "phone,timezone\n+442071838752,Europe/London\n",
      ["a@acme.test"],
    );
    const [job] = await claim();
    const callId = job?.call_id as string;
    expect((await event(callId, "answered")).body.data.call.action).toBe("bridge");
    w.clock.advance(30_000);
    await event(callId, "ended", { hangup_cause: "NORMAL_CLEARING", node_bridge_ms: 4_000 });
    const endedAt = w.clock.now();
    await w.request("POST", `/api/v1/calls/${callId}/disposition`, {
      token: campaign.tokens[0] as string,
      body: { disposition: "no_answer" },
    });
    w.clock.advance(120_000);
    const [lead] = await campaign.leads();
    const answer = await eligibility(campaign.id, lead?.id as string);
    expect(answer.reasons).toContainEqual(
      expect.objectContaining({
        code: "cooldown",
        until: new Date(endedAt + 72 * HOUR).toISOString(),
      }),
    );
  });

  test("a Washington number is not called for a year after a do-not-call request, even once removed", async () => {
    const phone = "+12065552671";
    const campaign = await runningCampaign({}, `phone,timezone\n${phone},America/Los_Angeles\n`);
    const requestedAt = w.clock.now();
    await w.request("POST", "/api/v1/dnc", { token: admin, body: { phone } });
    await w.request("DELETE", `/api/v1/dnc/${encodeURIComponent(phone)}`, { token: admin });
    // Listed, its only lead ended and the campaign completed; off the list, the lead is back.
    await w.request("POST", `/api/v1/campaigns/${campaign.id}/status`, {
      token: admin,
      body: { action: "start" },
    });
    expect(await claim()).toEqual([]);
    const [lead] = await campaign.leads();
    const answer = await eligibility(campaign.id, lead?.id as string);
    expect(answer.reasons).toEqual([
      expect.objectContaining({
        code: "cooldown",
        until: new Date(requestedAt + 365 * 24 * HOUR).toISOString(),
      }),
    ]);
  });
});

describe("what a call records", () => {
  test("jobs ring at least the profile's minimum and say a message is required; CDRs carry profile, zone and governor", async () => {
    const campaign = (await createCampaign({})).body.data.campaign;
    const list = await w.request("POST", `/api/v1/campaigns/${campaign.id}/lead-lists`, {
      token: admin,
      body: { name: "No zones", caller_id: "+14155550100" },
    });
    await importFile(
      w,
      `/api/v1/campaigns/${campaign.id}/lead-lists/${list.body.data.lead_list.id}/import`,
      admin,
      "phone\n+14155552671\n",
      { phone_column: "phone" },
    );
    await w.request("POST", `/api/v1/campaigns/${campaign.id}/status`, {
      token: admin,
      body: { action: "start" },
    });
    await w.user(w.acme.id, "agent@acme.test", "agent");
    await w.request("POST", "/api/v1/agents/me/state", {
      token: await w.login("agent@acme.test"),
      body: { state: "ready", campaign_id: campaign.id },
    });
    const [job] = await claim();
    expect(job).toMatchObject({ timeout_seconds: 30, abandon_message_required: true });
    await event(job?.call_id as string, "ended", { hangup_cause: "NO_ANSWER" });
    const [cdr] = (await w.request("GET", "/api/v1/cdrs", { token: admin })).body.data.items;
    // No abandon message is recorded: the governor holds every call to a reserved agent.
    expect(cdr).toMatchObject({
      profile: { name: "us", version: "2025-04-11" },
      zone: { value: "America/Los_Angeles", source: "number" },
      governor_held: true,
    });
  });
});
