import { afterEach, describe, expect, test } from "bun:test";
import { parseRtp } from "../../edge/media/rtp.ts";
import { mulawToLinear } from "../../src/media/g711.ts";
import { encodeWav } from "../../src/media/wav.ts";
import { concat, espeakInstalled, powerShareAt, spoken, tone } from "../helpers/audio.ts";
import { dialerOnLoopback, startSipNode, until } from "../helpers/edge.ts";
import { sipPort } from "../helpers/ports.ts";
import { type PhoneCall, SipPhone } from "../helpers/sip-phone.ts";

/**
 * The node hears and plays a lead's audio: the real service in-process on loopback, scripted
 * SIP phones as the trunk's lead (which records every RTP packet it hears, and may speak a
 * greeting made with espeak-ng) and as the agent's phone.
 */

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const LEAD = "+14155552671";
const speaks = espeakInstalled();

async function scene(settings: Record<string, unknown>, messages: Record<string, Int16Array>) {
  const trunk = await SipPhone.start(sipPort());
  const agentPhone = await SipPhone.start(sipPort());
  cleanups.push(
    () => trunk.stop(),
    () => agentPhone.stop(),
  );
  const service = await dialerOnLoopback({
    phones: [LEAD],
    agentUri: `sip:agent@127.0.0.1:${agentPhone.port}`,
  });
  cleanups.push(() => service.server.stop(true));
  const { w, adminToken, campaignId } = service;
  for (const [kind, samples] of Object.entries(messages)) {
    const put = await w.request("PUT", `/api/v1/campaigns/${campaignId}/messages/${kind}`, {
      token: adminToken,
      headers: { "content-type": "audio/wav" },
      rawBody: encodeWav(samples, 8000),
    });
    expect(put.status).toBe(201);
  }
  const patched = await w.request("PATCH", `/api/v1/campaigns/${campaignId}`, {
    token: adminToken,
    body: { version: 1, ...settings },
  });
  expect(patched.status).toBe(200);
  const edge = await startSipNode({
    baseUrl: service.baseUrl,
    nodeKey: service.nodeKey,
    port: sipPort(),
    trunkPort: trunk.port,
    maxRingSeconds: 10,
  });
  cleanups.push(() => edge.stop(1_000));
  const cdr = () =>
    until(async () => (await service.cdrs())[0], "the call's CDR", 20_000) as Promise<{
      outcome: string;
      amd: { result: string } | null;
      message: { kind: string; played: boolean; completed: boolean } | null;
      opted_out: boolean;
    }>;
  return { trunk, agentPhone, service, edge, cdr };
}

/** The PCMU audio the lead heard from the node's port, in order, and when it began. */
function heardFromNode(call: PhoneCall, nodePort: number) {
  const fromNode = call.heard.filter(
    (entry) => entry.from === `127.0.0.1:${nodePort}` && parseRtp(entry.packet)?.payloadType === 0,
  );
  const samples = fromNode.flatMap((entry) =>
    [...(parseRtp(entry.packet)?.payload ?? [])].map(mulawToLinear),
  );
  return { packets: fromNode.length, firstAt: fromNode[0]?.at ?? null, samples };
}

/** Pauses the agent once the lead's phone rings: its answer then finds nobody free. */
async function agentStepsAway(s: Awaited<ReturnType<typeof scene>>) {
  await until(() => s.trunk.calls[0], "the INVITE to the lead");
  await s.service.w.request("POST", "/api/v1/agents/me/state", {
    token: s.service.agentToken,
    body: { state: "paused" },
  });
}

describe("the node's media", () => {
  test("an abandoned call hears the abandon message from within 2 s of the answer, whole, then the node hangs up", async () => {
    const message = tone(440, 1_500);
    const s = await scene({}, { abandon: message });
    s.trunk.defaultBehaviour = { kind: "answer", afterMs: 1_000 };
    await s.service.start();
    await agentStepsAway(s);
    const call = await until(() => s.trunk.calls[0], "the lead's call");
    const nodePort = (call.target as { port: number }).port;
    await until(() => call.ended === "bye-received", "the node's BYE", 10_000);
    const heard = heardFromNode(call, nodePort);
    expect(heard.firstAt).not.toBeNull();
    expect((heard.firstAt as number) - (call.answeredAt as number)).toBeLessThan(2_000);
    // Every 20 ms of the message arrived (and 300 ms of silence after it), and it is the
    // message: a 440 Hz tone.
    expect(heard.packets).toBe(75 + 15);
    expect(powerShareAt(heard.samples.slice(0, 75 * 160), 440)).toBeGreaterThan(0.8);
    const cdr = await s.cdr();
    expect(cdr).toMatchObject({
      outcome: "abandoned",
      message: { kind: "abandon", played: true, completed: true },
      opted_out: false,
    });
  });

  test("the opt-out key during the message puts the number on the do-not-call list", async () => {
    const s = await scene({}, { abandon: tone(440, 5_000) });
    s.trunk.defaultBehaviour = { kind: "answer", afterMs: 1_000 };
    await s.service.start();
    await agentStepsAway(s);
    const call = await until(() => s.trunk.calls[0], "the lead's call");
    await until(() => call.heard.some((entry) => entry.packet.length > 100), "the message", 5_000);
    call.pressKey("9");
    await until(() => call.ended === "bye-received", "the node's BYE", 10_000);
    const cdr = await s.cdr();
    expect(cdr).toMatchObject({
      opted_out: true,
      message: { kind: "abandon", played: true, completed: false },
    });
    const dnc = await s.service.w.request("GET", "/api/v1/dnc", { token: s.service.adminToken });
    expect(dnc.body.data.items).toEqual([
      expect.objectContaining({ phone: LEAD, source: "keypress" }),
    ]);
  });

  test.skipIf(!speaks)(
    "a machine's greeting with a beep gets the voicemail message after the beep, from its first packet",
    async () => {
      const greeting = spoken(
        "Hi, you have reached the voicemail of Jordan Smith. I cannot come to the phone right now. Please leave a message after the tone.",
      );
      const beep = tone(1_000, 500);
      const speaks = concat(tone(0, 300), greeting, tone(0, 400), beep);
      const beepEndsMs = (speaks.length / 8000) * 1000;
      const voicemail = tone(620, 1_000);
      const s = await scene(
        { amd_enabled: true, amd_budget_ms: 4_000, machine_action: "voicemail" },
        { voicemail },
      );
      s.trunk.defaultBehaviour = { kind: "answer", afterMs: 300, speaks };
      await s.service.start();
      const call = await until(() => s.trunk.calls[0], "the lead's call");
      const nodePort = await until(() => call.target?.port, "the node's offer");
      await until(() => call.ended === "bye-received", "the node's BYE", 30_000);
      const heard = heardFromNode(call, nodePort);
      expect(heard.firstAt).not.toBeNull();
      // Not a packet before the beep ended: the box records the message from its first word.
      expect((heard.firstAt as number) - (call.answeredAt as number)).toBeGreaterThan(beepEndsMs);
      expect(heard.packets).toBe(50 + 15);
      expect(powerShareAt(heard.samples.slice(0, 50 * 160), 620)).toBeGreaterThan(0.8);
      expect(s.agentPhone.calls).toHaveLength(0);
      const cdr = await s.cdr();
      expect(cdr).toMatchObject({
        outcome: "machine",
        amd: { result: "machine" },
        message: { kind: "voicemail", played: true, completed: true },
      });
    },
  );

  test.skipIf(!speaks)(
    "a person is put through to the agent's phone, and hears nothing from the node",
    async () => {
      const s = await scene(
        { amd_enabled: true, amd_budget_ms: 4_000, machine_action: "voicemail" },
        { voicemail: tone(620, 1_000), abandon: tone(440, 1_000) },
      );
      s.trunk.defaultBehaviour = {
        kind: "answer",
        afterMs: 300,
        hangUpAfterMs: 6_000,
        speaks: concat(tone(0, 400), spoken("Hello?")),
      };
      s.agentPhone.defaultBehaviour = { kind: "answer", afterMs: 100 };
      await s.service.start();
      const call = await until(() => s.trunk.calls[0], "the lead's call");
      const nodePort = await until(() => call.target?.port, "the node's offer");
      await until(() => s.agentPhone.calls[0], "the INVITE to the agent's phone", 10_000);
      await until(() => call.ended !== null, "the end of the call", 15_000);
      expect(heardFromNode(call, nodePort).packets).toBe(0);
      const cdr = await s.cdr();
      expect(cdr).toMatchObject({ outcome: "answered", amd: { result: "human" }, message: null });
    },
  );
});
