import { beforeEach, describe, expect, test } from "bun:test";
import { encodeWav } from "../../src/media/wav.ts";
import { createWorkspace } from "../helpers/app.ts";
import { importFile } from "../helpers/leads.ts";

/**
 * A campaign's recorded messages over HTTP, and what the node reports of them and of the
 * answer: the abandoned-call message, the opt-out key, answering-machine detection's verdict
 * and the voicemail drop, as the reply, the CDR, the do-not-call list and the compliance
 * view show them.
 */
type Workspace = Awaited<ReturnType<typeof createWorkspace>>;
let w: Workspace;
let admin: string;
let nodeKey: string;

/** 17:00Z on a Monday is noon in New York. */
const NOON_NEW_YORK = Date.parse("2026-03-02T17:00:00Z");

/** A tone of `ms` at `rate`, as a PCM WAV of `channels` (interleaved copies). */
function toneWav(ms: number, rate = 8000, channels = 1): Uint8Array {
  const frames = Math.round((rate * ms) / 1000);
  const samples = new Int16Array(frames * channels);
  for (let i = 0; i < frames; i++) {
    const value = Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / rate));
    for (let c = 0; c < channels; c++) samples[i * channels + c] = value;
  }
  if (channels === 1) return encodeWav(samples, rate);
  // A stereo header over the interleaved samples.
  const wav = encodeWav(samples, rate);
  const view = new DataView(wav.buffer, wav.byteOffset, wav.byteLength);
  view.setUint16(22, channels, true);
  view.setUint32(28, rate * 2 * channels, true);
  view.setUint16(32, 2 * channels, true);
  return wav;
}

beforeEach(async () => {
  w = await createWorkspace();
  w.clock.advance(NOON_NEW_YORK - w.clock.now());
  admin = await w.login("admin@acme.test");
  nodeKey = (
    await w.request("POST", "/api/v1/edge-nodes", {
      token: admin,
      body: { name: "edge", max_concurrent_calls: 50 },
    })
  ).body.data.key;
});

const createCampaign = async (body: Record<string, unknown> = {}) =>
  (await w.request("POST", "/api/v1/campaigns", { token: admin, body: { name: "M", ...body } }))
    .body.data.campaign;

const putMessage = (
  campaignId: string,
  kind: string,
  wav: Uint8Array | string,
  type = "audio/wav",
  token = admin,
) =>
  w.request("PUT", `/api/v1/campaigns/${campaignId}/messages/${kind}`, {
    token,
    headers: { "content-type": type },
    rawBody: wav,
  });

describe("recording messages", () => {
  test("a WAV is stored as sent, fetched back, versioned across changes and removals, audited", async () => {
    const campaign = await createCampaign();
    const path = `/api/v1/campaigns/${campaign.id}/messages/abandon`;
    const wav = toneWav(1500);
    const first = await putMessage(campaign.id, "abandon", wav);
    expect(first.status).toBe(201);
    expect(first.body.data.message).toMatchObject({
      campaign_id: campaign.id,
      kind: "abandon",
      version: 1,
      encoding: "pcm",
      sample_rate: 8000,
      duration_ms: 1500,
      bytes: wav.byteLength,
      converted: false,
      deleted: false,
    });
    const fetched = await w.app.handle(
      new Request(`http://localhost${path}`, { headers: { authorization: `Bearer ${admin}` } }),
    );
    expect(fetched.status).toBe(200);
    expect(fetched.headers.get("content-type")).toBe("audio/wav");
    expect(fetched.headers.get("x-message-version")).toBe("1");
    expect(Buffer.from(await fetched.arrayBuffer()).equals(Buffer.from(wav))).toBe(true);

    const second = await putMessage(campaign.id, "abandon", toneWav(800), "audio/x-wav");
    expect(second.status).toBe(200);
    expect(second.body.data.message.version).toBe(2);
    const shown = await w.request("GET", `/api/v1/campaigns/${campaign.id}`, { token: admin });
    expect(shown.body.data.campaign.messages).toEqual({
      abandon: 2,
      voicemail: null,
      opt_out: null,
    });
    // A message changes no setting: a change based on the campaign's version still applies.
    const patched = await w.request("PATCH", `/api/v1/campaigns/${campaign.id}`, {
      token: admin,
      body: { version: campaign.version, amd_enabled: true },
    });
    expect(patched.status).toBe(200);

    const removed = await w.request("DELETE", path, { token: admin });
    expect(removed.status).toBe(200);
    expect(removed.body.data.message).toMatchObject({ version: 3, deleted: true });
    expect((await w.request("GET", path, { token: admin })).status).toBe(404);
    expect((await w.request("DELETE", path, { token: admin })).status).toBe(404);
    const again = await putMessage(campaign.id, "abandon", wav, "audio/wave");
    expect(again.body.data.message.version).toBe(4);

    const audit = await w.request("GET", "/api/v1/audit-events", { token: admin });
    const actions = audit.body.data.items.map((item: { action: string }) => item.action);
    expect(actions.filter((a: string) => a === "campaign.message_recorded")).toHaveLength(3);
    expect(actions).toContain("campaign.message_removed");
    const listed = await w.request("GET", `/api/v1/campaigns/${campaign.id}/messages`, {
      token: admin,
    });
    expect(listed.body.data.messages.map((m: { kind: string }) => m.kind)).toEqual(["abandon"]);
  });

  test("another WAV is converted to 8 kHz mono; 16 kHz mono is kept", async () => {
    const campaign = await createCampaign();
    const stereo = await putMessage(campaign.id, "voicemail", toneWav(2000, 44_100, 2));
    expect(stereo.status).toBe(201);
    expect(stereo.body.data.message).toMatchObject({
      converted: true,
      sample_rate: 8000,
      encoding: "pcm",
      duration_ms: 2000,
    });
    const wide = await putMessage(campaign.id, "opt_out", toneWav(500, 16_000));
    expect(wide.body.data.message).toMatchObject({ converted: false, sample_rate: 16_000 });
  });

  test("what is not a WAV, or is longer than a minute, is 422 saying what is expected", async () => {
    const campaign = await createCampaign();
    for (const [body, type] of [
      ["ID3 this is an mp3", "audio/wav"],
      [toneWav(500), "audio/mpeg"],
      [toneWav(61_000), "audio/wav"],
      [new Uint8Array(), "audio/wav"],
    ] as const) {
      const refused = await putMessage(campaign.id, "abandon", body, type);
      expect(refused.status).toBe(422);
      expect(refused.body.code).toBe("validation_failed");
      expect(refused.body.message).toContain("expected a WAV file");
    }
    const json = await w.request("PUT", `/api/v1/campaigns/${campaign.id}/messages/abandon`, {
      token: admin,
      body: { audio: "x" },
    });
    expect(json.status).toBe(422);
    const shown = await w.request("GET", `/api/v1/campaigns/${campaign.id}`, { token: admin });
    expect(shown.body.data.campaign.messages.abandon).toBeNull();
  });

  test("unknown kinds and campaigns are 404; agents may not record; other tenants see nothing", async () => {
    const campaign = await createCampaign();
    expect((await putMessage(campaign.id, "greeting", toneWav(100))).status).toBe(404);
    expect((await putMessage(Bun.randomUUIDv7(), "abandon", toneWav(100))).status).toBe(404);
    await w.user(w.acme.id, "agent@acme.test", "agent");
    const agent = await w.login("agent@acme.test");
    expect(
      (await putMessage(campaign.id, "abandon", toneWav(100), "audio/wav", agent)).status,
    ).toBe(403);
    await putMessage(campaign.id, "abandon", toneWav(100));
    const globex = await w.tenant("globex.test");
    await w.user(globex.id, "admin@globex.test", "admin");
    const other = await w.login("admin@globex.test");
    const path = `/api/v1/campaigns/${campaign.id}/messages/abandon`;
    expect((await w.request("GET", path, { token: other })).status).toBe(404);
    expect(
      (await putMessage(campaign.id, "abandon", toneWav(100), "audio/wav", other)).status,
    ).toBe(404);
    const otherNode = (
      await w.request("POST", "/api/v1/edge-nodes", {
        token: other,
        body: { name: "edge", max_concurrent_calls: 5 },
      })
    ).body.data.key;
    const nodePath = `/api/v1/nodes/campaigns/${campaign.id}/messages/abandon`;
    expect((await w.request("GET", nodePath, { token: otherNode })).status).toBe(404);
    const own = await w.app.handle(
      new Request(`http://localhost${nodePath}`, {
        headers: { authorization: `Bearer ${nodeKey}` },
      }),
    );
    expect(own.status).toBe(200);
    expect(own.headers.get("x-message-version")).toBe("1");
  });
});

/** A running campaign with one lead and `agents` agents ready. */
async function runningCampaign(settings: Record<string, unknown>, agents = 1) {
  const campaign = await createCampaign(settings);
  const list = await w.request("POST", `/api/v1/campaigns/${campaign.id}/lead-lists`, {
    token: admin,
    body: { name: "L", caller_id: "+14155550100" },
  });
  const listPath = `/api/v1/campaigns/${campaign.id}/lead-lists/${list.body.data.lead_list.id}`;
  await importFile(
    w,
    `${listPath}/import`,
    admin,
    "phone,timezone\n+14155552671,America/New_York\n",
  );
  await w.request("POST", `/api/v1/campaigns/${campaign.id}/status`, {
    token: admin,
    body: { action: "start" },
  });
  const tokens: string[] = [];
  for (let i = 0; i < agents; i++) {
    await w.user(w.acme.id, `agent${i}@acme.test`, "agent");
    const token = await w.login(`agent${i}@acme.test`);
    tokens.push(token);
    await w.request("POST", "/api/v1/agents/me/state", {
      token,
      body: { state: "ready", campaign_id: campaign.id },
    });
  }
  const leads = async () =>
    (await w.request("GET", `${listPath}/leads`, { token: admin })).body.data.items as {
      state: string;
    }[];
  return { id: campaign.id as string, tokens, leads };
}

const claim = async () =>
  (await w.request("POST", "/api/v1/nodes/jobs/claim", { token: nodeKey, body: { max: 10 } })).body
    .data.jobs;
const event = (callId: string, type: string, extra: Record<string, unknown> = {}) =>
  w.request("POST", `/api/v1/nodes/calls/${callId}/events`, {
    token: nodeKey,
    body: { type, at: new Date(w.clock.now()).toISOString(), ...extra },
  });
const cdrOf = async (callId: string) =>
  (await w.request("GET", "/api/v1/cdrs", { token: admin })).body.data.items.find(
    (cdr: { call_id: string }) => cdr.call_id === callId,
  );
const compliance = async (campaignId: string) =>
  (await w.request("GET", `/api/v1/campaigns/${campaignId}/compliance`, { token: admin })).body.data
    .compliance;

/** Takes the campaign's agents off the phones, so that the next answer is abandoned. */
async function pauseAgents(tokens: string[]) {
  for (const token of tokens)
    await w.request("POST", "/api/v1/agents/me/state", { token, body: { state: "paused" } });
}

describe("the abandoned call", () => {
  test("an answer with no agent free is told to play the abandon message; the CDR and the compliance view record it", async () => {
    const campaign = await runningCampaign({ regulatory_profile: "none" });
    const recorded = await putMessage(campaign.id, "abandon", toneWav(3000));
    expect(recorded.status).toBe(201);
    const [job] = await claim();
    expect(job).toMatchObject({
      messages: { abandon: 1, voicemail: null, opt_out: null },
      opt_out_digit: "9",
      amd: null,
    });
    await pauseAgents(campaign.tokens);
    const answered = await event(job.call_id, "answered");
    expect(answered.body.data.call).toMatchObject({
      action: "hangup",
      message: { kind: "abandon", version: 1 },
    });
    const started = new Date(w.clock.now()).toISOString();
    const played = await event(job.call_id, "message_played", {
      kind: "abandon",
      played: true,
      completed: true,
    });
    expect(played.status).toBe(200);
    w.clock.advance(3_500);
    await event(job.call_id, "ended", { hangup_cause: "NORMAL_CLEARING" });
    const cdr = await cdrOf(job.call_id);
    expect(cdr).toMatchObject({
      outcome: "abandoned",
      message: {
        kind: "abandon",
        played: true,
        completed: true,
        started_at: started,
        reason: null,
      },
      opted_out: false,
      amd: null,
    });
    const view = await compliance(campaign.id);
    expect(view.media.abandon_message).toMatchObject({
      required: false,
      version: 1,
      played: 1,
      completed: 1,
      not_played: 0,
    });
    const csv = await w.app.handle(
      new Request(`http://localhost/api/v1/campaigns/${campaign.id}/compliance`, {
        headers: { authorization: `Bearer ${admin}`, accept: "text/csv" },
      }),
    );
    const [header, row] = (await csv.text()).trim().split("\r\n");
    expect(header).toContain("message_kind,message_played,message_completed");
    expect(row).toContain(",abandon,true,true,");
  });

  test("a message the node could not fetch is reported not played, with its reason, and counted", async () => {
    const campaign = await runningCampaign({ regulatory_profile: "none" });
    await putMessage(campaign.id, "abandon", toneWav(1000));
    const [job] = await claim();
    await pauseAgents(campaign.tokens);
    await event(job.call_id, "answered");
    await event(job.call_id, "message_played", {
      kind: "abandon",
      played: false,
      reason: "fetch failed: 503",
    });
    await event(job.call_id, "ended", { hangup_cause: "NORMAL_CLEARING" });
    expect((await cdrOf(job.call_id)).message).toMatchObject({
      played: false,
      completed: false,
      started_at: null,
      reason: "fetch failed: 503",
    });
    expect((await compliance(campaign.id)).media.abandon_message.not_played).toBe(1);
    const missingKind = await event(job.call_id, "message_played", { played: true });
    expect(missingKind.status).toBe(400);
  });

  test("the opt-out key puts the number on the do-not-call list (keypress, audited) and the lead is never called again", async () => {
    const campaign = await runningCampaign({ regulatory_profile: "none", opt_out_digit: "#" });
    await putMessage(campaign.id, "abandon", toneWav(1000));
    const [job] = await claim();
    expect(job.opt_out_digit).toBe("#");
    await pauseAgents(campaign.tokens);
    // Before an answer there is no one to hear a message or press a key: 409, nothing listed.
    const early = [
      await event(job.call_id, "opt_out", { digit: "#" }),
      await event(job.call_id, "message_played", { kind: "abandon", played: true }),
    ];
    expect(early.map((reply) => reply.status)).toEqual([409, 409]);
    expect((await w.request("GET", "/api/v1/dnc", { token: admin })).body.data.items).toEqual([]);
    const answered = await event(job.call_id, "answered");
    expect(answered.body.data.call.action).toBe("hangup");
    // A machine heard after the service hung up on the answer leaves the call abandoned.
    expect((await event(job.call_id, "machine")).status).toBe(200);
    // Another key is not the opt-out: refused, naming the field, and nothing is listed.
    const wrongKey = await event(job.call_id, "opt_out", { digit: "9" });
    expect(wrongKey.status).toBe(422);
    expect(wrongKey.body.field_errors).toEqual([
      { field: "digit", message: "is not the campaign's opt-out key (#)" },
    ]);
    expect((await w.request("GET", "/api/v1/dnc", { token: admin })).body.data.items).toEqual([]);
    expect((await event(job.call_id, "opt_out", { digit: "#" })).status).toBe(200);
    // A repeat changes nothing.
    expect((await event(job.call_id, "opt_out", { digit: "#" })).status).toBe(200);
    await event(job.call_id, "ended", { hangup_cause: "NORMAL_CLEARING" });
    const dnc = await w.request("GET", "/api/v1/dnc", { token: admin });
    expect(dnc.body.data.items).toEqual([
      expect.objectContaining({
        phone: "+14155552671",
        source: "keypress",
        added_by: expect.stringMatching(/^edge node /),
      }),
    ]);
    const audit = await w.request("GET", "/api/v1/audit-events", { token: admin });
    expect(audit.body.data.items).toContainEqual(
      expect.objectContaining({
        action: "dnc.added",
        actor_type: "edge_node",
        details: expect.objectContaining({ source: "keypress", call_id: job.call_id }),
      }),
    );
    expect((await campaign.leads())[0]?.state).toBe("DoNotCall");
    expect(await cdrOf(job.call_id)).toMatchObject({ opted_out: true, outcome: "abandoned" });
    expect((await compliance(campaign.id)).media.opt_outs).toBe(1);
  });
});

describe("answering-machine detection", () => {
  const detected = {
    regulatory_profile: "none",
    amd_enabled: true,
    amd_budget_ms: 3000,
    machine_action: "voicemail",
  };

  test("a machine gets the voicemail message; the verdict is on the CDR", async () => {
    const campaign = await runningCampaign(detected);
    await putMessage(campaign.id, "voicemail", toneWav(2000));
    const [job] = await claim();
    expect(job.amd).toEqual({ budget_ms: 3000 });
    const answered = await event(job.call_id, "answered", { detecting: true });
    expect(answered.body.data.call).toMatchObject({ action: "detect", agent_id: null });
    // Asked again, the node hears the same.
    expect((await event(job.call_id, "answered", { detecting: true })).body.data.call.action).toBe(
      "detect",
    );
    w.clock.advance(2_400);
    const verdict = await event(job.call_id, "amd", {
      result: "machine",
      confidence: 0.93,
      ms: 2400,
    });
    expect(verdict.body.data.call).toMatchObject({
      action: "hangup",
      message: { kind: "voicemail", version: 1 },
    });
    await event(job.call_id, "message_played", {
      kind: "voicemail",
      played: true,
      completed: true,
    });
    await event(job.call_id, "ended", { hangup_cause: "NORMAL_CLEARING" });
    const cdr = await cdrOf(job.call_id);
    expect(cdr).toMatchObject({
      outcome: "machine",
      amd: { result: "machine", confidence: 0.93, ms: 2400, sampled: false },
      message: { kind: "voicemail", played: true },
    });
    expect((await compliance(campaign.id)).media).toMatchObject({
      voicemail_drops: 1,
      amd: { verdicts: { human: 0, machine: 1, fax: 0, unknown: 0 } },
    });
  });

  test("a person (or no verdict) is put through to the agent; a verdict before detection is a conflict", async () => {
    await runningCampaign(detected);
    const [job] = await claim();
    expect((await event(job.call_id, "amd", { result: "human" })).status).toBe(409);
    await event(job.call_id, "answered", { detecting: true });
    const verdict = await event(job.call_id, "amd", { result: "human", confidence: 0.8, ms: 900 });
    expect(verdict.body.data.call).toMatchObject({ action: "bridge", message: null });
    expect(verdict.body.data.call.agent_id).not.toBeNull();
    expect((await event(job.call_id, "amd", { result: "human" })).body.data.call.action).toBe(
      "bridge",
    );
    const missing = await event(job.call_id, "amd", {});
    expect(missing.status).toBe(400);
  });

  test("sampled machine verdicts go to agents; their dispositions estimate the false positives", async () => {
    const campaign = await runningCampaign({ ...detected, amd_sample_percent: 100 });
    const [job] = await claim();
    await event(job.call_id, "answered", { detecting: true });
    const verdict = await event(job.call_id, "amd", {
      result: "machine",
      confidence: 0.7,
      ms: 3000,
    });
    expect(verdict.body.data.call.action).toBe("bridge");
    await event(job.call_id, "ended", { hangup_cause: "NORMAL_CLEARING" });
    const settled = await w.request("POST", `/api/v1/calls/${job.call_id}/disposition`, {
      token: campaign.tokens[0],
      body: { disposition: "completed" },
    });
    expect(settled.status).toBe(200);
    expect((await cdrOf(job.call_id)).amd).toMatchObject({ result: "machine", sampled: true });
    expect((await compliance(campaign.id)).media.amd).toMatchObject({
      sampled: 1,
      sampled_judged: 1,
      false_positive_rate: 1,
    });
  });
});

describe("the governor and the message", () => {
  test("under us, progressive at ratio 2 without the abandon message dials one reserved call per agent and says why", async () => {
    const campaign = await runningCampaign({ dial_mode: "progressive", dial_ratio: 2 });
    const stats = async () =>
      (await w.request("GET", `/api/v1/campaigns/${campaign.id}`, { token: admin })).body.data
        .campaign.stats;
    expect((await stats()).dial_ratio_reason).toContain("abandon message");
    const [job] = await claim();
    expect(job.agent_id).not.toBeNull();
    await putMessage(campaign.id, "abandon", toneWav(1000));
    expect((await stats()).dial_ratio_reason).not.toContain("abandon message");
  });

  test("at ratio 1 too, each call has its agent reserved: the agent's pause waits, and the answer is bridged", async () => {
    const campaign = await runningCampaign({ dial_mode: "progressive", dial_ratio: 1 });
    const [job] = await claim();
    expect(job.agent_id).not.toBeNull();
    const paused = await w.request("POST", "/api/v1/agents/me/state", {
      token: campaign.tokens[0] as string,
      body: { state: "paused" },
    });
    expect(paused.body.data.agent).toMatchObject({ state: "reserved", pause_after_call: true });
    const answered = await event(job.call_id, "answered");
    expect(answered.body.data.call).toMatchObject({ action: "bridge", agent_id: job.agent_id });
  });
});

describe("the agent's notes", () => {
  test("notes given with the disposition are on the CDR; longer than 2,000 characters is 400", async () => {
    const campaign = await runningCampaign({ regulatory_profile: "none" });
    const [job] = await claim();
    await event(job.call_id, "answered");
    await event(job.call_id, "ended", { hangup_cause: "NORMAL_CLEARING" });
    const path = `/api/v1/calls/${job.call_id}/disposition`;
    const tooLong = await w.request("POST", path, {
      token: campaign.tokens[0],
      body: { disposition: "completed", notes: "x".repeat(2001) },
    });
    expect(tooLong.status).toBe(400);
    const settled = await w.request("POST", path, {
      token: campaign.tokens[0],
      body: { disposition: "completed", notes: "  Wants the premium plan; call after 5 pm.  " },
    });
    expect(settled.status).toBe(200);
    expect(await cdrOf(job.call_id)).toMatchObject({
      disposition: "completed",
      notes: "Wants the premium plan; call after 5 pm.",
    });
  });
});
