/**
 * Lead import benchmark: the real server importing a large CSV, against a raw COPY of the same
 * rows, on PGlite and on PostgreSQL 15.
 *
 *   bun bench/import.ts [--rows 1000000,2000000] [--db pglite|postgres|both] [--rounds 3]
 *                       [--large-rounds 1] [--pglite-limit 300] [--cpu-prof DIR] [--json FILE]
 *                       [--app DIR]
 *
 * For each file size, database and round, on a fresh database:
 *  - the server (`bun src/index.ts`, PORT=0 on 127.0.0.1) is started, and a campaign with two
 *    empty lead lists is created through the API;
 *  - the raw reference: the same rows, already normalised (E.164 phone, canonical zone, fields
 *    as JSON, UUIDv7 ids and timestamps filled in), go into `leads` of the second list with one COPY
 *    in one transaction. On PostgreSQL this is postgres.js `COPY leads (...) FROM STDIN` from
 *    this process while the server idles. PGlite is single-process, so the server is stopped
 *    first and bench/import-pglite-copy.ts opens the data directory alone and runs
 *    `COPY ... FROM '/dev/blob'`; then the server is started again on that directory;
 *  - the import: the CSV file is streamed from disk as multipart (fetch with a FormData holding
 *    Bun.file) to POST /api/v1/campaigns/{id}/lead-lists/{list}/import into the first list,
 *    timed from the request until its JSON answer, while the server's VmRSS is sampled every
 *    100 ms; idle RSS is read just before.
 * The raw COPY runs first, so the import finds the table already holding as many rows: any
 * advantage of a smaller table goes to the reference, not to the import.
 *
 * Sizes above 1,000,000 rows run `--large-rounds` times, and on PGlite only when the 1M
 * import, scaled up, is expected to finish within `--pglite-limit` seconds. `--app DIR` runs
 * the `src/index.ts` of another checkout (a copy that stays put while this one is edited).
 */
import { createReadStream, rmSync } from "node:fs";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import postgres from "postgres";
import {
  Api,
  type Cluster,
  cpuSeconds,
  type DatabaseName,
  databasesOf,
  grouped,
  median,
  option,
  progress,
  ROOT,
  round,
  rssMiB,
  type Server,
  sampleRss,
  setAppRoot,
  startCluster,
  startServer,
  table,
  tempDir,
  treeCpuSeconds,
} from "./campaigns-import-common.ts";
import {
  CSV_HEADER,
  csvLine,
  LEAD_COLUMNS,
  MAX_ROWS,
  type RawTarget,
  rawLine,
  writeLines,
} from "./import-rows.ts";

const args = process.argv.slice(2);
const sizes = option(args, "rows", "1000000,2000000").split(",").map(Number);
const databases = databasesOf(option(args, "db", "both"));
const rounds = Number(option(args, "rounds", "3"));
const largeRounds = Number(option(args, "large-rounds", "1"));
const pgliteLimitMs = Number(option(args, "pglite-limit", "300")) * 1000;
const cpuProfDir = option(args, "cpu-prof", "");
const jsonFile = option(args, "json", "");
setAppRoot(option(args, "app", ""));
for (const size of sizes) {
  if (!Number.isInteger(size) || size < 1 || size > MAX_ROWS)
    throw new Error(`--rows takes whole numbers from 1 to ${MAX_ROWS}`);
}

const DEFAULT_MAX_BYTES = 104_857_600;
const IMPORT_TIMEOUT_MS = 15 * 60_000;

interface Run {
  database: DatabaseName;
  rows: number;
  round: number;
  importMs: number;
  rawMs: number;
  idleRss: number;
  peakRss: number;
  fileBytes: number;
  /** CPU seconds during the import: the server process, and the PostgreSQL cluster. */
  serverCpu: number;
  databaseCpu: number;
  /** PGlite only: peak RSS of the process that ran the raw COPY. */
  rawPeakRss?: number;
}

const work = tempDir("bench-import-");

/** The import's limits, raised for files above the defaults (1,000,000 rows, 100 MiB). */
const limitsFor = (rows: number, bytes: number) => ({
  IMPORT_MAX_ROWS: String(Math.max(1_000_000, rows)),
  IMPORT_MAX_BYTES: String(Math.max(DEFAULT_MAX_BYTES, bytes + 1024 * 1024)),
});

const bunFlags = cpuProfDir ? ["--cpu-prof", `--cpu-prof-dir=${cpuProfDir}`, "--cpu-prof-md"] : [];

interface Prepared {
  api: Api;
  campaignId: string;
  importList: string;
  rawTarget: RawTarget;
}

async function prepare(server: Server): Promise<Prepared> {
  const api = await Api.login(server.baseUrl);
  const tenantId = await api.tenantId();
  const campaignId = await api.createCampaign("Import benchmark");
  const importList = await api.createList(campaignId, "Imported through the API");
  const rawList = await api.createList(campaignId, "Raw COPY reference");
  return {
    api,
    campaignId,
    importList,
    rawTarget: {
      tenantId,
      campaignId,
      listId: rawList,
      importId: Bun.randomUUIDv7(),
      createdAt: new Date().toISOString(),
    },
  };
}

/** The median of five RSS readings over one second: the server left alone. */
async function idleRss(pid: number): Promise<number> {
  const readings: number[] = [];
  for (let index = 0; index < 5; index++) {
    await Bun.sleep(200);
    readings.push(rssMiB(pid) ?? Number.NaN);
  }
  return median(readings);
}

/** Streams the CSV from disk to the import endpoint; returns the time and the peak RSS. */
async function importFile(
  server: Server,
  prepared: Prepared,
  csvPath: string,
  rows: number,
  postmaster?: number,
) {
  const databaseCpu = () => (postmaster === undefined ? 0 : treeCpuSeconds(postmaster));
  const cpuBefore = [cpuSeconds(server.pid), databaseCpu()] as const;
  const form = new FormData();
  form.append("phone_column", "phone");
  form.append("timezone_column", "timezone");
  form.append("file", Bun.file(csvPath), "leads.csv");
  const sampler = sampleRss(server.pid, 100);
  const started = performance.now();
  const response = await fetch(
    `${server.baseUrl}/api/v1/campaigns/${prepared.campaignId}/lead-lists/${prepared.importList}/import`,
    {
      method: "POST",
      headers: prepared.api.headers,
      body: form,
      signal: AbortSignal.timeout(IMPORT_TIMEOUT_MS),
    },
  );
  const text = await response.text();
  const ms = performance.now() - started;
  const memory = sampler.stop();
  const serverCpu = cpuSeconds(server.pid) - cpuBefore[0];
  const dbCpu = databaseCpu() - cpuBefore[1];
  if (response.status !== 200) throw new Error(`import answered ${response.status}: ${text}`);
  const report = JSON.parse(text).data.import as { imported: number; rejected: number };
  if (report.imported !== rows || report.rejected !== 0) {
    throw new Error(`import took ${report.imported} rows and rejected ${report.rejected}`);
  }
  return { ms, peakRss: memory.peak, serverCpu, databaseCpu: dbCpu };
}

const copyStatement = (source: string) =>
  `copy leads (${LEAD_COLUMNS.join(", ")}) from ${source} with (format csv)`;

async function writeRawRows(rows: number, target: RawTarget): Promise<string> {
  const path = join(work, "raw-rows.csv");
  await writeLines(path, rows, (index) => rawLine(index, target));
  return path;
}

async function postgresRun(cluster: Cluster, rows: number, csvPath: string, bytes: number) {
  const name = `bench_import_${Date.now()}`;
  const admin = postgres(cluster.url(), { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  const url = cluster.url(name);
  const server = await startServer({ databaseUrl: url }, limitsFor(rows, bytes), { bunFlags });
  try {
    const prepared = await prepare(server);
    const rawPath = await writeRawRows(rows, prepared.rawTarget);
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    const rawStarted = performance.now();
    await sql.begin(async (tx) => {
      const writable = await tx.unsafe(copyStatement("stdin")).writable();
      await pipeline(createReadStream(rawPath, { highWaterMark: 1024 * 1024 }), writable);
    });
    const rawMs = performance.now() - rawStarted;
    const [copied] =
      await sql`select count(*)::int as n from leads where lead_list_id = ${prepared.rawTarget.listId}`;
    await sql.end();
    rmSync(rawPath);
    if (copied?.n !== rows) throw new Error(`raw COPY stored ${copied?.n} rows, not ${rows}`);
    const idle = await idleRss(server.pid);
    const imported = await importFile(server, prepared, csvPath, rows, cluster.postmasterPid());
    return {
      importMs: imported.ms,
      rawMs,
      idleRss: idle,
      peakRss: imported.peakRss,
      serverCpu: imported.serverCpu,
      databaseCpu: imported.databaseCpu,
    };
  } finally {
    await server.stop();
    await admin.unsafe(`drop database if exists ${name}`);
    await admin.end();
  }
}

async function pgliteRun(rows: number, csvPath: string, bytes: number) {
  const dataDir = tempDir("bench-import-pglite-");
  try {
    const first = await startServer({ dataDir }, limitsFor(rows, bytes));
    let prepared: Prepared;
    try {
      prepared = await prepare(first);
    } finally {
      await first.stop();
    }
    const rawPath = await writeRawRows(rows, prepared.rawTarget);
    const child = Bun.spawn(
      [process.execPath, join(ROOT, "bench/import-pglite-copy.ts"), dataDir, rawPath, "4"],
      { stdout: "pipe", stderr: "inherit" },
    );
    // PGlite's own memory for the same rows, without the app: the COPY process's peak RSS.
    const copyMemory = sampleRss(child.pid, 100);
    const [output, code] = await Promise.all([new Response(child.stdout).text(), child.exited]);
    const rawPeakRss = copyMemory.stop().peak;
    rmSync(rawPath);
    if (code !== 0) throw new Error(`the PGlite COPY exited with ${code}`);
    const raw = JSON.parse(output) as { ms: number; rows: number };
    if (raw.rows !== rows) throw new Error(`raw COPY stored ${raw.rows} rows, not ${rows}`);
    const server = await startServer({ dataDir }, limitsFor(rows, bytes), { bunFlags });
    try {
      const api = await Api.login(server.baseUrl);
      const idle = await idleRss(server.pid);
      const imported = await importFile(server, { ...prepared, api }, csvPath, rows);
      return {
        importMs: imported.ms,
        rawMs: raw.ms,
        idleRss: idle,
        peakRss: imported.peakRss,
        serverCpu: imported.serverCpu,
        databaseCpu: imported.databaseCpu,
        rawPeakRss,
      };
    } finally {
      await server.stop();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main() {
  const cluster = databases.includes("postgres") ? startCluster() : undefined;
  const runs: Run[] = [];
  const skipped: string[] = [];
  const benchStarted = performance.now();
  for (const rows of [...sizes].sort((a, b) => a - b)) {
    const csvPath = join(work, `leads-${rows}.csv`);
    const bytes = await writeLines(csvPath, rows, csvLine, CSV_HEADER);
    progress(`generated ${grouped(rows)} rows (${round(bytes / 1024 / 1024)} MiB)`);
    const count = rows > 1_000_000 ? largeRounds : rounds;
    const active = databases.filter((database) => {
      if (database !== "pglite" || rows <= 1_000_000) return true;
      const smaller = runs.filter((run) => run.database === "pglite" && run.rows <= 1_000_000);
      const reference = smaller.at(-1)?.rows;
      if (!reference) return true;
      const times = smaller.filter((run) => run.rows === reference).map((run) => run.importMs);
      const expected = (median(times) * rows) / reference;
      if (expected <= pgliteLimitMs) return true;
      skipped.push(
        `PGlite, ${grouped(rows)} rows: skipped; the ${grouped(reference)}-row import took ` +
          `${round(median(times) / 1000)} s, so this one would take about ${round(expected / 1000)} s ` +
          `(limit ${pgliteLimitMs / 1000} s)`,
      );
      return false;
    });
    for (let index = 1; index <= count; index++) {
      for (const database of active) {
        const result =
          database === "postgres"
            ? await postgresRun(cluster as Cluster, rows, csvPath, bytes)
            : await pgliteRun(rows, csvPath, bytes);
        const run = { database, rows, round: index, fileBytes: bytes, ...result };
        runs.push(run);
        progress(
          `${database} ${grouped(rows)} rows, round ${index}: import ${round(run.importMs / 1000, 2)} s, ` +
            `raw COPY ${round(run.rawMs / 1000, 2)} s, RSS idle ${round(run.idleRss)} MiB, ` +
            `peak ${round(run.peakRss)} MiB`,
        );
      }
    }
    rmSync(csvPath);
  }
  await report(runs, skipped, (performance.now() - benchStarted) / 1000);
}

async function report(runs: Run[], skipped: string[], seconds: number) {
  const groups = new Map<string, Run[]>();
  for (const run of runs) {
    const key = `${run.database}:${run.rows}`;
    groups.set(key, [...(groups.get(key) ?? []), run]);
  }
  const summary = [...groups.values()].map((group) => {
    const first = group[0] as Run;
    const importMs = median(group.map((run) => run.importMs));
    const rawMs = median(group.map((run) => run.rawMs));
    const idle = median(group.map((run) => run.idleRss));
    const peak = median(group.map((run) => run.peakRss));
    const growth = median(group.map((run) => run.peakRss - run.idleRss));
    return [
      first.database === "pglite" ? "PGlite" : "PostgreSQL 15",
      grouped(first.rows),
      `${round(first.fileBytes / 1024 / 1024)} MiB`,
      group.length,
      round(importMs / 1000, 2),
      grouped((first.rows * 1000) / importMs),
      round(rawMs / 1000, 2),
      grouped((first.rows * 1000) / rawMs),
      `${round(rawMs / importMs, 2)}×`,
      round(idle),
      round(peak),
      round(growth),
      round(median(group.map((run) => run.serverCpu))),
      first.database === "pglite"
        ? "(in server)"
        : round(median(group.map((run) => run.databaseCpu))),
    ];
  });
  console.log(
    table(
      [
        "database",
        "rows",
        "file",
        "rounds",
        "import s",
        "import rows/s",
        "raw COPY s",
        "raw COPY rows/s",
        "import / raw",
        "idle RSS MiB",
        "peak RSS MiB",
        "peak − idle MiB",
        "server CPU s",
        "PostgreSQL CPU s",
      ],
      summary,
    ),
  );
  console.log("\nEvery run:\n");
  console.log(
    table(
      [
        "database",
        "rows",
        "round",
        "import s",
        "raw COPY s",
        "idle RSS MiB",
        "peak RSS MiB",
        "raw COPY process peak RSS MiB",
      ],
      runs.map((run) => [
        run.database,
        grouped(run.rows),
        run.round,
        round(run.importMs / 1000, 2),
        round(run.rawMs / 1000, 2),
        round(run.idleRss),
        round(run.peakRss),
        run.rawPeakRss === undefined ? "–" : round(run.rawPeakRss),
      ]),
    ),
  );
  for (const line of skipped) console.log(`\n${line}`);
  console.log(`\nTotal time: ${round(seconds)} s`);
  if (jsonFile) await Bun.write(jsonFile, JSON.stringify({ runs, skipped }, null, 2));
}

await main();
process.exit(0);
