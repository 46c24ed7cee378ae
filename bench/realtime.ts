/**
 * Realtime benchmark: many supervisor sockets of one tenant, campaign status changes through
 * the REST API, and Bun's bare pub/sub as the reference.
 *
 *   bun bench/realtime.ts [--sockets 1000] [--rate 100] [--duration 10] [--campaigns 20]
 *                         [--db postgres|pglite|both] [--rounds 3] [--json FILE]
 *                         [--cpu-prof DIR]
 *
 * Per database, a first boot of the real server (`bun src/index.ts`, its own process on
 * 127.0.0.1) seeds through the API: a tenant, a supervisor (who changes the password it was
 * created with), `--campaigns` campaigns. Each round then, for each database and for the
 * reference (bench/realtime-raw.ts, its own process):
 *
 *  1. start the server; warm it up (one status change per campaign, 100 sockets opened and
 *     closed), so that first-request compilation is neither timed nor counted per socket;
 *     read its RSS (median of five readings over a second);
 *  2. open `--sockets` sockets to `/ws/supervisor?token=` from this process, 50 at a time,
 *     wait for every snapshot, let it settle a second, read the RSS again: (after − before)
 *     ÷ sockets is the memory of an idle socket;
 *  3. for `--duration` seconds, `--rate` status changes a second, open loop (one every
 *     1/rate s): POST /api/v1/campaigns/{id}/status, `start` or `pause` as the campaign's
 *     status asks, round-robin over the campaigns, never two at once on one campaign (a tick
 *     that finds every campaign busy is skipped and counted). The reference gets
 *     POST /publish with the same fields and publishes the same message;
 *  4. the latency of a delivery is the time from the REST reply reaching this process to
 *     a socket's receipt of the matching `campaign.status` (the k-th message about a
 *     campaign on a socket matches the k-th change of that campaign). p50 and p99 are over
 *     every socket × change pair; a pair still missing 5 s after the last reply is counted.
 *     It is negative when the push arrives before the reply (the server pushes first).
 *
 * The sockets and the driver share this one process, and it shares the machine's cores with
 * the server (and PostgreSQL): with 1,000 sockets it decodes 100,000 messages a second, so the
 * client's own time is in every figure, for the app and the reference alike.
 */
import { join } from "node:path";
import {
  ADMIN_EMAIL,
  ADMIN_PASSWORD,
  Api,
  cpuSeconds,
  type DatabaseName,
  databasesOf,
  grouped,
  median,
  medianOfRoundRatios,
  option,
  progress,
  ROOT,
  round,
  rssMiB,
  type Server,
  startCluster,
  startListening,
  startServer,
  table,
  tempDir,
  treeCpuSeconds,
} from "./campaigns-import-common.ts";

const args = process.argv.slice(2);
const socketCount = Number(option(args, "sockets", "1000"));
const rate = Number(option(args, "rate", "100"));
const duration = Number(option(args, "duration", "10"));
const campaignCount = Number(option(args, "campaigns", "20"));
const rounds = Number(option(args, "rounds", "3"));
const databases = databasesOf(option(args, "db", "both"));
const jsonFile = option(args, "json", "");
const cpuProfDir = option(args, "cpu-prof", "");
const bunFlags = cpuProfDir ? ["--cpu-prof", `--cpu-prof-dir=${cpuProfDir}`, "--cpu-prof-md"] : [];

const TENANT_DOMAIN = "realtime.bench";
const SUPERVISOR_EMAIL = "supervisor@realtime.bench";
const FIRST_PASSWORD = "first supervisor password";
const SUPERVISOR_PASSWORD = "bench supervisor password";
// How many sockets are opening at once: enough to be quick, few enough for the listen backlog.
const OPENING_AT_ONCE = 50;
const DRAIN_MS = 5000;
const WARM_UP_SOCKETS = 100;
const P99_GOAL_MS = 25;
const STATUS_PREFIX = '{"type":"campaign.status"';
const SNAPSHOT_PREFIX = '{"type":"snapshot"';
const SOCKET_MEMORY_GOAL_KIB = 10;

const work = tempDir("bench-realtime-");

// ---------------------------------------------------------------- sockets

/** Every receipt of one run: `received[change * sockets + socket]`, in performance.now() ms. */
interface Receipts {
  received: Float64Array;
  /** The global index of the k-th change of a campaign, in the order changes were sent. */
  changesOf: Map<string, number[]>;
  otherMessages: number;
  unmatched: number;
}

/** Opens the sockets a few at a time and resolves when each has its snapshot. */
async function openSockets(url: string, receipts: Receipts, count: number): Promise<WebSocket[]> {
  const sockets: WebSocket[] = [];
  const open = (index: number) =>
    new Promise<WebSocket>((resolve, reject) => {
      const socket = new WebSocket(url);
      const seen = new Map<string, number>();
      const timer = setTimeout(() => reject(new Error(`socket ${index}: no snapshot`)), 30_000);
      socket.addEventListener("message", (event) => {
        const at = performance.now();
        const text = String(event.data);
        // Only the status pushes and the snapshot are matched: the other frames (the app's
        // `campaign.stats`, as many again) are counted without being decoded, so that the
        // client spends its one core on the pushes it times. Both servers write `type` first.
        if (!text.startsWith(STATUS_PREFIX) && !text.startsWith(SNAPSHOT_PREFIX)) {
          receipts.otherMessages++;
          return;
        }
        const message = JSON.parse(text) as { type: string; campaign_id?: string };
        if (message.type === "snapshot") {
          clearTimeout(timer);
          resolve(socket);
        } else if (message.type === "campaign.status" && message.campaign_id) {
          const k = seen.get(message.campaign_id) ?? 0;
          seen.set(message.campaign_id, k + 1);
          const change = receipts.changesOf.get(message.campaign_id)?.[k];
          if (change === undefined) receipts.unmatched++;
          else receipts.received[change * socketCount + index] = at;
        } else receipts.otherMessages++;
      });
      socket.addEventListener("error", () => reject(new Error(`socket ${index} failed`)));
    });
  for (let first = 0; first < count; first += OPENING_AT_ONCE) {
    const batch = Array.from({ length: Math.min(OPENING_AT_ONCE, count - first) }, (_, offset) =>
      open(first + offset),
    );
    sockets.push(...(await Promise.all(batch)));
  }
  return sockets;
}

async function closeSockets(sockets: WebSocket[]) {
  const closed = sockets.map(
    (socket) => new Promise((resolve) => socket.addEventListener("close", resolve)),
  );
  for (const socket of sockets) socket.close();
  await Promise.race([Promise.all(closed), Bun.sleep(5000)]);
}

/** Median of five RSS readings over a second: one reading jumps with the allocator. */
async function steadyRssMiB(pid: number): Promise<number> {
  const readings: number[] = [];
  for (let i = 0; i < 5; i++) {
    readings.push(rssMiB(pid) ?? Number.NaN);
    await Bun.sleep(250);
  }
  return median(readings);
}

// ---------------------------------------------------------------- load

interface Campaign {
  id: string;
  status: string;
}

type Action = "start" | "pause";

/** Sends one change for `campaign`; resolves once the reply has been read. */
type ChangeSender = (campaign: Campaign, action: Action) => Promise<void>;

const actionFor = (campaign: Campaign): Action =>
  campaign.status === "running" ? "pause" : "start";
const statusAfter = (action: Action) => (action === "start" ? "running" : "paused");

interface Drive {
  sent: number;
  skipped: number;
  /** performance.now() of each change's reply, by global change index. */
  repliedAt: number[];
  sentAt: number[];
}

/** Open-loop status changes at `rate` a second for `seconds`, never two at once per campaign. */
async function drive(campaigns: Campaign[], send: ChangeSender, receipts: Receipts) {
  const result: Drive = { sent: 0, skipped: 0, repliedAt: [], sentAt: [] };
  const busy = new Set<string>();
  const inFlight: Promise<void>[] = [];
  const interval = 1000 / rate;
  const ticks = Math.round(rate * duration);
  const started = performance.now();
  let cursor = 0;
  for (let tick = 0; tick < ticks; tick++) {
    const wait = started + tick * interval - performance.now();
    if (wait > 0) await Bun.sleep(wait);
    let campaign: Campaign | undefined;
    for (let tries = 0; tries < campaigns.length && !campaign; tries++) {
      const candidate = campaigns[cursor++ % campaigns.length] as Campaign;
      if (!busy.has(candidate.id)) campaign = candidate;
    }
    if (!campaign) {
      result.skipped++;
      continue;
    }
    const chosen = campaign;
    const change = result.sent++;
    const action = actionFor(chosen);
    receipts.changesOf.get(chosen.id)?.push(change);
    busy.add(chosen.id);
    result.sentAt[change] = performance.now();
    inFlight.push(
      send(chosen, action).then(() => {
        result.repliedAt[change] = performance.now();
        chosen.status = statusAfter(action);
        busy.delete(chosen.id);
      }),
    );
  }
  await Promise.all(inFlight);
  return result;
}

interface Latencies {
  p50: number;
  p99: number;
  max: number;
  pairs: number;
  missing: number;
  /** The same from the request being sent, which includes the status operation itself. */
  p99FromRequest: number;
}

function percentile(sorted: Float64Array, fraction: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))] as number;
}

function latencies(result: Drive, receipts: Receipts): Latencies {
  const fromReply = new Float64Array(result.sent * socketCount);
  const fromRequest = new Float64Array(result.sent * socketCount);
  let pairs = 0;
  let missing = 0;
  for (let change = 0; change < result.sent; change++) {
    const replied = result.repliedAt[change] as number;
    const sent = result.sentAt[change] as number;
    for (let socket = 0; socket < socketCount; socket++) {
      const at = receipts.received[change * socketCount + socket] as number;
      if (at === 0) {
        missing++;
        continue;
      }
      fromReply[pairs] = at - replied;
      fromRequest[pairs] = at - sent;
      pairs++;
    }
  }
  const reply = fromReply.subarray(0, pairs).sort();
  const request = fromRequest.subarray(0, pairs).sort();
  return {
    p50: percentile(reply, 0.5),
    p99: percentile(reply, 0.99),
    max: reply[pairs - 1] ?? Number.NaN,
    pairs,
    missing,
    p99FromRequest: percentile(request, 0.99),
  };
}

// ---------------------------------------------------------------- one run

interface Target {
  label: string;
  start(): Promise<Server>;
  /** The supervisor's token (the app) or nothing (the reference). */
  prepare(server: Server): Promise<{ url: string; campaigns: Campaign[]; send: ChangeSender }>;
  cpuOf(server: Server): number;
}

interface Sample {
  label: string;
  idleRssMiB: number;
  withSocketsRssMiB: number;
  perSocketKiB: number;
  afterLoadRssMiB: number;
  openSeconds: number;
  sent: number;
  skipped: number;
  otherMessages: number;
  unmatched: number;
  serverCpuPercent: number;
  clientCpuPercent: number;
  latency: Latencies;
}

async function run(target: Target): Promise<Sample> {
  const server = await target.start();
  try {
    const { url, campaigns, send } = await target.prepare(server);
    const receiptsFor = (changes: number): Receipts => ({
      received: new Float64Array(changes * socketCount),
      changesOf: new Map(campaigns.map((campaign) => [campaign.id, []])),
      otherMessages: 0,
      unmatched: 0,
    });
    // Every route is compiled on its first request (Elysia compiles a handler and its
    // validators then, which takes hundreds of milliseconds): one status change per campaign,
    // and sockets opened and closed once, before anything is measured.
    for (const campaign of campaigns) {
      const action = actionFor(campaign);
      await send(campaign, action);
      campaign.status = statusAfter(action);
    }
    await closeSockets(await openSockets(url, receiptsFor(0), WARM_UP_SOCKETS));
    await Bun.sleep(1000);
    const idleRssMiB = await steadyRssMiB(server.pid);
    const receipts = receiptsFor(Math.round(rate * duration));
    const opening = performance.now();
    const sockets = await openSockets(url, receipts, socketCount);
    const openSeconds = (performance.now() - opening) / 1000;
    await Bun.sleep(1000);
    const withSocketsRssMiB = await steadyRssMiB(server.pid);

    const cpuBefore = target.cpuOf(server);
    const clientBefore = process.cpuUsage();
    const loadStarted = performance.now();
    const result = await drive(campaigns, send, receipts);
    const loadSeconds = (performance.now() - loadStarted) / 1000;
    const serverCpu = target.cpuOf(server) - cpuBefore;
    const client = process.cpuUsage(clientBefore);
    // Stragglers: every pair should have arrived; wait a little for the last ones.
    const expected = result.sent * socketCount;
    const deadline = performance.now() + DRAIN_MS;
    const arrived = () => receipts.received.subarray(0, expected).filter((at) => at > 0).length;
    while (arrived() < expected && performance.now() < deadline) await Bun.sleep(100);
    const afterLoadRssMiB = rssMiB(server.pid) ?? Number.NaN;
    await closeSockets(sockets);
    return {
      label: target.label,
      idleRssMiB,
      withSocketsRssMiB,
      perSocketKiB: ((withSocketsRssMiB - idleRssMiB) * 1024) / socketCount,
      afterLoadRssMiB,
      openSeconds,
      sent: result.sent,
      skipped: result.skipped,
      otherMessages: receipts.otherMessages,
      unmatched: receipts.unmatched,
      serverCpuPercent: (serverCpu / loadSeconds) * 100,
      clientCpuPercent: ((client.user + client.system) / 1e6 / loadSeconds) * 100,
      latency: latencies(result, receipts),
    };
  } finally {
    await server.stop();
  }
}

// ---------------------------------------------------------------- the app and the reference

async function login(baseUrl: string, password: string): Promise<Api> {
  const body = await new Api(baseUrl).call("POST", "/api/v1/auth/login", {
    email: SUPERVISOR_EMAIL,
    password,
    tenant_domain: TENANT_DOMAIN,
  });
  return new Api(baseUrl, body.data.token as string);
}

/** First boot: the tenant, its supervisor and its campaigns, all through the API. */
async function seed(baseUrl: string): Promise<void> {
  const admin = await Api.login(baseUrl, ADMIN_EMAIL, ADMIN_PASSWORD);
  const tenant = (
    await admin.call("POST", "/api/v1/tenants", { name: "Realtime bench", domain: TENANT_DOMAIN })
  ).data.tenant as { id: string };
  await admin.call("POST", `/api/v1/users?tenant_id=${tenant.id}`, {
    email: SUPERVISOR_EMAIL,
    password: FIRST_PASSWORD,
    role: "supervisor",
  });
  // A new user must change its password before anything else answers.
  await (await login(baseUrl, FIRST_PASSWORD)).call("POST", "/api/v1/auth/me/password", {
    current_password: FIRST_PASSWORD,
    new_password: SUPERVISOR_PASSWORD,
  });
  for (let i = 0; i < campaignCount; i++) {
    await admin.call("POST", `/api/v1/campaigns?tenant_id=${tenant.id}`, {
      name: `Realtime ${i + 1}`,
    });
  }
}

function appTarget(name: DatabaseName, database: { databaseUrl?: string; dataDir?: string }) {
  return {
    label: `app on ${name === "postgres" ? "PostgreSQL 15" : "PGlite"}`,
    start: () => startServer(database, {}, { bunFlags }),
    async prepare(server: Server) {
      const supervisor = await login(server.baseUrl, SUPERVISOR_PASSWORD);
      const listed = await supervisor.call("GET", "/api/v1/campaigns?limit=500");
      const campaigns = (listed.data.items as Campaign[]).map(({ id, status }) => ({ id, status }));
      const send: ChangeSender = async (campaign, action) => {
        await supervisor.call("POST", `/api/v1/campaigns/${campaign.id}/status`, { action });
      };
      const url = `${server.baseUrl.replace("http", "ws")}/ws/supervisor?token=${supervisor.token}`;
      return { url, campaigns, send };
    },
    cpuOf: (server: Server) => (name === "postgres" ? treeCpuSeconds : cpuSeconds)(server.pid),
  } satisfies Target;
}

const rawTarget: Target = {
  label: "raw Bun.serve publish",
  start: () =>
    startListening([process.execPath, join(ROOT, "bench/realtime-raw.ts")], {
      ...(process.env as Record<string, string>),
      PORT: "0",
    }),
  async prepare(server: Server) {
    const campaigns = Array.from({ length: campaignCount }, () => ({
      id: crypto.randomUUID(),
      status: "draft",
    }));
    const send: ChangeSender = async (campaign, action) => {
      const status = action === "start" ? "running" : "paused";
      const response = await fetch(`${server.baseUrl}/publish`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ campaign_id: campaign.id, status, from: campaign.status }),
      });
      if (!response.ok) throw new Error(`publish answered ${response.status}`);
      await response.arrayBuffer();
    };
    return { url: `${server.baseUrl.replace("http", "ws")}/ws`, campaigns, send };
  },
  cpuOf: (server: Server) => cpuSeconds(server.pid),
};

// ---------------------------------------------------------------- report

function printSample(sample: Sample, round: number) {
  const l = sample.latency;
  progress(
    `[round ${round}] ${sample.label}: p50 ${l.p50.toFixed(2)} ms, p99 ${l.p99.toFixed(2)} ms ` +
      `(from request ${l.p99FromRequest.toFixed(2)}), max ${l.max.toFixed(1)} ms, ` +
      `${grouped(l.pairs)} pairs, ${l.missing} missing, ${sample.sent} sent, ${sample.skipped} skipped; ` +
      `RSS ${sample.idleRssMiB.toFixed(1)} → ${sample.withSocketsRssMiB.toFixed(1)} MiB ` +
      `(${sample.perSocketKiB.toFixed(2)} KiB/socket); CPU server ${sample.serverCpuPercent.toFixed(0)}%, ` +
      `client ${sample.clientCpuPercent.toFixed(0)}%`,
  );
}

function report(samples: Map<string, Sample[]>, started: number) {
  const git = Bun.spawnSync({ cmd: ["git", "describe", "--always", "--dirty"], cwd: ROOT });
  const minutes = ((Date.now() - started) / 60_000).toFixed(1);
  console.log(
    `${grouped(socketCount)} sockets, ${rate} changes/s for ${duration} s over ${campaignCount} campaigns; ` +
      `medians of ${rounds} rounds; revision ${git.stdout.toString().trim()}, bun ${Bun.version}, ` +
      `${navigator.hardwareConcurrency} cores, ${minutes} min in all\n`,
  );
  const med = (list: Sample[], pick: (sample: Sample) => number) => median(list.map(pick));
  const rows = [...samples.values()].map((list) => [
    list[0]?.label ?? "",
    round(
      med(list, (s) => s.latency.p50),
      2,
    ),
    round(
      med(list, (s) => s.latency.p99),
      2,
    ),
    round(
      med(list, (s) => s.latency.p99FromRequest),
      2,
    ),
    round(
      med(list, (s) => s.latency.max),
      1,
    ),
    grouped(med(list, (s) => s.latency.pairs)),
    med(list, (s) => s.latency.missing),
    med(list, (s) => s.skipped),
    med(list, (s) => s.otherMessages),
    round(
      med(list, (s) => s.idleRssMiB),
      1,
    ),
    round(
      med(list, (s) => s.withSocketsRssMiB),
      1,
    ),
    round(
      med(list, (s) => s.perSocketKiB),
      2,
    ),
    round(med(list, (s) => s.serverCpuPercent)),
    round(med(list, (s) => s.clientCpuPercent)),
  ]);
  console.log(
    table(
      [
        "target",
        "p50 ms",
        "p99 ms",
        "p99 from request ms",
        "max ms",
        "pairs",
        "missing",
        "skipped ticks",
        "other messages",
        "RSS idle MiB",
        "RSS with sockets MiB",
        "KiB per idle socket",
        "server CPU %",
        "client CPU %",
      ],
      rows,
    ),
  );
  const raw = samples.get(rawTarget.label) ?? [];
  const rawP99 = med(raw, (s) => s.latency.p99);
  console.log();
  for (const [label, list] of samples) {
    if (label === rawTarget.label) continue;
    const p99 = med(list, (s) => s.latency.p99);
    const perSocket = med(list, (s) => s.perSocketKiB);
    const perRound = medianOfRoundRatios(
      list.map((sample) => sample.latency.p99),
      raw.map((sample) => sample.latency.p99),
    );
    console.log(
      `${label}: p99 ${round(p99, 2)} ms (${p99 < P99_GOAL_MS ? "meets" : "misses"} < ${P99_GOAL_MS} ms), ` +
        `${round(perSocket, 2)} KiB per idle socket (${perSocket < SOCKET_MEMORY_GOAL_KIB ? "meets" : "misses"} < ${SOCKET_MEMORY_GOAL_KIB} KiB), ` +
        `p99 ÷ raw p99 = ${round(p99 / rawP99, 2)} (median of the rounds' own ratios ${round(perRound, 2)})`,
    );
  }
  if (jsonFile) Bun.write(jsonFile, JSON.stringify(Object.fromEntries(samples), null, 2));
}

async function main() {
  const started = Date.now();
  const targets: Target[] = [];
  for (const name of databases) {
    const database =
      name === "postgres"
        ? { databaseUrl: startCluster().url() }
        : { dataDir: join(work, "pglite-data") };
    progress(`seeding ${name}: a tenant, a supervisor, ${campaignCount} campaigns`);
    const server = await startServer(database);
    try {
      await seed(server.baseUrl);
    } finally {
      await server.stop();
    }
    targets.push(appTarget(name, database));
  }
  targets.push(rawTarget);
  const samples = new Map<string, Sample[]>(targets.map((target) => [target.label, []]));
  for (let roundNumber = 1; roundNumber <= rounds; roundNumber++) {
    for (const target of targets) {
      const sample = await run(target);
      samples.get(target.label)?.push(sample);
      printSample(sample, roundNumber);
    }
  }
  report(samples, started);
}

await main().then(
  () => process.exit(0),
  (error) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  },
);
