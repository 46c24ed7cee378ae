/**
 * Open-loop load for bench/campaigns.ts: status changes at a fixed rate over many campaigns.
 *
 *   bun bench/campaigns-rate.ts <base-url> <campaign-file> <token> <tag> <rate> <seconds> \
 *       <connections>
 *
 * `wrk` keeps every connection busy (a closed loop), so its latency is connections ÷
 * throughput whatever the server does. Here the i-th request is due at start + i ÷ rate,
 * whether or not earlier ones have been answered: at most `<connections>` are in flight, the
 * rest wait their turn, and a request's latency runs from the moment it was due, so a server
 * that falls behind shows it (no coordinated omission).
 *
 * Campaigns come from <campaign-file> ("<id> <status>" lines) and are visited in turn, each
 * with the action that is valid for the status the last request left it in, never two at
 * once on one campaign. Every request has its own Idempotency-Key (<tag>-<n>). The output has
 * the lines bench/campaigns-status.lua prints, so the caller reads both alike, and one more:
 * `BENCH_P99_BY_10S`, the p99 (µs) of the requests due in each 10 s of the run.
 */
const [baseUrl, campaignFile, token, tag, rateArg, secondsArg, connectionsArg] =
  process.argv.slice(2);
if (!baseUrl || !campaignFile || !token || !tag || !rateArg || !secondsArg || !connectionsArg) {
  console.error("usage: campaigns-rate.ts <base-url> <file> <token> <tag> <rate> <s> <conns>");
  process.exit(2);
}
const rate = Number(rateArg);
const seconds = Number(secondsArg);
const connections = Number(connectionsArg);

interface Campaign {
  url: string;
  running: boolean;
  busy: boolean;
}

const campaigns: Campaign[] = (await Bun.file(campaignFile).text())
  .split("\n")
  .filter((line) => line.trim() !== "")
  .map((line) => {
    const [id, status] = line.split(" ");
    return {
      url: `${baseUrl}/api/v1/campaigns/${id}/status`,
      running: status === "running",
      busy: false,
    };
  });

const counts: Record<string, number> = {};
const latenciesUs: number[] = [];
/** Latencies by the 10 s of the run their request was due in. */
const latenciesBy10s: number[][] = [];
let errors = 0;
let sent = 0;
let inFlight = 0;
let cursor = 0;
/** Due times (performance.now() ms) of requests waiting for a free connection. */
const waiting: number[] = [];

function nextCampaign(): Campaign | undefined {
  for (let tries = 0; tries < campaigns.length; tries++) {
    const campaign = campaigns[cursor++ % campaigns.length] as Campaign;
    if (!campaign.busy) return campaign;
  }
  return undefined;
}

async function send(dueAt: number): Promise<void> {
  const campaign = nextCampaign();
  if (!campaign) {
    waiting.unshift(dueAt);
    return;
  }
  inFlight++;
  campaign.busy = true;
  const action = campaign.running ? "pause" : "start";
  campaign.running = !campaign.running;
  sent++;
  try {
    const response = await fetch(campaign.url, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        "idempotency-key": `${tag}-${sent}`,
      },
      body: `{"action":"${action}"}`,
    });
    await response.arrayBuffer();
    counts[response.status] = (counts[response.status] ?? 0) + 1;
    const latencyUs = (performance.now() - dueAt) * 1000;
    latenciesUs.push(latencyUs);
    const tens = Math.floor((dueAt - started) / 10_000);
    latenciesBy10s[tens] ??= [];
    latenciesBy10s[tens].push(latencyUs);
  } catch {
    errors++;
  } finally {
    campaign.busy = false;
    inFlight--;
    const next = waiting.shift();
    if (next !== undefined) void send(next);
  }
}

const started = performance.now();
const endsAt = started + seconds * 1000;
const total = Math.floor(rate * seconds);
let issued = 0;
while (issued < total) {
  const now = performance.now();
  const due = Math.min(total, Math.floor(((now - started) * rate) / 1000) + 1);
  for (; issued < due; issued++) {
    const dueAt = started + (issued * 1000) / rate;
    if (inFlight < connections) void send(dueAt);
    else waiting.push(dueAt);
  }
  if (now >= endsAt) break;
  await Bun.sleep(1);
}
while (inFlight > 0 || waiting.length > 0) await Bun.sleep(5);
const elapsedUs = Math.round((performance.now() - started) * 1000);

const at = (fraction: number, sorted = latenciesUs) =>
  Math.round(sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))] ?? 0);
latenciesUs.sort((a, b) => a - b);
for (const slice of latenciesBy10s) slice?.sort((a, b) => a - b);
console.log(`BENCH_COUNTS ${JSON.stringify(counts)}`);
console.log(`BENCH_SUMMARY ${latenciesUs.length} ${elapsedUs} ${errors} 0`);
console.log(`BENCH_LATENCY ${at(0.5)} ${at(0.99)} ${Math.round(latenciesUs.at(-1) ?? 0)}`);
console.log(
  `BENCH_P99_BY_10S ${Array.from(latenciesBy10s, (slice) => at(0.99, slice ?? [])).join(" ")}`,
);

export {};
