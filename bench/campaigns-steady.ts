/**
 * Status changes at a steady rate for longer than an idempotency window, on PostgreSQL 15,
 * once per `shared_buffers` setting.
 *
 *   bun bench/campaigns-steady.ts [--seconds 100] [--rate 3000] [--campaigns 1000]
 *                                 [--connections 64] [--shared-buffers 128MB,2GB]
 *
 * bench/campaigns.ts measures the latency at 3,000 changes a second in 8 s runs, so its
 * database and its idempotency windows never reach what a steady load leaves behind: every
 * key's reply is kept for 60 s, in the campaign actors and in PostgreSQL. Here, for each
 * `shared_buffers` value, a new cluster (otherwise stock settings) and a new server process
 * get `--campaigns` campaigns through the API, 10 s of warm-up at the rate, then one run of
 * `--seconds` at the rate (bench/campaigns-rate.ts: open loop, latency from each request's
 * due time, every request with its own Idempotency-Key). The report gives p50, p99 and max
 * over the run, the p99 of each 10 s, and the server's and PostgreSQL's share of a core.
 */
import { join } from "node:path";
import postgres from "postgres";
import {
  Api,
  cpuSeconds,
  createCampaigns,
  grouped,
  option,
  progress,
  ROOT,
  round,
  startCluster,
  startServer,
  table,
  tempDir,
  treeCpuSeconds,
  writeCampaignFile,
} from "./campaigns-import-common.ts";

const args = process.argv.slice(2);
const seconds = Number(option(args, "seconds", "100"));
const rate = Number(option(args, "rate", "3000"));
const campaignCount = Number(option(args, "campaigns", "1000"));
const connections = Number(option(args, "connections", "64"));
const sharedBuffers = option(args, "shared-buffers", "128MB,2GB").split(",");
const WARM_UP_SECONDS = 10;
const PACED = join(ROOT, "bench/campaigns-rate.ts");
const work = tempDir("bench-campaigns-steady-");

interface SteadyRun {
  sharedBuffers: string;
  answered: number;
  counts: Record<string, number>;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  p99By10sMs: number[];
  serverCores: number;
  databaseCores: number;
}

async function paced(baseUrl: string, file: string, token: string, tag: string, span: number) {
  const child = Bun.spawn(
    [
      process.execPath,
      PACED,
      baseUrl,
      file,
      token,
      tag,
      String(rate),
      String(span),
      String(connections),
    ],
    { stdout: "pipe", stderr: "pipe" },
  );
  const [out, err, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  if (code !== 0) throw new Error(`campaigns-rate.ts exited with ${code}: ${err}${out}`);
  const line = (name: string) => (new RegExp(`^${name} (.*)$`, "m").exec(out)?.[1] ?? "").trim();
  const [p50, p99, max] = line("BENCH_LATENCY").split(" ").map(Number);
  return {
    counts: JSON.parse(line("BENCH_COUNTS") || "{}") as Record<string, number>,
    answered: Number(line("BENCH_SUMMARY").split(" ")[0]),
    p50Ms: (p50 ?? Number.NaN) / 1000,
    p99Ms: (p99 ?? Number.NaN) / 1000,
    maxMs: (max ?? Number.NaN) / 1000,
    p99By10sMs: line("BENCH_P99_BY_10S")
      .split(" ")
      .filter(Boolean)
      .map((us) => Number(us) / 1000),
  };
}

async function steadyRun(buffers: string): Promise<SteadyRun> {
  const cluster = startCluster([`shared_buffers=${buffers}`]);
  const admin = postgres(cluster.url(), { max: 1, onnotice: () => {} });
  await admin.unsafe("create database bench_steady");
  await admin.end();
  const server = await startServer({ databaseUrl: cluster.url("bench_steady") });
  try {
    const api = await Api.login(server.baseUrl);
    progress(`shared_buffers ${buffers}: creating ${campaignCount} campaigns`);
    const ids = await createCampaigns(api, campaignCount);
    const file = join(work, `campaigns-${buffers}.txt`);
    await writeCampaignFile(api, ids, file);
    await paced(server.baseUrl, file, api.token, `warm-${Date.now()}`, WARM_UP_SECONDS);
    await writeCampaignFile(api, ids, file);
    progress(`shared_buffers ${buffers}: ${seconds} s at ${grouped(rate)}/s`);
    const cpuBefore = [cpuSeconds(server.pid), treeCpuSeconds(cluster.postmasterPid())];
    const run = await paced(server.baseUrl, file, api.token, `steady-${Date.now()}`, seconds);
    const serverCpu = cpuSeconds(server.pid) - (cpuBefore[0] as number);
    const databaseCpu = treeCpuSeconds(cluster.postmasterPid()) - (cpuBefore[1] as number);
    progress(
      `shared_buffers ${buffers}: p99 ${round(run.p99Ms)} ms; by 10 s ${run.p99By10sMs.map((ms) => round(ms)).join(", ")}`,
    );
    return {
      sharedBuffers: buffers,
      ...run,
      serverCores: serverCpu / seconds,
      databaseCores: databaseCpu / seconds,
    };
  } finally {
    await server.stop();
    // A cluster left running could checkpoint its writes during the next one's run.
    cluster.stop();
  }
}

const started = performance.now();
const runs: SteadyRun[] = [];
for (const buffers of sharedBuffers) runs.push(await steadyRun(buffers));

const revision = Bun.spawnSync({ cmd: ["git", "rev-parse", "--short", "HEAD"], cwd: ROOT })
  .stdout.toString()
  .trim();
console.log(
  `\n${grouped(rate)} status changes a second for ${seconds} s over ${grouped(campaignCount)} campaigns, ` +
    `${connections} connections at most; revision ${revision}, bun ${Bun.version}, ` +
    `${round((performance.now() - started) / 60_000)} min in all\n`,
);
console.log(
  table(
    [
      "shared_buffers",
      "answered",
      "non-200",
      "p50 ms",
      "p99 ms",
      "max ms",
      "p99 per 10 s (ms)",
      "server cores",
      "PostgreSQL cores",
    ],
    runs.map((run) => [
      run.sharedBuffers,
      grouped(run.answered),
      run.answered - (run.counts["200"] ?? 0),
      round(run.p50Ms, 2),
      round(run.p99Ms),
      round(run.maxMs),
      run.p99By10sMs.map((ms) => round(ms)).join(", "),
      round(run.serverCores, 2),
      round(run.databaseCores, 2),
    ]),
  ),
);
process.exit(0);
