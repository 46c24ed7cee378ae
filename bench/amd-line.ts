/**
 * Answering-machine detection over the whole line: each call of the synthetic corpus is
 * played by Debian's baresip as the called phone, through the reference node, against the
 * real service, and the verdict read from the call's CDR.
 *
 *   bun bench/amd-line.ts [--seed 1] [--count 240] [--pairs 4] [--json FILE]
 *
 * `--pairs` node-and-phone pairs run side by side, each a call at a time: a baresip that
 * answers by hand, switches its audio source (`ausrc aufile,<file>`) to the call's file as it
 * answers, and a node whose only trunk it is. Reported as `bench/amd.ts` reports the
 * detector alone: the confusion matrix of each half, machines found, people taken for
 * machines, and the verdict's time after the greeting starts (from the CDR's `amd.ms`, which
 * counts from the answer).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AmdResult } from "../edge/media/amd.ts";
import { encodeWav } from "../src/media/wav.ts";
import { Baresip, baresipInstalled } from "../test/helpers/baresip.ts";
import { dialerOnLoopback, startSipNode, until } from "../test/helpers/edge.ts";
import { sipPort } from "../test/helpers/ports.ts";
import { type CorpusCall, generateCorpus } from "../test/media/amd-corpus.ts";
import { score } from "../test/media/amd-evaluation.ts";
import { option } from "./campaigns-import-common.ts";

const args = process.argv.slice(2);
const SEED = Number(option(args, "seed", "1"));
const COUNT = Number(option(args, "count", "240"));
const PAIRS = Number(option(args, "pairs", "4"));
const JSON_OUT = option(args, "json", "");

if (!baresipInstalled()) {
  console.error("baresip is not installed (apt-get install baresip-core)");
  process.exit(2);
}

console.error(`generating the corpus (seed ${SEED}, ${COUNT} calls)`);
const corpus = await generateCorpus({ seed: SEED, count: COUNT });
const phones = corpus.map((_, i) => `+1415556${String(1000 + i).padStart(4, "0")}`);
const callOf = new Map(phones.map((phone, i) => [phone, corpus[i] as CorpusCall]));

const service = await dialerOnLoopback({ phones, agentUri: null, maxCalls: PAIRS });
const { w } = service;
await w.request("PATCH", `/api/v1/campaigns/${service.campaignId}`, {
  token: service.adminToken,
  body: { version: 1, amd_enabled: true, machine_action: "hangup", dial_ratio: 5 },
});
// Agents enough to pace PAIRS calls at once; a person's call finds no phone to bridge to, and
// ends (its agent is let go at once below): only the verdict matters here.
for (let i = 1; i < PAIRS; i++) {
  const agent = await w.user(w.acme.id, `agent${i}@acme.test`, "agent");
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

const dir = mkdtempSync(join(tmpdir(), "amd-line-"));
const stops: (() => Promise<void> | void)[] = [];
// Whatever happens, the phones go with this process.
process.on("exit", () => {
  for (const stop of stops) void stop();
});
const silence = join(dir, "silence.wav");
writeFileSync(silence, encodeWav(new Int16Array(8000), 8000));
for (let pair = 0; pair < PAIRS; pair++) {
  const base = 46_000 + pair * 200 + Math.floor(Math.random() * 50) * 2;
  const phone = await Baresip.start({
    sipPort: sipPort(),
    ctrlPort: sipPort(),
    rtpPorts: [base, base + 98],
    accounts: phones.map((user) => ({ user, answer: "manual" as const })),
    says: silence,
  });
  phone.onEvent((event) => {
    if (process.env.AMD_LINE_DEBUG) console.error(pair, JSON.stringify(event));
    if (event.type !== "CALL_INCOMING") return;
    const user = /^sip:([^@]+)@/.exec(event.accountaor ?? "")?.[1];
    const call = user ? callOf.get(user) : undefined;
    if (!call) return;
    phone.command("accept");
    phone.command("ausrc", `aufile,${call.file}`);
  });
  const pairKey = (
    await w.request("POST", "/api/v1/edge-nodes", {
      token: service.adminToken,
      body: { name: `edge ${pair}`, max_concurrent_calls: 1 },
    })
  ).body.data.key as string;
  const node = await startSipNode({
    baseUrl: service.baseUrl,
    nodeKey: pairKey,
    port: sipPort(),
    trunkPort: phone.sipPort,
    maxRingSeconds: 10,
  });
  stops.push(
    () => node.stop(1_000),
    () => phone.stop(),
  );
}

const started = performance.now();
let reported = 0;
await service.start();
const cdrs = await until(
  async () => {
    const rows = await service.cdrs();
    // An agent whose bridge failed wraps the call up: a supervisor's disposition frees them.
    for (const row of rows.filter((r) => r.outcome === "answered" && !r.disposition))
      await w.request("POST", `/api/v1/calls/${row.call_id}/disposition`, {
        token: service.adminToken,
        body: { disposition: "no_contact" },
      });
    if (rows.length !== reported) {
      reported = rows.length;
      console.error(`  ${reported} of ${COUNT} calls`);
    }
    return rows.length >= COUNT ? rows : undefined;
  },
  "every call's CDR",
  COUNT * 15_000,
);
const seconds = (performance.now() - started) / 1000;
for (const stop of stops) await stop();
service.server.stop(true);
rmSync(dir, { recursive: true, force: true });

const results = corpus.map((call, i) => {
  const cdr = cdrs.find((row) => row.phone === phones[i]);
  const amd = cdr?.amd as { result: string; ms: number } | null | undefined;
  const result = (amd?.result ?? "unknown") as AmdResult;
  return {
    call,
    verdict: { result, confidence: 0, ms: amd?.ms ?? 0, reason: "" },
    cue: null,
    cpuMs: 0,
  };
});
const halves = {
  tuning: score(results.filter((_, i) => i % 2 === 0)),
  heldOut: score(results.filter((_, i) => i % 2 === 1)),
};
const percent = (share: number) => `${(share * 100).toFixed(1)}%`;
console.log(
  `seed ${SEED}, ${COUNT} calls over the line, ${PAIRS} at a time, ${seconds.toFixed(0)} s`,
);
for (const [name, half] of Object.entries(halves)) {
  console.log(`\n${name}: truth → verdicts`);
  console.table(half.confusion);
  console.log(
    `machines found ${percent(half.machinesFound)}, people taken for machines ` +
      `${percent(half.peopleTakenForMachines)}, verdicts as expected ${percent(half.accuracy)}, ` +
      `after the greeting starts p50 ${half.afterGreeting.p50} ms, p95 ${half.afterGreeting.p95} ms`,
  );
}
if (JSON_OUT) writeFileSync(JSON_OUT, JSON.stringify(halves, null, 2));
process.exit(0);
