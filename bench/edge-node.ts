/**
 * Edge node benchmark: how fast the reference node sets calls up and how many it holds at
 * once, with its CPU and memory per live call.
 *
 *   bun bench/edge-node.ts [--calls 200] [--talk 20] [--limit 120] [--json FILE]
 *
 * In this process: the real service (in-process, PGlite in memory, on 127.0.0.1), a
 * progressive campaign of `--calls` leads with as many agents ready (each with a phone URI),
 * and two scripted SIP phones on loopback written with the `sip` package (baresip takes a few
 * calls at a time, not hundreds): the trunk, whose leads answer after 200 ms and hang up after
 * `--talk` seconds, and the agents' phones, which answer every offerless INVITE. They send no
 * RTP: media never passes through the node, so it would only load this process.
 *
 * In its own process: the node (`bun edge/index.ts`), so that its CPU time (/proc/PID/stat)
 * and resident memory (/proc/PID/status) are its own. Every call is claimed, INVITEd,
 * answered, reported, bridged to an agent's phone by re-INVITE (RFC 3725), held, and ended by
 * the lead's BYE. The run stops after `--limit` seconds whatever happens.
 *
 * Reported: calls set up per second (first INVITE to the last bridge), calls held at once,
 * the node's CPU (share of one core while holding, and per call set up) and its memory per
 * live call (RSS while holding minus RSS idle, over the calls held).
 *
 * With media (`--media`), the leads' phones send RTP (20 ms of PCMU every 20 ms) and the node
 * handles it:
 * - `--media amd`: the campaign detects answering machines; each lead says "Hello?" (espeak-ng)
 *   and the node listens until its verdict, then bridges. Reported: CPU per call set up, to
 *   set beside a run without media (the difference is the detection's).
 * - `--media message`: every agent steps away once the INVITEs are out, so every answer is
 *   abandoned and hears the abandon message, `--talk` seconds long, which the node plays.
 *   "Held" are the calls playing at once; reported: the node's CPU share while they play.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { encodeWav, samples8k } from "../src/media/wav.ts";
import { dialerOnLoopback, until } from "../test/helpers/edge.ts";
import { sipPort } from "../test/helpers/ports.ts";
import { SipPhone } from "../test/helpers/sip-phone.ts";

const args = process.argv.slice(2);
const option = (name: string, fallback: string) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? (args[at + 1] ?? fallback) : fallback;
};
const CALLS = Number(option("calls", "200"));
const TALK_S = Number(option("talk", "20"));
const LIMIT_S = Number(option("limit", "120"));
const JSON_OUT = option("json", "");
const MEDIA = option("media", "none") as "none" | "amd" | "message";
const ROOT = new URL("..", import.meta.url).pathname;
const TICKS = 100; // clock ticks a second (USER_HZ)

let nodePid: number | undefined;
const limit = setTimeout(() => {
  console.error(`stopped after the ${LIMIT_S} s limit`);
  if (nodePid !== undefined) process.kill(nodePid, "SIGKILL");
  process.exit(3);
}, LIMIT_S * 1000);

function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  // utime and stime are fields 14 and 15 of the line; after the ") " they are 12th and 13th.
  return (Number(fields[11]) + Number(fields[12])) / TICKS;
}
function rssMiB(pid: number): number {
  const kib = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  return Number(kib) / 1024;
}

const trunk = await SipPhone.start(sipPort());
const agentPhones = await SipPhone.start(sipPort());
trunk.sendRtp = MEDIA !== "none";
trunk.recordRtp = false;
agentPhones.sendRtp = false;
agentPhones.recordRtp = false;
trunk.defaultBehaviour = {
  kind: "answer",
  // Time for every agent to step away before the answers, when they are to be abandoned.
  afterMs: MEDIA === "message" ? 5_000 : 200,
  hangUpAfterMs: MEDIA === "message" ? (TALK_S + 30) * 1000 : TALK_S * 1000,
  ...(MEDIA === "amd" ? { speaks: hello() } : {}),
};

/** "Hello?" by espeak-ng at 8 kHz, and a second of silence: a person's greeting. */
function hello(): Int16Array {
  const file = `/tmp/edge-bench-hello-${process.pid}.wav`;
  Bun.spawnSync(["espeak-ng", "-v", "en-us", "-w", file, "Hello?"]);
  const speech = samples8k(new Uint8Array(readFileSync(file)));
  const greeting = new Int16Array(speech.length + 8_000);
  greeting.set(speech, 1_600);
  return greeting;
}

const phones = Array.from(
  { length: CALLS },
  (_, i) => `+1415555${String(1000 + i).padStart(4, "0")}`,
);
console.error(`setting up ${CALLS} leads and agents`);
const service = await dialerOnLoopback({
  phones,
  agentUri: `sip:agent0@127.0.0.1:${agentPhones.port}`,
  maxCalls: CALLS,
});
// The other agents go straight onto the board: logging in hundreds would hash as many passwords.
const { w } = service;
for (let i = 1; i < CALLS; i++) {
  const agent = await w.user(w.acme.id, `agent${i}@acme.test`, "agent", {
    phoneUri: `sip:agent${i}@127.0.0.1:${agentPhones.port}`,
  });
  w.deps.dialer.agents.set(
    {
      userId: agent.id,
      tenantId: w.acme.id,
      state: "ready",
      campaignId: service.campaignId,
      callId: null,
    },
    Date.now(),
  );
}

if (MEDIA !== "none") {
  const settings =
    MEDIA === "amd"
      ? { amd_enabled: true, machine_action: "hangup" }
      : { regulatory_profile: "none" };
  await w.request("PATCH", `/api/v1/campaigns/${service.campaignId}`, {
    token: service.adminToken,
    body: { version: 1, ...settings },
  });
}
if (MEDIA === "message") {
  // A tone as long as the talk time: every abandoned call hears it to its end.
  const samples = new Int16Array(TALK_S * 8000);
  for (let i = 0; i < samples.length; i++)
    samples[i] = Math.round(4_000 * Math.sin((2 * Math.PI * 440 * i) / 8000));
  await w.request("PUT", `/api/v1/campaigns/${service.campaignId}/messages/abandon`, {
    token: service.adminToken,
    headers: { "content-type": "audio/wav" },
    rawBody: encodeWav(samples, 8000),
  });
}

console.error("starting the node");
const nodePort = sipPort();
const node = Bun.spawn([process.execPath, "edge/index.ts"], {
  cwd: ROOT,
  env: {
    ...process.env,
    EDGE_API_URL: service.baseUrl,
    EDGE_NODE_KEY: service.nodeKey,
    EDGE_SIP_TRUNK: `sip:127.0.0.1:${trunk.port}`,
    EDGE_SIP_ADDRESS: "127.0.0.1",
    EDGE_SIP_PORT: String(nodePort),
    EDGE_RTP_PORTS: "52000-59999",
    EDGE_DRAIN_SECONDS: "5",
  },
  stdout: "pipe",
  stderr: "inherit",
});
nodePid = node.pid;
let nodeLog = "";
void (async () => {
  for await (const chunk of node.stdout) nodeLog += new TextDecoder().decode(chunk);
})();
await until(() => nodeLog.includes("edge node up") || undefined, "the node to start", 30_000);
await Bun.sleep(1_000);
const idle = { rss: rssMiB(node.pid), cpu: cpuSeconds(node.pid) };

await service.start();
if (MEDIA === "message") {
  await until(() => trunk.calls.length >= CALLS || undefined, "every INVITE", 60_000);
  for (const agent of w.deps.dialer.agents.inCampaign(service.campaignId))
    w.deps.dialer.agents.set({ ...agent, state: "paused", campaignId: null }, Date.now());
}
let lastCpu = cpuSeconds(node.pid);
const progress = setInterval(() => {
  const cpu = cpuSeconds(node.pid);
  console.error(
    `  ${trunk.calls.length} INVITEs, ${trunk.live().length} answered and live, ` +
      `${agentPhones.calls.filter((c) => c.answerAckedAt !== null).length} bridged; ` +
      `node CPU ${Math.round(((cpu - lastCpu) / 5) * 100)}%, RSS ${Math.round(rssMiB(node.pid))} MiB`,
  );
  lastCpu = cpu;
}, 5_000);
const bridged = () => agentPhones.calls.filter((c) => c.answerAckedAt !== null).length;
// A call is set up once bridged, or with `--media message` once answered (and played to).
const setUpCalls = () => (MEDIA === "message" ? trunk.live().length : bridged());
// Every call set up, or as many as were by half the talk time.
const started = performance.now();
const answerDelayMs = MEDIA === "message" ? 5_000 : 0;
while (setUpCalls() < CALLS && performance.now() - started < answerDelayMs + (TALK_S * 1000) / 2)
  await Bun.sleep(50);
const setUp = { cpu: cpuSeconds(node.pid), at: performance.now() };
const firstInvite = Math.min(...trunk.calls.map((c) => c.invitedAt));
const lastBridge =
  MEDIA === "message"
    ? Math.max(...trunk.calls.map((c) => c.answeredAt ?? 0))
    : Math.max(...agentPhones.calls.map((c) => c.answerAckedAt ?? 0));

// Holding: every call live, nothing set up or torn down; sample for a few seconds.
const holdS = Math.max(1, Math.min(5, TALK_S - (performance.now() - lastBridge) / 1000 - 2));
const bridgedCalls = setUpCalls();
const heldAtStart = trunk.live().length;
const holdCpu0 = cpuSeconds(node.pid);
await Bun.sleep(holdS * 1000);
const holding = {
  rss: rssMiB(node.pid),
  cpuShare: (cpuSeconds(node.pid) - holdCpu0) / holdS,
  held: Math.min(heldAtStart, trunk.live().length),
};

const rows = await until(
  async () => {
    const all = await service.cdrs();
    return all.length === CALLS ? all : undefined;
  },
  "every CDR",
  (TALK_S + 30) * 1000,
);
clearInterval(progress);
node.kill("SIGTERM");
const exit = await node.exited;

const answered = rows.filter((r) =>
  MEDIA === "message"
    ? r.outcome === "abandoned" && r.message?.completed === true
    : r.outcome === "answered",
).length;
const bridgeMs = rows
  .filter((r) => r.bridge_ms !== null)
  .map((r) => r.bridge_ms as number)
  .sort((a, b) => a - b);
// From the 200 OK to the message's first packet, by the node's clock (the CDR has both).
const messageStartMs = rows
  .filter((r) => r.message?.started_at && r.answered_at)
  .map((r) => Date.parse(r.message.started_at) - Date.parse(r.answered_at as string))
  .sort((a, b) => a - b);
const result = {
  media: MEDIA,
  calls: CALLS,
  talk_s: TALK_S,
  bridged: bridgedCalls,
  setup_per_s: Math.round((bridgedCalls / ((lastBridge - firstInvite) / 1000)) * 10) / 10,
  held_at_once: holding.held,
  node_cpu_ms_per_call_set_up:
    Math.round(((setUp.cpu - idle.cpu) / Math.max(1, bridgedCalls)) * 1000 * 100) / 100,
  node_cpu_share_holding: Math.round(holding.cpuShare * 1000) / 1000,
  node_rss_idle_mib: Math.round(idle.rss * 10) / 10,
  node_rss_holding_mib: Math.round(holding.rss * 10) / 10,
  node_kib_per_live_call: Math.round(((holding.rss - idle.rss) * 1024) / Math.max(1, holding.held)),
  bridge_ms_p50: bridgeMs[Math.floor(bridgeMs.length / 2)],
  bridge_ms_p99: bridgeMs[Math.min(bridgeMs.length - 1, Math.floor(bridgeMs.length * 0.99))],
  message_start_ms_p50: messageStartMs[Math.floor(messageStartMs.length / 2)],
  message_start_ms_p99:
    messageStartMs[Math.min(messageStartMs.length - 1, Math.floor(messageStartMs.length * 0.99))],
  // Answered and bridged; with `--media message`, abandoned with the message played whole.
  cdrs_as_expected: answered,
  node_exit: exit,
};
console.table(result);
if (JSON_OUT) writeFileSync(JSON_OUT, JSON.stringify(result, null, 2));
clearTimeout(limit);
trunk.stop();
agentPhones.stop();
service.server.stop(true);
process.exit(answered === CALLS && exit === 0 ? 0 : 1);
