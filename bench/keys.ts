/**
 * API-key path against the user-token path, side by side in one run:
 *
 *   bun bench/keys.ts [--duration 10] [--rounds 3] [--database postgres|pglite] [--baseline DIR]
 *
 * Measures `GET /api/v1/campaigns/{id}` with a workspace API key (digest, cache, scope
 * check, rate-limit count) and with a user token, and a bare Elysia route for scale, each
 * loaded with `wrk -t2 -c64 --latency`, rounds interleaved, medians reported. The key's
 * limit is set high enough that no request is refused. Besides the rate, each load reports
 * the CPU time per request of the server under load and, on PostgreSQL, of the database's
 * processes: on a shared machine the rates swing with the neighbours' load, the CPU a request
 * costs much less. `--baseline DIR` also runs the
 * `src/index.ts` of another checkout (a copy of an earlier revision) on the same database,
 * its token and key loads interleaved with this one's, each with keys of its own.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cpuSeconds, treeCpuSeconds } from "./campaigns-import-common.ts";
import {
  type Cluster,
  postgresInstalled,
  startCluster,
  stopCluster,
} from "./lib/postgres-cluster.ts";
import { freePort, killLiveChildren, startTarget, stopTarget, type Target } from "./lib/proc.ts";
import { ADMIN_EMAIL, ADMIN_PASSWORD } from "./lib/seed.ts";
import { median, medianOfRoundRatios, round } from "./lib/stats.ts";
import { runWrk, wrkAvailable } from "./lib/wrk.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const args = process.argv.slice(2);
const option = (name: string, fallback: string) => {
  const index = args.indexOf(`--${name}`);
  return index === -1 ? fallback : (args[index + 1] ?? fallback);
};
const duration = Number(option("duration", "10"));
const rounds = Number(option("rounds", "3"));
const database = option("database", "postgres");
const baseline = option("baseline", "");

if (!wrkAvailable()) {
  console.error("wrk is not installed: apt-get install -y wrk");
  process.exit(2);
}

const work = mkdtempSync(join(tmpdir(), "bench-keys-"));
let cluster: Cluster | undefined;
const targets: Target[] = [];
process.on("exit", () => {
  killLiveChildren();
  if (cluster) stopCluster(cluster);
  rmSync(work, { recursive: true, force: true });
});

async function json(base: string, method: string, path: string, token?: string, body?: unknown) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: {
      "content-type": "application/json",
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok)
    throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  // biome-ignore lint/suspicious/noExplicitAny: fields are read one by one.
  return (await response.json()) as any;
}

const env: Record<string, string> = {
  HOST: "127.0.0.1",
  AUTH_JWT_SECRET: "bench-keys-secret-that-is-long-enough!!",
  BOOTSTRAP_ADMIN_EMAIL: ADMIN_EMAIL,
  BOOTSTRAP_ADMIN_PASSWORD: ADMIN_PASSWORD,
  LOG_LEVEL: "warn",
};
if (database === "postgres") {
  if (!postgresInstalled()) throw new Error("PostgreSQL 15 binaries not found");
  cluster = startCluster(freePort());
  env.DATABASE_URL = cluster.url;
} else {
  env.DATA_DIR = join(work, "data");
}

/** The app of a checkout, started on the bench's database. */
async function startApp(name: string, root: string) {
  const port = freePort();
  const target = await startTarget({
    name,
    cmd: [process.execPath, join(root, "src/index.ts")],
    env: { ...env, PORT: String(port) },
    port,
    logFile: join(work, `${name}.log`),
  });
  targets.push(target);
  return { base: `http://127.0.0.1:${port}`, pid: target.process.pid };
}

const app = await startApp("app", ROOT);
const base = app.base;
// Started second, on a database this one migrated: an earlier revision finds nothing to do.
const baselineApp = baseline ? await startApp("baseline", baseline) : undefined;
const barePort = freePort();
const bare = await startTarget({
  name: "bare",
  cmd: [process.execPath, join(ROOT, "bench/serve.ts"), "bare"],
  env: { PORT: String(barePort) },
  port: barePort,
  logFile: join(work, "bare.log"),
});
targets.push(bare);

/** CPU seconds so far of the database's processes; none on PGlite (it runs in the app). */
const databaseCpu = () =>
  cluster
    ? treeCpuSeconds(
        Number(readFileSync(join(cluster.dataDir, "postmaster.pid"), "utf8").split("\n")[0]),
      )
    : 0;

const token = (
  await json(base, "POST", "/api/v1/auth/login", undefined, {
    email: ADMIN_EMAIL,
    password: ADMIN_PASSWORD,
  })
).data.token as string;
/** A campaign's URL at the app that created it, and owns it from then on. */
async function campaignUrl(at: string) {
  const created = await json(at, "POST", "/api/v1/campaigns", token, { name: "bench" });
  return `${at}/api/v1/campaigns/${created.data.campaign.id}`;
}
// One key cannot make more than 10,000 requests a minute: give each load its own key pool.
const newKeyPool = () =>
  Promise.all(
    Array.from(
      { length: 60 },
      async () =>
        (
          await json(base, "POST", "/api/v1/api-keys", token, {
            name: "bench",
            scopes: { campaigns: "read" },
            rate_limit_per_minute: 10_000,
          })
        ).data.key as string,
    ),
  );

/** An app under load: a campaign it owns, and keys of its own. */
const underLoad = async (suffix: string, started: { base: string; pid: number }) => ({
  suffix,
  pid: started.pid,
  url: await campaignUrl(started.base),
  keyPool: await newKeyPool(),
  nextKey: 0,
});
const apps = [await underLoad("", app)];
if (baselineApp) apps.push(await underLoad(" (baseline)", baselineApp));
const names = ["bare", ...apps.flatMap(({ suffix }) => [`token${suffix}`, `key${suffix}`])];
const samples: Record<
  string,
  { rps: number[]; p99: number[]; serverUs: number[]; dbUs: number[] }
> = Object.fromEntries(names.map((name) => [name, { rps: [], p99: [], serverUs: [], dbUs: [] }]));
const KEYS_PER_LOAD = 20;
const loads = [
  {
    name: "bare",
    pid: bare.process.pid,
    url: `http://127.0.0.1:${barePort}/bare`,
    keys: () => [] as string[],
  },
  ...apps.flatMap((app) => [
    { name: `token${app.suffix}`, pid: app.pid, url: app.url, keys: () => [token] },
    {
      name: `key${app.suffix}`,
      pid: app.pid,
      url: app.url,
      // A key load goes round KEYS_PER_LOAD keys of the pool: one key may not make more than
      // 10,000 requests a minute, and the load makes more.
      keys: () =>
        Array.from(
          { length: KEYS_PER_LOAD },
          () => app.keyPool[app.nextKey++ % app.keyPool.length] as string,
        ),
    },
  ]),
];
for (let round_ = 1; round_ <= rounds; round_++) {
  for (const { name, pid, url, keys } of loads) {
    const cpuBefore = [cpuSeconds(pid), databaseCpu()] as const;
    const result = await runWrk({
      url,
      threads: 2,
      connections: 64,
      durationSeconds: duration,
      // Token and key loads go through the same script, so the client's work is the same.
      ...(name === "bare"
        ? {}
        : { script: { path: join(import.meta.dir, "keys-rotate.lua"), args: keys() } }),
    });
    if (result.non2xx > 0) throw new Error(`${name}: ${result.non2xx} answers outside 2xx`);
    const perRequestUs = (seconds: number) => (seconds * 1e6) / result.requests;
    const serverUs = perRequestUs(cpuSeconds(pid) - cpuBefore[0]);
    const dbUs = perRequestUs(databaseCpu() - cpuBefore[1]);
    samples[name]?.rps.push(result.requestsPerSecond);
    samples[name]?.p99.push(result.p99Ms);
    samples[name]?.serverUs.push(serverUs);
    samples[name]?.dbUs.push(dbUs);
    console.log(
      `[round ${round_}/${rounds}] ${name}: ${round(result.requestsPerSecond)} req/s, p99 ${result.p99Ms} ms, CPU ${round(serverUs)} µs server + ${round(dbUs)} µs database a request`,
    );
  }
}

const rps = (name: string) => median(samples[name]?.rps ?? []);
console.log(
  `\n${database}, GET /api/v1/campaigns/{id}, wrk -t2 -c64 -d${duration}s, medians of ${rounds} rounds\n`,
);
console.log(
  "| target | req/s | p99 ms | server CPU µs/req | database CPU µs/req |\n|---|---:|---:|---:|---:|",
);
for (const name of names) {
  const of = (field: "p99" | "serverUs" | "dbUs", digits: number) =>
    round(median(samples[name]?.[field] ?? []), digits);
  console.log(
    `| ${name} | ${round(rps(name))} | ${of("p99", 2)} | ${of("serverUs", 1)} | ${of("dbUs", 1)} |`,
  );
}
console.log("");
for (const { suffix } of apps) {
  const [key, token] = [samples[`key${suffix}`], samples[`token${suffix}`]];
  const ratio = rps(`key${suffix}`) / rps(`token${suffix}`);
  const inRounds = medianOfRoundRatios(key?.rps ?? [], token?.rps ?? []);
  const cpuRatio = medianOfRoundRatios(token?.serverUs ?? [], key?.serverUs ?? []);
  console.log(
    `key ÷ token${suffix}: ${round(ratio, 2)} (median of the rounds' ratios ${round(inRounds, 2)}; ` +
      `goal ≥ 0.9: ${ratio >= 0.9 ? "met" : "missed"}); token's server CPU a request ÷ key's: ${round(cpuRatio, 2)}`,
  );
}
for (const target of targets) await stopTarget(target);
process.exit(0);
