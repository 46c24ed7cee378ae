import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encodeWav, samples8k } from "../../src/media/wav.ts";
import { espeakInstalled, powerShareAt, spoken, tone } from "../helpers/audio.ts";
import { Baresip, baresipInstalled } from "../helpers/baresip.ts";
import { dialerOnLoopback, startSipNode, until } from "../helpers/edge.ts";
import { portBlock, sipPort } from "../helpers/ports.ts";

/**
 * The node's media against Debian's baresip as the called phone, recording what it hears
 * (`sndfile`) and saying a greeting from a file (`aufile`): the abandon message heard from
 * within 2 s of the answer and whole; a key press (`sndcode`, RFC 4733) on the do-not-call
 * list; a machine's greeting and beep answered with the voicemail message after the beep.
 * baresip's recording of what it hears starts with the first packet it decodes, so when the
 * message starts is read from the CDR (the node's own clock, the answer and the message's
 * start), and what was heard from the recording.
 */

const installed = baresipInstalled() && espeakInstalled();
if (!installed)
  console.warn("baresip or espeak-ng is not installed: the baresip media tests are skipped");

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const LEAD = "+14155552673";
const rtpRange = (): [number, number] => portBlock(100);

/** Where, in 20 ms steps, a tone of `hz` is heard in a recording: its first and last frame. */
function heardTone(samples: Int16Array, hz: number) {
  let first = -1;
  let last = -1;
  for (let frame = 0; (frame + 1) * 160 <= samples.length; frame++) {
    const stretch = samples.subarray(frame * 160, (frame + 1) * 160);
    let energy = 0;
    for (const x of stretch) energy += x * x;
    if (energy / 160 < 1e4 || powerShareAt(stretch, hz) < 0.6) continue;
    if (first < 0) first = frame;
    last = frame;
  }
  return first < 0 ? null : { startMs: first * 20, endMs: (last + 1) * 20 };
}

/** "Hello?", after 300 ms and before 3 s of silence: a person answering. */
function hello(): Int16Array {
  const speech = spoken("Hello?");
  const says = new Int16Array(speech.length + 26_400);
  says.set(speech, 2_400);
  return says;
}

/** From the answer to the message's first packet, by the node's clock, as the CDR has them. */
/** How much later than the lead's audio began the node may stamp the answer. */
const ANSWER_STAMP_SLACK_MS = 50;
const startedAfterAnswer = (cdr: { answered_at: string; message: { started_at: string } }) =>
  Date.parse(cdr.message.started_at) - Date.parse(cdr.answered_at);

async function scene(o: {
  settings: Record<string, unknown>;
  messages: Record<string, Int16Array>;
  says?: Int16Array;
  answer?: "auto" | "manual";
  /** The agent's own baresip, to bridge to. */
  agentPhone?: boolean;
}) {
  const dir = mkdtempSync(join(tmpdir(), "baresip-media-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  let says: string | undefined;
  if (o.says) {
    says = join(dir, "says.wav");
    writeFileSync(says, encodeWav(o.says, 8000));
  }
  const lead = await Baresip.start({
    sipPort: sipPort(),
    ctrlPort: sipPort(),
    rtpPorts: rtpRange(),
    accounts: [{ user: LEAD, answer: o.answer ?? "auto" }],
    recordsTo: dir,
    ...(says ? { says } : {}),
  });
  cleanups.push(() => lead.stop());
  const agent = o.agentPhone
    ? await Baresip.start({
        sipPort: sipPort(),
        ctrlPort: sipPort(),
        rtpPorts: rtpRange(),
        accounts: [{ user: "agent", answer: "auto" }],
      })
    : undefined;
  if (agent) cleanups.push(() => agent.stop());
  const service = await dialerOnLoopback({
    phones: [LEAD],
    agentUri: agent ? `sip:agent@127.0.0.1:${agent.sipPort}` : null,
  });
  cleanups.push(() => service.server.stop(true));
  const { w, adminToken, campaignId } = service;
  for (const [kind, samples] of Object.entries(o.messages)) {
    await w.request("PUT", `/api/v1/campaigns/${campaignId}/messages/${kind}`, {
      token: adminToken,
      headers: { "content-type": "audio/wav" },
      rawBody: encodeWav(samples, 8000),
    });
  }
  await w.request("PATCH", `/api/v1/campaigns/${campaignId}`, {
    token: adminToken,
    body: { version: 1, ...o.settings },
  });
  const edge = await startSipNode({
    baseUrl: service.baseUrl,
    nodeKey: service.nodeKey,
    port: sipPort(),
    trunkPort: lead.sipPort,
    maxRingSeconds: 10,
  });
  cleanups.push(() => edge.stop(1_000));
  /** What the lead heard, once its call has ended and baresip has written it. */
  const recording = async () => {
    await until(() => lead.events.some((e) => e.type === "CALL_CLOSED"), "the call's end", 30_000);
    await Bun.sleep(300);
    const file = readdirSync(dir).find(
      (name) => name.startsWith("dump-") && name.endsWith("-dec.wav"),
    );
    if (!file)
      throw new Error(`no recording in ${dir}: ${readdirSync(dir).join(", ")}\n${lead.log()}`);
    return samples8k(new Uint8Array(readFileSync(join(dir, file))));
  };
  const cdr = async () => until(async () => (await service.cdrs())[0], "the CDR", 20_000);
  return { lead, agent, service, recording, cdr };
}

/** The lead rings, its agent steps away, then it answers: nobody is free for it. */
async function answeredWithNobodyFree(s: Awaited<ReturnType<typeof scene>>) {
  await s.service.start();
  await until(() => s.lead.events.find((e) => e.type === "CALL_INCOMING"), "the INVITE");
  await s.service.w.request("POST", "/api/v1/agents/me/state", {
    token: s.service.agentToken,
    body: { state: "paused" },
  });
  s.lead.command("accept");
}

describe.skipIf(!installed)("the node's media against baresip", () => {
  test("the abandon message is heard from within 2 s of the answer, whole", async () => {
    const s = await scene({
      settings: {},
      messages: { abandon: tone(880, 2_000) },
      answer: "manual",
    });
    await answeredWithNobodyFree(s);
    const heard = heardTone(await s.recording(), 880);
    // Heard from its first packet to its end.
    expect(heard?.startMs).toBeLessThan(100);
    expect((heard?.endMs ?? 0) - (heard?.startMs ?? 0)).toBeGreaterThanOrEqual(1_960);
    const cdr = await s.cdr();
    expect(cdr).toMatchObject({
      outcome: "abandoned",
      message: { kind: "abandon", played: true, completed: true },
    });
    expect(startedAfterAnswer(cdr)).toBeLessThan(2_000);
  });

  test("a key press during the message puts the number on the do-not-call list", async () => {
    const s = await scene({
      settings: {},
      messages: { abandon: tone(880, 8_000) },
      answer: "manual",
    });
    await answeredWithNobodyFree(s);
    await until(() => s.lead.events.find((e) => e.type === "CALL_ESTABLISHED"), "the answer");
    await Bun.sleep(1_000);
    s.lead.command("sndcode", "9");
    const heard = heardTone(await s.recording(), 880);
    // Cut off by the key: far less than the 8 s the message lasts.
    expect((heard?.endMs ?? 0) - (heard?.startMs ?? 0)).toBeLessThan(5_000);
    expect(await s.cdr()).toMatchObject({ opted_out: true, message: { completed: false } });
    const dnc = await s.service.w.request("GET", "/api/v1/dnc", { token: s.service.adminToken });
    expect(dnc.body.data.items).toEqual([
      expect.objectContaining({ phone: LEAD, source: "keypress" }),
    ]);
  });

  test("a machine's greeting and beep get the voicemail message after the beep, heard from its start", async () => {
    const greeting = spoken(
      "Hi, you have reached Jordan Smith. I cannot take your call right now. Please leave a message after the tone.",
    );
    const says = new Int16Array(greeting.length + 16_000 + 48_000);
    says.set(greeting, 2_400);
    const beepAt = greeting.length + 5_600;
    says.set(tone(1_000, 500), beepAt);
    const beepEndsMs = ((beepAt + 4_000) / 8000) * 1000;
    const s = await scene({
      settings: { amd_enabled: true, amd_budget_ms: 4_000, machine_action: "voicemail" },
      messages: { voicemail: tone(620, 1_500) },
      says,
    });
    await s.service.start();
    const heard = heardTone(await s.recording(), 620);
    expect(heard?.startMs).toBeLessThan(100);
    expect((heard?.endMs ?? 0) - (heard?.startMs ?? 0)).toBeGreaterThanOrEqual(1_460);
    const cdr = await s.cdr();
    expect(cdr).toMatchObject({
      outcome: "machine",
      amd: { result: "machine" },
      message: { kind: "voicemail", played: true, completed: true },
    });
    // Not before the beep had ended: the box records the message from its first word. The
    // answer is stamped when the node hears of it, a few milliseconds after the machine's audio
    // starts on a loaded machine: the bound allows that much.
    expect(startedAfterAnswer(cdr)).toBeGreaterThan(beepEndsMs - ANSWER_STAMP_SLACK_MS);
    expect(startedAfterAnswer(cdr)).toBeLessThan(beepEndsMs + 1_000);
  });

  test("a person is put through to the agent's phone with nothing played", async () => {
    const s = await scene({
      settings: { amd_enabled: true, amd_budget_ms: 4_000, machine_action: "voicemail" },
      messages: { voicemail: tone(620, 1_500), abandon: tone(880, 1_500) },
      says: hello(),
      agentPhone: true,
    });
    await s.service.start();
    await until(
      () => s.agent?.events.find((e) => e.type === "CALL_ESTABLISHED"),
      "the agent's phone to answer",
      20_000,
    );
    await Bun.sleep(1_000);
    s.lead.command("hangup");
    const heard = await s.recording();
    // What the lead heard is the agent's phone (baresip's 440 Hz), never a message.
    expect(heardTone(heard, 440)).not.toBeNull();
    expect(heardTone(heard, 620)).toBeNull();
    expect(heardTone(heard, 880)).toBeNull();
    expect(await s.cdr()).toMatchObject({
      outcome: "answered",
      amd: { result: "human" },
      message: null,
    });
  });
});
