/**
 * API-key path against the user-token path, side by side in one run:
 *
 *   bun bench/keys.ts [--duration 10] [--rounds 3] [--database postgres|pglite]
 *
 * Measures `GET /api/v1/campaigns/{id}` with a workspace API key (digest, cache, scope
 * check, rate-limit count) and with a user token, and a bare Elysia route for scale, each
 * loaded with `wrk -t2 -c64 --latency`, rounds interleaved, medians reported. The key's
 * limit is set high enough that no request is refused.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type Cluster,
  postgresInstalled,
  startCluster,
  stopCluster,
} from "./lib/postgres-cluster.ts";
import { freePort, killLiveChildren, startTarget, stopTarget, type Target } from "./lib/proc.ts";
import { ADMIN_EMAIL, ADMIN_PASSWORD } from "./lib/seed.ts";
import { median, round } from "./lib/stats.ts";
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

const appPort = freePort();
const app = await startTarget({
  name: "app",
  cmd: [process.execPath, join(ROOT, "src/index.ts")],
  env: { ...env, PORT: String(appPort) },
  port: appPort,
  logFile: join(work, "app.log"),
});
targets.push(app);
const barePort = freePort();
targets.push(
  await startTarget({
    name: "bare",
    cmd: [process.execPath, join(ROOT, "bench/serve.ts"), "bare"],
    env: { PORT: String(barePort) },
    port: barePort,
    logFile: join(work, "bare.log"),
  }),
);

const base = `http://127.0.0.1:${appPort}`;
const token = (
  await json(base, "POST", "/api/v1/auth/login", undefined, {
    email: ADMIN_EMAIL,
    password: ADMIN_PASSWORD,
  })
).data.token as string;
const campaign = (await json(base, "POST", "/api/v1/campaigns", token, { name: "bench" })).data
  .campaign;
// One key cannot make more than 10,000 requests a minute: give each load its own key pool.
const keyPool = await Promise.all(
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

const path = `/api/v1/campaigns/${campaign.id}`;
const samples: Record<string, { rps: number[]; p99: number[] }> = {
  bare: { rps: [], p99: [] },
  token: { rps: [], p99: [] },
  key: { rps: [], p99: [] },
};
let nextKey = 0;
const KEYS_PER_LOAD = 20;
for (let round_ = 1; round_ <= rounds; round_++) {
  for (const name of ["bare", "token", "key"] as const) {
    const url = name === "bare" ? `http://127.0.0.1:${barePort}/bare` : `${base}${path}`;
    // A key load goes round KEYS_PER_LOAD keys of the pool: one key may not make more than
    // 10,000 requests a minute, and the load makes more.
    const keys = Array.from(
      { length: KEYS_PER_LOAD },
      () => keyPool[nextKey++ % keyPool.length] as string,
    );
    const result = await runWrk({
      url,
      threads: 2,
      connections: 64,
      durationSeconds: duration,
      // Token and key loads go through the same script, so the client's work is the same.
      ...(name === "bare"
        ? {}
        : {
            script: {
              path: join(import.meta.dir, "keys-rotate.lua"),
              args: name === "key" ? keys : [token],
            },
          }),
    });
    if (result.non2xx > 0) throw new Error(`${name}: ${result.non2xx} answers outside 2xx`);
    samples[name]?.rps.push(result.requestsPerSecond);
    samples[name]?.p99.push(result.p99Ms);
    console.log(
      `[round ${round_}/${rounds}] ${name}: ${round(result.requestsPerSecond)} req/s, p99 ${result.p99Ms} ms`,
    );
  }
}

const rps = (name: string) => median(samples[name]?.rps ?? []);
console.log(
  `\n${database}, GET /api/v1/campaigns/{id}, wrk -t2 -c64 -d${duration}s, medians of ${rounds} rounds\n`,
);
console.log("| target | req/s | p99 ms |\n|---|---:|---:|");
for (const name of ["bare", "token", "key"]) {
  console.log(`| ${name} | ${round(rps(name))} | ${round(median(samples[name]?.p99 ?? []), 2)} |`);
}
const ratio = rps("key") / rps("token");
console.log(`\nkey ÷ token: ${round(ratio, 2)} (goal ≥ 0.9: ${ratio >= 0.9 ? "met" : "missed"})`);
for (const target of targets) await stopTarget(target);
process.exit(0);
