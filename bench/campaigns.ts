/**
 * Campaign status benchmark, on PGlite and on PostgreSQL 15, against the real server.
 *
 *   bun bench/campaigns.ts [--db pglite|postgres|both] [--duration 10] [--rounds 3]
 *                          [--warmup 3] [--connections 64] [--threads 2] [--campaigns 1000]
 *                          [--startup-campaigns 10000] [--rate 3000] [--cpu-prof DIR]
 *                          [--json FILE] [--app DIR] [--pg-settings name=value,…]
 *
 * Each database gets a fresh database and its own server process (`bun src/index.ts`, PORT=0
 * on 127.0.0.1), logged in as the bootstrap platform admin, which works in its own tenant.
 * Load comes from `wrk` with bench/campaigns-status.lua (wrk needs less CPU than a JavaScript
 * client on this small machine):
 *
 *  (a) POST /api/v1/campaigns/{id}/status, each request with its own Idempotency-Key, from
 *      `--connections` connections for `--duration` seconds: (i) all on one campaign,
 *      alternating start and pause, so that requests racing each other meet 409
 *      invalid_transition (200 and 409 are counted apart); (ii) spread over `--campaigns`
 *      campaigns, where every request is a valid transition. Before each run the campaigns'
 *      statuses are read from the API, so that the script knows which action is valid;
 *      (iii) the same at a fixed `--rate` (open loop, bench/campaigns-rate.ts): with every
 *      connection always busy, as in (i) and (ii), latency is connections ÷ throughput
 *      whatever the server does, so the latency at a given load is measured apart, from the
 *      moment each request was due, with at most `--connections` in flight;
 *  (b) one request replayed (same key, same body; the actor answers it from memory) against
 *      bare Elysia routes answering small JSON in their own `bun` process
 *      (bench/campaigns-bare.ts): a `GET`, and a `POST` given the replay's headers and body;
 *  (c) start-up: `--startup-campaigns` campaigns (half running, half draft) and 100 open
 *      idempotency keys are inserted with SQL while the server is down; the server is then
 *      started and timed from spawn until it answers HTTP (it has logged "campaign actors
 *      restored" before it listens). RSS is read after start with those campaigns and with none.
 *
 * Rounds are interleaved ((i), (ii), (i), (ii)…; replay, bare, replay, bare…) and the report
 * gives medians. A warm-up run precedes the measured rounds of each kind. `--app DIR` runs the
 * `src/index.ts` of another checkout (a copy that stays put while this one is edited).
 * `--pg-settings` starts the PostgreSQL cluster with those settings instead of the stock ones.
 */
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import postgres from "postgres";
import {
  Api,
  type Cluster,
  cpuSeconds,
  createCampaigns,
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
  sampleRss,
  setAppRoot,
  startCluster,
  startListening,
  startServer,
  table,
  tempDir,
  treeCpuSeconds,
  waitForHttp,
  writeCampaignFile,
} from "./campaigns-import-common.ts";

const args = process.argv.slice(2);
const databases = databasesOf(option(args, "db", "both"));
const duration = Number(option(args, "duration", "10"));
const rounds = Number(option(args, "rounds", "3"));
const warmup = Number(option(args, "warmup", "3"));
const connections = Number(option(args, "connections", "64"));
const threads = Number(option(args, "threads", "2"));
const campaignCount = Number(option(args, "campaigns", "1000"));
const startupCampaigns = Number(option(args, "startup-campaigns", "10000"));
const pacedRate = Number(option(args, "rate", "3000"));
const jsonFile = option(args, "json", "");
setAppRoot(option(args, "app", ""));
const cpuProfDir = option(args, "cpu-prof", "");
const pgSettings = option(args, "pg-settings", "").split(",").filter(Boolean);
const bunFlags = cpuProfDir ? ["--cpu-prof", `--cpu-prof-dir=${cpuProfDir}`, "--cpu-prof-md"] : [];

const LUA = join(ROOT, "bench/campaigns-status.lua");
const PACED = join(ROOT, "bench/campaigns-rate.ts");
const OPEN_KEYS = 100;
const work = tempDir("bench-campaigns-");

if (!Bun.which("wrk")) {
  console.error("wrk is required: apt-get install wrk");
  process.exit(2);
}

// ---------------------------------------------------------------- wrk

interface LoadResult {
  requests: number;
  seconds: number;
  counts: Record<string, number>;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  socketErrors: number;
  peakRss: number;
  /** CPU seconds used during the run by the server, the PostgreSQL cluster and the client. */
  serverCpu: number;
  databaseCpu: number;
  clientCpu: number;
}

async function load(
  server: Server,
  mode: "one" | "spread" | "paced" | "replay" | "get" | "post",
  file: string,
  token: string,
  tag: string,
  seconds: number,
  action = "",
): Promise<LoadResult> {
  const wrk = [
    "wrk",
    `-t${threads}`,
    `-c${connections}`,
    `-d${seconds}s`,
    "--timeout",
    "10s",
    "-s",
    LUA,
    server.baseUrl,
    "--",
    mode,
    file,
    token,
    tag,
    String(threads),
  ];
  if (action) wrk.push(action);
  const cmd =
    mode === "paced"
      ? [
          process.execPath,
          PACED,
          server.baseUrl,
          file,
          token,
          tag,
          String(pacedRate),
          String(seconds),
          String(connections),
        ]
      : wrk;
  const bareRoute = mode === "get" || mode === "post";
  const postmaster = !bareRoute && cluster ? cluster.postmasterPid() : undefined;
  const databaseCpu = () => (postmaster === undefined ? 0 : treeCpuSeconds(postmaster));
  const memory = sampleRss(server.pid, 100);
  const cpuBefore = [cpuSeconds(server.pid), databaseCpu()] as const;
  const child = Bun.spawn(cmd, { stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  const peakRss = memory.stop().peak;
  const serverCpu = cpuSeconds(server.pid) - cpuBefore[0];
  const dbCpu = databaseCpu() - cpuBefore[1];
  const usage = child.resourceUsage();
  const clientCpu = usage ? Number(usage.cpuTime.user + usage.cpuTime.system) / 1e6 : Number.NaN;
  if (code !== 0) throw new Error(`${cmd[0]} exited with ${code}: ${err}${out}`);
  const counts = JSON.parse(/^BENCH_COUNTS (.*)$/m.exec(out)?.[1] ?? "{}") as Record<
    string,
    number
  >;
  const summary = /^BENCH_SUMMARY (\d+) (\d+) (\d+) (\d+)$/m.exec(out);
  const latency = /^BENCH_LATENCY (\d+) (\d+) (\d+)$/m.exec(out);
  if (!summary || !latency) throw new Error(`unexpected wrk output:\n${out}\n${err}`);
  return {
    requests: Number(summary[1]),
    seconds: Number(summary[2]) / 1e6,
    counts,
    socketErrors: Number(summary[3]) + Number(summary[4]),
    p50Ms: Number(latency[1]) / 1000,
    p99Ms: Number(latency[2]) / 1000,
    maxMs: Number(latency[3]) / 1000,
    peakRss,
    serverCpu,
    databaseCpu: dbCpu,
    clientCpu,
  };
}

const perSecond = (result: LoadResult, status?: string) =>
  (status === undefined ? result.requests : (result.counts[status] ?? 0)) / result.seconds;

const otherAnswers = (result: LoadResult) =>
  Object.entries(result.counts)
    .filter(([status]) => status !== "200" && status !== "409")
    .reduce((sum, [, n]) => sum + n, 0);

// ---------------------------------------------------------------- databases

interface Location {
  database: DatabaseName;
  env: { databaseUrl?: string; dataDir?: string };
  /** Runs SQL while the server is down (PGlite allows one process at a time). */
  sql(text: string, params?: unknown[]): Promise<void>;
}

let cluster: Cluster | undefined;

function freshLocation(database: DatabaseName, purpose: string): Promise<Location> {
  if (database === "pglite") {
    const dataDir = tempDir(`bench-campaigns-${purpose}-`);
    return Promise.resolve({
      database,
      env: { dataDir },
      async sql(text, params = []) {
        const db = await PGlite.create(dataDir);
        try {
          await db.query(text, params);
        } finally {
          await db.close();
        }
      },
    });
  }
  cluster ??= startCluster(pgSettings);
  const name = `bench_${purpose}_${Date.now()}`;
  const url = cluster.url(name);
  return (async () => {
    const admin = postgres((cluster as Cluster).url(), { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database ${name}`);
    await admin.end();
    return {
      database,
      env: { databaseUrl: url },
      async sql(text, params = []) {
        const client = postgres(url, { max: 1, onnotice: () => {} });
        try {
          await client.unsafe(text, params as never[]);
        } finally {
          await client.end();
        }
      },
    };
  })();
}

// ---------------------------------------------------------------- (a) and (b)

interface StatusResults {
  one: LoadResult[];
  spread: LoadResult[];
  paced: LoadResult[];
  replay: LoadResult[];
  bare: LoadResult[];
  barePost: LoadResult[];
}

async function statusOperations(database: DatabaseName): Promise<StatusResults> {
  const location = await freshLocation(database, "status");
  const server = await startServer(location.env, {}, { bunFlags });
  const bare = await startListening([process.execPath, "bench/campaigns-bare.ts"], {
    ...(process.env as Record<string, string>),
    PORT: "0",
  });
  try {
    const api = await Api.login(server.baseUrl);
    const [single, replayed] = await createCampaigns(api, 2);
    progress(`${database}: creating ${campaignCount} campaigns`);
    const spread = await createCampaigns(api, campaignCount);
    const oneFile = join(work, `${database}-one.txt`);
    const spreadFile = join(work, `${database}-spread.txt`);
    const replayFile = join(work, `${database}-replay.txt`);
    await Bun.write(oneFile, `${single} draft\n`);
    await Bun.write(replayFile, `${replayed} draft\n`);
    const tag = (name: string) => `${name}-${Date.now()}`;

    const one: LoadResult[] = [];
    const many: LoadResult[] = [];
    const paced: LoadResult[] = [];
    progress(`${database}: warm-up`);
    await load(server, "one", oneFile, api.token, tag("warm"), warmup);
    await writeCampaignFile(api, spread, spreadFile);
    await load(server, "spread", spreadFile, api.token, tag("warm"), warmup);
    await writeCampaignFile(api, spread, spreadFile);
    await load(server, "paced", spreadFile, api.token, tag("warm"), warmup);
    for (let index = 1; index <= rounds; index++) {
      one.push(await load(server, "one", oneFile, api.token, tag(`one${index}`), duration));
      await Bun.sleep(500);
      await writeCampaignFile(api, spread, spreadFile);
      many.push(await load(server, "spread", spreadFile, api.token, tag(`many${index}`), duration));
      await Bun.sleep(500);
      await writeCampaignFile(api, spread, spreadFile);
      paced.push(
        await load(server, "paced", spreadFile, api.token, tag(`paced${index}`), duration),
      );
      await Bun.sleep(500);
      const last = paced.at(-1) as LoadResult;
      progress(
        `${database} round ${index}: one campaign ${grouped(perSecond(one.at(-1) as LoadResult))}/s, ` +
          `${campaignCount} campaigns ${grouped(perSecond(many.at(-1) as LoadResult))}/s, ` +
          `at ${grouped(pacedRate)}/s: ${grouped(perSecond(last))}/s, p99 ${round(last.p99Ms, 1)} ms`,
      );
    }

    const replay: LoadResult[] = [];
    const bareRuns: LoadResult[] = [];
    const barePosts: LoadResult[] = [];
    const prime = async (key: string, action: string) => {
      const response = await fetch(`${server.baseUrl}/api/v1/campaigns/${replayed}/status`, {
        method: "POST",
        headers: { ...api.headers, "content-type": "application/json", "idempotency-key": key },
        body: JSON.stringify({ action }),
      });
      if (response.status !== 200) throw new Error(`priming ${key}: ${await response.text()}`);
    };
    // The campaign alternates running and paused, so that each key's first answer is a 200.
    const actions = ["start", "pause"];
    await prime("replay-warm", "start");
    await load(server, "replay", replayFile, api.token, "replay-warm", warmup, "start");
    await load(bare, "get", "/bare", "-", "-", warmup);
    await load(bare, "post", "/bare", api.token, "bare-warm", warmup, "start");
    for (let index = 1; index <= rounds; index++) {
      const key = tag(`replay${index}`);
      const action = actions[index % 2] as string;
      await prime(key, action);
      replay.push(await load(server, "replay", replayFile, api.token, key, duration, action));
      bareRuns.push(await load(bare, "get", "/bare", "-", "-", duration));
      barePosts.push(await load(bare, "post", "/bare", api.token, key, duration, action));
      progress(
        `${database} round ${index}: replay ${grouped(perSecond(replay.at(-1) as LoadResult))}/s, ` +
          `bare GET ${grouped(perSecond(bareRuns.at(-1) as LoadResult))}/s, ` +
          `bare POST ${grouped(perSecond(barePosts.at(-1) as LoadResult))}/s`,
      );
    }
    return { one, spread: many, paced, replay, bare: bareRuns, barePost: barePosts };
  } finally {
    await bare.stop();
    await server.stop();
  }
}

// ---------------------------------------------------------------- (c) start-up

interface StartRun {
  campaigns: number;
  restored: number;
  restoreMs: number;
  startMs: number;
  rss: number;
}

async function timedStart(location: Location): Promise<StartRun> {
  const server = await startServer(location.env);
  try {
    const answeredAt = await waitForHttp(server.baseUrl);
    if (!server.restored || server.restoredAt === undefined)
      throw new Error("the server listened without logging campaign actors restored");
    const startMs = Math.max(answeredAt, server.restoredAt) - server.spawnedAt;
    // Resident memory once it has settled: the median of five readings over the next second.
    const readings: number[] = [];
    for (let index = 0; index < 5; index++) {
      await Bun.sleep(200);
      readings.push(rssMiB(server.pid) ?? Number.NaN);
    }
    return {
      campaigns: 0,
      restored: server.restored.campaigns,
      restoreMs: server.restored.milliseconds,
      startMs,
      rss: median(readings),
    };
  } finally {
    await server.stop();
  }
}

const INSERT_CAMPAIGNS = `insert into campaigns (id, tenant_id, name, status, dial_mode, caller_id,
    calling_window_start, calling_window_end, max_attempts, retry_delay_seconds, dial_ratio,
    max_abandon_rate, version, created_at, updated_at)
  select gen_random_uuid(), $1::uuid, 'Start-up ' || i, case when i % 2 = 0 then 'running' else 'draft' end,
    'progressive', null, '08:00', '21:00', 3, 3600, 1, 0.03, case when i % 2 = 0 then 2 else 1 end,
    now(), now()
  from generate_series(1, $2::int) as i`;

const INSERT_KEYS = `insert into campaign_idempotency_keys (campaign_id, key, body_hash, response_status,
    response_body, expires_at)
  select id, 'startup-' || id, 'bench', 200, '{"status":"success","data":{}}'::jsonb,
    now() + interval '1 hour'
  from campaigns where status = 'running' order by id limit $1::int`;

async function startup(database: DatabaseName) {
  const location = await freshLocation(database, "startup");
  const first = await startServer(location.env);
  let tenantId: string;
  try {
    tenantId = await (await Api.login(first.baseUrl)).tenantId();
  } finally {
    await first.stop();
  }
  const empty: StartRun[] = [];
  for (let index = 0; index < rounds; index++) empty.push(await timedStart(location));
  await location.sql(INSERT_CAMPAIGNS, [tenantId, startupCampaigns]);
  await location.sql(INSERT_KEYS, [OPEN_KEYS]);
  const full: StartRun[] = [];
  for (let index = 0; index < rounds; index++) {
    full.push({ ...(await timedStart(location)), campaigns: startupCampaigns });
  }
  const expected = Math.floor(startupCampaigns / 2);
  if (full.some((run) => run.restored !== expected))
    throw new Error(`expected ${expected} restored actors, got ${full.map((run) => run.restored)}`);
  progress(
    `${database} start-up: ${round(median(empty.map((run) => run.startMs)))} ms empty, ` +
      `${round(median(full.map((run) => run.startMs)))} ms with ${grouped(startupCampaigns)}`,
  );
  return { empty, full };
}

// ---------------------------------------------------------------- report

const label = (database: DatabaseName) => (database === "pglite" ? "PGlite" : "PostgreSQL 15");

async function main() {
  const started = performance.now();
  const status = new Map<DatabaseName, StatusResults>();
  const starts = new Map<DatabaseName, Awaited<ReturnType<typeof startup>>>();
  for (const database of databases) {
    status.set(database, await statusOperations(database));
    starts.set(database, await startup(database));
  }

  const loadRow = (database: DatabaseName, scenario: string, runs: LoadResult[]) => [
    label(database),
    scenario,
    grouped(median(runs.map((run) => perSecond(run)))),
    grouped(median(runs.map((run) => perSecond(run, "200")))),
    grouped(median(runs.map((run) => perSecond(run, "409")))),
    median(runs.map(otherAnswers)),
    round(median(runs.map((run) => run.p50Ms)), 2),
    round(median(runs.map((run) => run.p99Ms)), 2),
    round(median(runs.map((run) => run.peakRss))),
    round(median(runs.map((run) => (run.serverCpu * 1000) / run.requests)), 3),
    round(median(runs.map((run) => (run.databaseCpu * 1000) / run.requests)), 3),
    round(median(runs.map((run) => run.serverCpu / run.seconds)), 2),
    round(median(runs.map((run) => run.databaseCpu / run.seconds)), 2),
    round(median(runs.map((run) => run.clientCpu / run.seconds)), 2),
  ];
  console.log(
    `## (a) status changes, unique Idempotency-Keys, ${connections} connections, ${duration} s × ${rounds}\n\n` +
      `Closed loop (wrk, every connection always busy), then open loop at ${grouped(pacedRate)}/s ` +
      `(latency from each request's due time; "client cores" is wrk's or the pacing client's).` +
      `${pgSettings.length ? ` PostgreSQL settings: ${pgSettings.join(", ")}.` : ""}\n`,
  );
  console.log(
    table(
      [
        "database",
        "campaigns",
        "answers/s",
        "200/s",
        "409/s",
        "other",
        "p50 ms",
        "p99 ms",
        "peak RSS MiB",
        "server CPU ms/answer",
        "PostgreSQL CPU ms/answer",
        "server cores",
        "PostgreSQL cores",
        "client cores",
      ],
      [...status].flatMap(([database, result]) => [
        loadRow(database, "1", result.one),
        loadRow(database, grouped(campaignCount), result.spread),
        loadRow(database, `${grouped(campaignCount)} at ${grouped(pacedRate)}/s`, result.paced),
      ]),
    ),
  );
  console.log("\nEvery run (answers/s, 200, 409, p99 ms):\n");
  for (const [database, result] of status) {
    for (const [scenario, runs] of [
      ["1", result.one],
      [grouped(campaignCount), result.spread],
      [`${grouped(campaignCount)} at ${grouped(pacedRate)}/s`, result.paced],
    ] as const) {
      console.log(
        `- ${label(database)}, ${scenario} campaign(s): ` +
          runs
            .map(
              (run) =>
                `${grouped(perSecond(run))}/s (${run.counts["200"] ?? 0}, ${run.counts["409"] ?? 0}, ${round(run.p99Ms, 1)})`,
            )
            .join("; "),
      );
    }
  }

  console.log(
    `\n## (b) replayed request vs bare Elysia routes (GET, and POST with the same body)\n`,
  );
  const rate200 = (runs: LoadResult[]) => median(runs.map((run) => perSecond(run, "200")));
  const cpuPerRequest = (runs: LoadResult[]) =>
    round(median(runs.map((run) => (run.serverCpu * 1e6) / run.requests)));
  // The rounds run replay, bare GET and bare POST one after another (see medianOfRoundRatios).
  const perRound = (replay: LoadResult[], bare: LoadResult[]) =>
    round(
      medianOfRoundRatios(
        replay.map((run) => perSecond(run, "200")),
        bare.map((run) => perSecond(run, "200")),
      ),
      2,
    );
  console.log(
    table(
      [
        "database",
        "replay req/s",
        "replay p99 ms",
        "replay CPU µs/req",
        "bare GET req/s",
        "bare GET CPU µs/req",
        "bare POST req/s",
        "bare POST CPU µs/req",
        "replay / bare GET (rounds)",
        "replay / bare POST (rounds)",
      ],
      [...status].map(([database, result]) => {
        const replay = rate200(result.replay);
        return [
          label(database),
          grouped(replay),
          round(median(result.replay.map((run) => run.p99Ms)), 2),
          cpuPerRequest(result.replay),
          grouped(rate200(result.bare)),
          cpuPerRequest(result.bare),
          grouped(rate200(result.barePost)),
          cpuPerRequest(result.barePost),
          `${round(replay / rate200(result.bare), 2)}× (${perRound(result.replay, result.bare)}×)`,
          `${round(replay / rate200(result.barePost), 2)}× (${perRound(result.replay, result.barePost)}×)`,
        ];
      }),
    ),
  );
  const nonReplayed = [...status].flatMap(([, result]) =>
    result.replay.filter((run) => run.requests !== (run.counts["200"] ?? 0)),
  );
  if (nonReplayed.length) console.log(`\n${nonReplayed.length} replay run(s) had non-200 answers`);

  console.log(`\n## (c) start-up with ${grouped(startupCampaigns)} campaigns (half running)\n`);
  console.log(
    table(
      [
        "database",
        "campaigns",
        "restored actors",
        "restore ms (logged)",
        "spawn → HTTP ms",
        "RSS after start MiB",
      ],
      [...starts].flatMap(([database, result]) =>
        [result.empty, result.full].map((runs) => [
          label(database),
          grouped(runs[0]?.campaigns ?? 0),
          grouped(runs[0]?.restored ?? 0),
          round(median(runs.map((run) => run.restoreMs))),
          round(median(runs.map((run) => run.startMs))),
          round(median(runs.map((run) => run.rss))),
        ]),
      ),
    ),
  );
  for (const [database, result] of starts) {
    const extra =
      median(result.full.map((run) => run.rss)) - median(result.empty.map((run) => run.rss));
    const actors = result.full[0]?.restored ?? 1;
    console.log(
      `\n${label(database)}: +${round(extra)} MiB for ${grouped(actors)} restored actors ` +
        `(${grouped(startupCampaigns)} campaign rows): about ${round((extra * 1024) / actors, 1)} KiB per idle actor. ` +
        `Start times (ms): empty ${result.empty.map((run) => round(run.startMs)).join(", ")}; ` +
        `full ${result.full.map((run) => round(run.startMs)).join(", ")}. ` +
        `RSS (MiB): empty ${result.empty.map((run) => round(run.rss)).join(", ")}; ` +
        `full ${result.full.map((run) => round(run.rss)).join(", ")}.`,
    );
  }
  console.log(`\nTotal time: ${round((performance.now() - started) / 1000)} s`);
  if (jsonFile) {
    await Bun.write(
      jsonFile,
      JSON.stringify(
        { status: Object.fromEntries(status), startup: Object.fromEntries(starts) },
        null,
        2,
      ),
    );
  }
}

await main();
process.exit(0);
