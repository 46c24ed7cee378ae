/**
 * HTTP benchmark: the app against bare Elysia and against raw SQL, on PGlite and PostgreSQL.
 *
 *   bun bench/http.ts [--duration 10] [--rounds 3] [--warmup 2] [--databases pglite,postgres]
 *                     [--threads 2] [--connections 64] [--users 60] [--json out.json] [--keep-temp]
 *
 * Every server under test is its own `bun` process on 127.0.0.1 (the app is `bun src/index.ts`,
 * configured by environment as in production; the references are bench/serve.ts), started,
 * loaded with `wrk --latency` and stopped one after another, never two at once. The rounds
 * are interleaved so that a noisy neighbour spreads over all targets instead of one; the
 * report gives the median of the rounds, and each ratio also as the median of its rounds.
 * PostgreSQL 15 is a throwaway cluster in a temporary directory, stopped on exit.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import {
  type Cluster,
  PG_BIN,
  postgresInstalled,
  startCluster,
  stopCluster,
} from "./lib/postgres-cluster.ts";
import {
  freePort,
  killLiveChildren,
  peakRssMiB,
  rssMiB,
  startTarget,
  stopTarget,
} from "./lib/proc.ts";
import {
  ADMIN_EMAIL,
  ADMIN_PASSWORD,
  checkTarget,
  type Seeded,
  seedThroughApi,
} from "./lib/seed.ts";
import { median, medianOfRoundRatios, round } from "./lib/stats.ts";
import { runWrk, type WrkResult, wrkAvailable } from "./lib/wrk.ts";

type DatabaseName = "pglite" | "postgres";
type Kind = "bare" | "bare-request-id" | "me" | "users" | "raw";

interface Options {
  duration: number;
  rounds: number;
  warmup: number;
  threads: number;
  connections: number;
  users: number;
  databases: DatabaseName[];
  json?: string;
  keepTemp: boolean;
}

interface Spec {
  kind: Kind;
  database?: DatabaseName;
  label: string;
  cmd: string[];
  env: Record<string, string>;
  path: string;
  headers: Record<string, string>;
  expectedIds?: readonly string[];
}

interface Sample extends WrkResult {
  idleRssMiB: number;
  loadedRssMiB: number;
  peakRssMiB: number;
}

/** Memory of the app's first boot on an empty database, where PGlite runs initdb. */
interface FirstBoot {
  idleRssMiB: number;
  peakRssMiB: number;
}

const ROOT = join(import.meta.dir, "..");
const BUN = process.execPath;
// Fixed so that the token of the seeding run stays valid across the restarts of every round.
const JWT_SECRET = "bench-secret-bench-secret-bench-secret-0123";
// How long an idle server is left alone after boot before its memory is read.
const IDLE_SETTLE_MS = 1000;
// The goals: the app's overhead over bare Elysia, and over the database work it cannot avoid.
const ME_GOAL = 0.6;
const USERS_GOAL = 0.8;

function parseOptions(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      duration: { type: "string", default: "10" },
      rounds: { type: "string", default: "3" },
      warmup: { type: "string", default: "2" },
      threads: { type: "string", default: "2" },
      connections: { type: "string", default: "64" },
      users: { type: "string", default: "60" },
      databases: { type: "string", default: "pglite,postgres" },
      json: { type: "string" },
      "keep-temp": { type: "boolean", default: false },
    },
  });
  const databases = values.databases.split(",").map((name) => name.trim());
  for (const name of databases) {
    if (name !== "pglite" && name !== "postgres") throw new Error(`unknown database ${name}`);
  }
  const options: Options = {
    duration: Number(values.duration),
    rounds: Number(values.rounds),
    warmup: Number(values.warmup),
    threads: Number(values.threads),
    connections: Number(values.connections),
    users: Number(values.users),
    databases: databases as DatabaseName[],
    json: values.json,
    keepTemp: values["keep-temp"],
  };
  if (options.users < 51) throw new Error("--users must be at least 51 to fill a page of 50");
  return options;
}

/** Environment for `bun src/index.ts`: production defaults, only what the benchmark needs set. */
function appEnv(database: Record<string, string>, port: number): Record<string, string> {
  return {
    ...database,
    PORT: String(port),
    HOST: "127.0.0.1",
    AUTH_JWT_SECRET: JWT_SECRET,
    BOOTSTRAP_ADMIN_EMAIL: ADMIN_EMAIL,
    BOOTSTRAP_ADMIN_PASSWORD: ADMIN_PASSWORD,
    LOG_LEVEL: "info",
  };
}

/** First boot on an empty database: the app migrates and bootstraps, the API seeds the users. */
async function seedDatabase(
  name: DatabaseName,
  database: Record<string, string>,
  users: number,
  temp: string,
): Promise<{ seeded: Seeded; firstBoot: FirstBoot }> {
  const port = freePort();
  const target = await startTarget({
    name: `app on ${name} (seeding)`,
    cmd: [BUN, join(ROOT, "src/index.ts")],
    env: appEnv(database, port),
    port,
    logFile: join(temp, `seed-${name}.log`),
  });
  try {
    await Bun.sleep(IDLE_SETTLE_MS);
    const firstBoot = {
      idleRssMiB: rssMiB(target.process.pid) ?? Number.NaN,
      peakRssMiB: peakRssMiB(target.process.pid) ?? Number.NaN,
    };
    const seeded = await seedThroughApi(`http://127.0.0.1:${port}`, users);
    return { seeded, firstBoot };
  } finally {
    await stopTarget(target);
  }
}

function specsFor(name: DatabaseName, database: Record<string, string>, seeded: Seeded): Spec[] {
  const auth = { authorization: `Bearer ${seeded.token}` };
  const app = [BUN, join(ROOT, "src/index.ts")];
  return [
    {
      kind: "raw",
      database: name,
      label:
        name === "postgres"
          ? "raw users query (postgres.js prepared)"
          : "raw users query (pglite.query)",
      cmd: [BUN, join(ROOT, "bench/serve.ts"), `raw-${name}`],
      env: { ...database, TENANT_ID: seeded.tenantId },
      path: "/users?limit=50",
      headers: {},
      expectedIds: seeded.firstPageIds,
    },
    {
      kind: "me",
      database: name,
      label: "GET /api/v1/auth/me",
      cmd: app,
      env: database,
      path: "/api/v1/auth/me",
      headers: auth,
    },
    {
      kind: "users",
      database: name,
      label: "GET /api/v1/users?limit=50",
      cmd: app,
      env: database,
      path: "/api/v1/users?limit=50",
      headers: auth,
      expectedIds: seeded.firstPageIds,
    },
  ];
}

const BARE: Spec = {
  kind: "bare",
  label: "bare Elysia GET /bare",
  cmd: [BUN, join(ROOT, "bench/serve.ts"), "bare"],
  env: {},
  path: "/bare",
  headers: {},
};

/** The bare route with the one header every response of the API must carry (CONTRACT §1). */
const BARE_REQUEST_ID: Spec = {
  ...BARE,
  kind: "bare-request-id",
  label: "bare Elysia GET /bare + X-Request-Id",
  cmd: [BUN, join(ROOT, "bench/serve.ts"), "bare-request-id"],
};

/** One measurement: boot, idle memory, check, warm-up, measured load, loaded memory, stop. */
async function measure(
  spec: Spec,
  options: Options,
  temp: string,
  roundNumber: number,
): Promise<Sample> {
  const port = freePort();
  const isApp = spec.kind === "me" || spec.kind === "users";
  const target = await startTarget({
    name: spec.label,
    cmd: spec.cmd,
    env: isApp ? appEnv(spec.env, port) : { ...spec.env, PORT: String(port) },
    port,
    logFile: join(temp, `${spec.database ?? "none"}-${spec.kind}-${roundNumber}.log`),
  });
  try {
    await Bun.sleep(IDLE_SETTLE_MS);
    const idleRssMiB = rssMiB(target.process.pid) ?? Number.NaN;
    const url = `http://127.0.0.1:${port}${spec.path}`;
    await checkTarget(url, spec.headers, spec.expectedIds);
    const load = {
      url,
      threads: options.threads,
      connections: options.connections,
      headers: spec.headers,
    };
    // JIT compilation and caches fill during the warm-up, which is not counted.
    if (options.warmup > 0) await runWrk({ ...load, durationSeconds: options.warmup });
    const result = await runWrk({ ...load, durationSeconds: options.duration });
    const loadedRssMiB = rssMiB(target.process.pid) ?? Number.NaN;
    return {
      ...result,
      idleRssMiB,
      loadedRssMiB,
      peakRssMiB: peakRssMiB(target.process.pid) ?? Number.NaN,
    };
  } finally {
    await stopTarget(target);
  }
}

const keyOf = (spec: Spec) => `${spec.database ?? "none"}/${spec.kind}`;

interface Summary {
  spec: Spec;
  rps: number;
  /** Requests/s of each round, in round order, for ratios within a round. */
  rpsByRound: number[];
  p99Ms: number;
  idleRssMiB: number;
  loadedRssMiB: number;
  peakRssMiB: number;
  failures: number;
}

function summarise(spec: Spec, samples: Sample[]): Summary {
  return {
    spec,
    rps: median(samples.map((sample) => sample.requestsPerSecond)),
    rpsByRound: samples.map((sample) => sample.requestsPerSecond),
    p99Ms: median(samples.map((sample) => sample.p99Ms)),
    idleRssMiB: median(samples.map((sample) => sample.idleRssMiB)),
    loadedRssMiB: median(samples.map((sample) => sample.loadedRssMiB)),
    peakRssMiB: median(samples.map((sample) => sample.peakRssMiB)),
    failures: samples.reduce((sum, sample) => sum + sample.non2xx + sample.socketErrors, 0),
  };
}

function resultsTable(summaries: Summary[]): string {
  const lines = [
    "| database | target | req/s | p99 ms | RSS idle MiB | RSS after load MiB | peak RSS MiB | errors |",
    "|---|---|---:|---:|---:|---:|---:|---:|",
  ];
  for (const s of summaries) {
    lines.push(
      `| ${s.spec.database ?? "—"} | ${s.spec.label} | ${round(s.rps)} | ${round(s.p99Ms, 2)} | ${round(s.idleRssMiB)} | ${round(s.loadedRssMiB)} | ${round(s.peakRssMiB)} | ${s.failures} |`,
    );
  }
  return lines.join("\n");
}

/**
 * Each ratio two ways: of the targets' medians, and the median of the ratios within each round
 * (two targets measured seconds apart, so a neighbour's load that comes and goes between
 * rounds cancels out). A goal counts as met only when both meet it.
 */
function ratiosTable(summaries: Map<string, Summary>, databases: DatabaseName[]): string {
  const ratio = (over: string, under: string) => {
    const a = summaries.get(over);
    const b = summaries.get(under);
    if (!a || !b) return { ofMedians: Number.NaN, ofRounds: Number.NaN };
    return { ofMedians: a.rps / b.rps, ofRounds: medianOfRoundRatios(a.rpsByRound, b.rpsByRound) };
  };
  const lines = [
    "| database | ratio | of the medians | median of the rounds' ratios | goal |",
    "|---|---|---:|---:|---|",
  ];
  const row = (name: string, label: string, over: string, under: string, goal?: number) => {
    const { ofMedians, ofRounds } = ratio(over, under);
    const verdict =
      goal === undefined
        ? "—"
        : `≥ ${goal}: ${Math.min(ofMedians, ofRounds) >= goal ? "**met**" : "**missed**"}`;
    lines.push(
      `| ${name} | ${label} | ${ofMedians.toFixed(2)} | ${ofRounds.toFixed(2)} | ${verdict} |`,
    );
  };
  for (const name of databases) {
    row(name, "/auth/me ÷ bare", `${name}/me`, "none/bare", ME_GOAL);
    row(name, "/auth/me ÷ bare + X-Request-Id", `${name}/me`, "none/bare-request-id");
    row(name, "users list ÷ raw query", `${name}/users`, `${name}/raw`, USERS_GOAL);
  }
  return lines.join("\n");
}

function printSample(roundNumber: number, rounds: number, spec: Spec, sample: Sample): void {
  const failures = sample.non2xx + sample.socketErrors;
  console.error(
    `[round ${roundNumber}/${rounds}] ${spec.database ?? "—"} ${spec.label}: ${round(sample.requestsPerSecond)} req/s, ` +
      `p99 ${sample.p99Ms.toFixed(2)} ms, RSS ${round(sample.idleRssMiB)} → ${round(sample.loadedRssMiB)} MiB` +
      (failures ? `, ${failures} errors` : ""),
  );
}

/**
 * Temporary state and the exit trap: no cluster or server outlives the benchmark. The files
 * stay when asked to, and after a failure, whose message points into them.
 */
function prepareTemp(keepTemp: boolean) {
  const temp = mkdtempSync(join(tmpdir(), "bench-http-"));
  const clusters: Cluster[] = [];
  let keep = keepTemp;
  let cleaned = false;
  const cleanup = () => {
    if (cleaned) return;
    cleaned = true;
    killLiveChildren();
    for (const cluster of clusters) stopCluster(cluster);
    if (keep) return;
    rmSync(temp, { recursive: true, force: true });
    for (const cluster of clusters) rmSync(cluster.root, { recursive: true, force: true });
  };
  process.on("exit", cleanup);
  process.on("SIGINT", () => process.exit(130));
  process.on("SIGTERM", () => process.exit(143));
  const keepFiles = () => {
    keep = true;
  };
  return { temp, clusters, cleanup, keepFiles };
}

function checkTools(options: Options): void {
  if (!wrkAvailable()) {
    throw new Error(
      "wrk is not installed: `apt-get update && apt-get install -y wrk` (or `brew install wrk`)",
    );
  }
  if (options.databases.includes("postgres") && !postgresInstalled()) {
    throw new Error(
      `PostgreSQL binaries not found in ${PG_BIN}: install postgresql-15, set PG_BIN, or pass --databases pglite`,
    );
  }
}

/** What the numbers depend on: load shape, rounds, code revision, runtime and cores. */
function describeRun(options: Options): string {
  const git = Bun.spawnSync({ cmd: ["git", "describe", "--always", "--dirty"], cwd: ROOT });
  const revision = git.exitCode === 0 ? git.stdout.toString().trim() : "unknown";
  return (
    `wrk -t${options.threads} -c${options.connections} -d${options.duration}s --latency, ` +
    `${options.warmup}s warm-up, medians of ${options.rounds} interleaved rounds; ` +
    `revision ${revision}, bun ${Bun.version}, ${navigator.hardwareConcurrency} cores`
  );
}

/** Seeds every database on a first boot and returns the targets that run against it. */
async function prepareDatabases(options: Options, temp: string, clusters: Cluster[]) {
  const specs: Spec[] = [BARE, BARE_REQUEST_ID];
  const firstBoot: Record<string, FirstBoot> = {};
  for (const name of options.databases) {
    let database: Record<string, string>;
    if (name === "postgres") {
      const cluster = startCluster(freePort());
      clusters.push(cluster);
      database = { DATABASE_URL: cluster.url, DATA_DIR: join(temp, "unused-data") };
    } else {
      // DATABASE_URL is blanked so that a value in the caller's environment cannot leak in.
      database = { DATABASE_URL: "", DATA_DIR: join(temp, "pglite-data") };
    }
    console.error(`seeding ${name}: first boot, ${options.users} users through the API`);
    const seeding = await seedDatabase(name, database, options.users, temp);
    firstBoot[name] = seeding.firstBoot;
    specs.push(...specsFor(name, database, seeding.seeded));
  }
  return { specs, firstBoot };
}

/** Round after round, every target once per round, one at a time. */
async function runRounds(specs: Spec[], options: Options, temp: string) {
  const samples = new Map<string, Sample[]>(specs.map((spec) => [keyOf(spec), []]));
  for (let roundNumber = 1; roundNumber <= options.rounds; roundNumber++) {
    for (const spec of specs) {
      const sample = await measure(spec, options, temp, roundNumber);
      samples.get(keyOf(spec))?.push(sample);
      printSample(roundNumber, options.rounds, spec, sample);
    }
  }
  return samples;
}

function report(
  options: Options,
  specs: Spec[],
  samples: Map<string, Sample[]>,
  firstBoot: Record<string, FirstBoot>,
  started: number,
): void {
  const summaries = specs.map((spec) => summarise(spec, samples.get(keyOf(spec)) ?? []));
  const byKey = new Map(summaries.map((summary) => [keyOf(summary.spec), summary]));
  const minutes = ((Date.now() - started) / 60_000).toFixed(1);
  console.log(`${describeRun(options)}, ${minutes} min in all\n`);
  console.log(resultsTable(summaries));
  console.log();
  console.log(ratiosTable(byKey, options.databases));
  console.log();
  for (const [name, memory] of Object.entries(firstBoot)) {
    console.log(
      `first boot on an empty ${name} database: idle RSS ${round(memory.idleRssMiB)} MiB, ` +
        `peak RSS ${round(memory.peakRssMiB)} MiB`,
    );
  }
  if (options.json) {
    const raw = Object.fromEntries(samples);
    writeFileSync(options.json, JSON.stringify({ options, firstBoot, samples: raw }, null, 2));
  }
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  checkTools(options);
  const started = Date.now();
  const { temp, clusters, cleanup, keepFiles } = prepareTemp(options.keepTemp);
  try {
    const { specs, firstBoot } = await prepareDatabases(options, temp, clusters);
    const samples = await runRounds(specs, options, temp);
    report(options, specs, samples, firstBoot, started);
  } catch (error) {
    keepFiles();
    throw error;
  }
  if (options.keepTemp) {
    const kept = [temp, ...clusters.map((cluster) => cluster.root)].join(" ");
    console.error(`logs and data kept in ${kept}`);
  }
  cleanup();
}

await main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
