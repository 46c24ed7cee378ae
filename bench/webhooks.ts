/**
 * Webhook delivery benchmark: events written into the outbox at a steady rate, delivered by
 * the app's dispatcher to a receiver on 127.0.0.1, each timed from its commit to its receipt.
 *
 *   bun bench/webhooks.ts [--rate 1000] [--duration 60] [--db pglite|postgres|both]
 *                         [--batch-ms 10] [--keys 500] [--warmup 3] [--drain 60] [--pool N]
 *                         [--json FILE]
 *
 * The app is built in this process as `src/index.ts` builds it (`createServiceDeps`,
 * `createApp`, the dispatcher started), over PGlite in a temporary directory, or over
 * PostgreSQL: a database of its own created on the server of DATABASE_URL (dropped after),
 * or, without DATABASE_URL, a throwaway PostgreSQL 15 cluster with stock settings. `--db`
 * defaults to PGlite, and both when DATABASE_URL is set. `--pool` sets the PostgreSQL pool's
 * connections as DATABASE_POOL_SIZE does (by default one per core, as the server's). The bootstrap admin registers an endpoint through
 * `POST /api/v1/webhooks` pointing to bench/webhook-receiver.ts, its own process.
 *
 * Every `--batch-ms`, a batch of rate × batch-ms / 1000 events is written with `enqueueEvents`
 * in one statement of its own (its own transaction), open loop: a batch is due at its time
 * whether or not earlier ones have committed. That is how the app's changes write their
 * events (one statement, or one transaction, with the events beside the change), without the
 * change itself, so that what is measured is the outbox and the dispatcher. The events are
 * `agent.state_changed` (their data is written whole, so no record is read when they are
 * sent), over `--keys` order keys (agents) in turn; their data also carries `bench: {seq,
 * key}`, by which the receiver's records are matched to what was written.
 *
 * Delay: the receipt at the receiver less the moment this process saw the batch's statement
 * commit, both read from `performance.timeOrigin + performance.now()`. Reported: events
 * delivered of those sent, the rate achieved, delay p50 / p90 / p99 / max (also per 10 s, to
 * show a growing backlog), duplicates (a webhook-id received twice), events missing, events
 * received out of order within their key, a sample of signatures checked with the
 * `standardwebhooks` library, the attempts the API logs, and the CPU of this process (app and
 * writer), of the receiver and of a cluster of its own. `--warmup` seconds of events at the
 * rate go first, delivered and not counted. After the writing, the benchmark waits at most
 * `--drain` seconds for the rest; what has not arrived by then counts as missing.
 */
import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import postgres from "postgres";
import { systemClock } from "../actors/ports.ts";
import { type DatabaseHandle, openDatabase } from "../db/client.ts";
import { runMigrations } from "../db/migrate.ts";
import { enqueueEvents, type OutboxEvent } from "../db/queries/webhooks.ts";
import { rowsOf } from "../db/rows.ts";
import { createApp, createServiceDeps } from "../src/app.ts";
import { ensurePlatformAdmin } from "../src/bootstrap.ts";
import { loadConfig } from "../src/config.ts";
import { createLogger } from "../src/logger.ts";
import {
  ADMIN_EMAIL,
  ADMIN_PASSWORD,
  byTenSeconds,
  cpuSeconds,
  type DatabaseName,
  databasesOf,
  JWT_SECRET,
  option,
  percentile,
  postgresInstalled,
  progress,
  round,
  startCluster,
  table,
  tempDir,
  treeCpuSeconds,
} from "./campaigns-import-common.ts";
import {
  epochNow,
  type Receiver,
  startReceiver,
  verifySamples,
  waitUntil,
} from "./lib/webhooks.ts";

const args = process.argv.slice(2);
const RATE = Number(option(args, "rate", "1000"));
const DURATION_S = Number(option(args, "duration", "60"));
const BATCH_MS = Number(option(args, "batch-ms", "10"));
const KEYS = Number(option(args, "keys", "500"));
const WARMUP_S = Number(option(args, "warmup", "3"));
const DRAIN_S = Number(option(args, "drain", "60"));
const POOL = option(args, "pool", "");
const JSON_OUT = option(args, "json", "");
const DATABASES = databasesOf(option(args, "db", process.env.DATABASE_URL ? "both" : "pglite"));
const EVENT_TYPE = "agent.state_changed";

interface BenchDatabase {
  handle: DatabaseHandle;
  label: string;
  /** The pid of a cluster this benchmark started, whose CPU it can read. */
  postmasterPid?: number;
  close(): Promise<void>;
}

const poolOption = { dataDir: "unused", ...(POOL ? { poolSize: Number(POOL) } : {}) };

/** The server's settings that decide what a commit costs. */
async function settingsOf(server: postgres.Sql) {
  const rows = await server`select name, setting from pg_settings
    where name in ('fsync', 'synchronous_commit') order by name`;
  return rows.map((row) => `${row.name}=${row.setting}`).join(", ");
}

/** PGlite in a temporary directory, or a PostgreSQL database of the benchmark's own. */
async function openBenchDatabase(kind: DatabaseName): Promise<BenchDatabase> {
  if (kind === "pglite") {
    const handle = await openDatabase({ dataDir: tempDir("bench-webhooks-pglite-") });
    return { handle, label: "PGlite", close: () => handle.close() };
  }
  const given = process.env.DATABASE_URL;
  if (given) {
    const name = `bench_webhooks_${process.pid}`;
    const server = postgres(given, { max: 1, onnotice: () => {} });
    await server.unsafe(`create database ${name}`);
    const url = new URL(given);
    url.pathname = `/${name}`;
    const handle = await openDatabase({ databaseUrl: url.toString(), ...poolOption });
    return {
      handle,
      label: `PostgreSQL (database ${name} on ${url.host}, ${await settingsOf(server)})`,
      async close() {
        await handle.close();
        await server.unsafe(`drop database if exists ${name} with (force)`);
        await server.end({ timeout: 5 });
      },
    };
  }
  if (!postgresInstalled()) throw new Error("--db postgres needs DATABASE_URL or PG_BIN");
  const cluster = startCluster();
  const handle = await openDatabase({ databaseUrl: cluster.url(), ...poolOption });
  return {
    handle,
    label: "PostgreSQL 15 (a cluster of its own, stock settings)",
    postmasterPid: cluster.postmasterPid(),
    close: () => handle.close(),
  };
}

/** The app as `src/index.ts` builds it, with its bootstrap admin logged in. */
async function buildApp(database: DatabaseHandle) {
  await runMigrations(database);
  const config = loadConfig({
    AUTH_JWT_SECRET: JWT_SECRET,
    BOOTSTRAP_ADMIN_EMAIL: ADMIN_EMAIL,
    BOOTSTRAP_ADMIN_PASSWORD: ADMIN_PASSWORD,
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true",
  });
  await ensurePlatformAdmin(database.db, config, new Date());
  const logged: string[] = [];
  const logger = createLogger("warn", (line) => logged.push(line));
  const deps = createServiceDeps({
    database,
    config,
    clock: systemClock,
    logger,
    jwtSecret: JWT_SECRET,
  });
  const app = createApp(deps);
  // biome-ignore lint/suspicious/noExplicitAny: the API's JSON is read field by field.
  const call = async (method: string, path: string, body?: unknown, token = ""): Promise<any> => {
    const headers: Record<string, string> = {};
    if (token) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers["content-type"] = "application/json";
    const response = await app.handle(
      new Request(`http://127.0.0.1${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    );
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${text}`);
    return JSON.parse(text);
  };
  const login = await call("POST", "/api/v1/auth/login", {
    email: ADMIN_EMAIL,
    password: ADMIN_PASSWORD,
  });
  const token = login.data.token as string;
  const tenantId = (await call("GET", "/api/v1/auth/me", undefined, token)).data.user
    .tenant_id as string;
  return { deps, call, token, tenantId, logged };
}

/** One agent's state, as the presence statement writes it, with the benchmark's marks. */
function stateEvent(params: { seq: number; key: string; tenantId: string; at: Date }) {
  const { seq, key, tenantId, at } = params;
  return {
    type: EVENT_TYPE,
    tenantId,
    orderKey: key,
    at,
    data: {
      agent: {
        user_id: key,
        email: `agent-${key.slice(0, 8)}@bench.test`,
        state: seq % 2 === 0 ? "ready" : "on_call",
        campaign_id: "00000000-0000-4000-8000-000000000001",
        call_id: null,
        since: at.toISOString(),
        reason: null,
        pause_after_call: false,
        ready_at: null,
      },
      bench: { seq, key },
    },
  } satisfies OutboxEvent;
}

interface Written {
  sent: number;
  failed: number;
  /** Epoch ms at which each event's statement was seen committed, by seq. */
  committedAt: Float64Array;
  /** Commit less the batch's due time, per batch. */
  lagMs: number[];
  startedAt: number;
  endedAt: number;
  errors: string[];
}

/**
 * Writes `rate` events a second for `seconds`, a batch every BATCH_MS, each batch one
 * statement, open loop. Sequence numbers start at `firstSeq`.
 */
async function writeEvents(
  db: DatabaseHandle["db"],
  params: { tenantId: string; keys: string[]; rate: number; seconds: number; firstSeq: number },
): Promise<Written> {
  const total = Math.round(params.rate * params.seconds);
  const perBatch = (params.rate * BATCH_MS) / 1000;
  const written: Written = {
    sent: 0,
    failed: 0,
    committedAt: new Float64Array(total),
    lagMs: [],
    startedAt: epochNow(),
    endedAt: 0,
    errors: [],
  };
  const start = performance.now();
  const inFlight = new Set<Promise<void>>();
  let next = 0;
  for (let batch = 0; next < total; batch++) {
    const due = start + batch * BATCH_MS;
    const wait = due - performance.now();
    if (wait > 0) await Bun.sleep(wait);
    const count = Math.min(total - next, Math.floor((batch + 1) * perBatch) - next);
    if (count <= 0) continue;
    const first = next;
    next += count;
    const at = new Date();
    const events = Array.from({ length: count }, (_, i) =>
      stateEvent({
        seq: params.firstSeq + first + i,
        key: params.keys[(first + i) % params.keys.length] as string,
        tenantId: params.tenantId,
        at,
      }),
    );
    const dueEpoch = written.startedAt + batch * BATCH_MS;
    const write = enqueueEvents(db, events).then(
      () => {
        const committed = epochNow();
        written.committedAt.fill(committed, first, first + count);
        written.lagMs.push(committed - dueEpoch);
        written.sent += count;
      },
      (error) => {
        written.failed += count;
        if (written.errors.length < 5) written.errors.push(String(error));
      },
    );
    inFlight.add(write);
    void write.finally(() => inFlight.delete(write));
  }
  await Promise.all([...inFlight]);
  written.endedAt = epochNow();
  return written;
}

async function run(kind: DatabaseName) {
  const receiver: Receiver = await startReceiver();
  const database = await openBenchDatabase(kind);
  progress(`webhooks on ${database.label}`);
  try {
    const { deps, call, token, tenantId, logged } = await buildApp(database.handle);
    const created = await call(
      "POST",
      "/api/v1/webhooks",
      { url: receiver.url, event_types: [EVENT_TYPE] },
      token,
    );
    const endpointId = created.data.webhook.id as string;
    const secret = created.data.secret as string;
    const keys = Array.from({ length: KEYS }, () => randomUUID());
    deps.webhooks.dispatcher.start();

    if (WARMUP_S > 0) {
      progress(`warm-up: ${WARMUP_S} s at ${RATE}/s`);
      const warm = await writeEvents(deps.db, {
        tenantId,
        keys,
        rate: RATE,
        seconds: WARMUP_S,
        firstSeq: -1_000_000_000,
      });
      await waitUntil(async () => (await receiver.count()) >= warm.sent, DRAIN_S * 1000);
      await receiver.reset();
    }

    progress(`writing ${RATE} events/s for ${DURATION_S} s, a batch every ${BATCH_MS} ms`);
    const cpuBefore = {
      app: cpuSeconds(process.pid),
      receiver: receiver.cpuSeconds(),
      postgres: database.postmasterPid ? treeCpuSeconds(database.postmasterPid) : Number.NaN,
    };
    const written = await writeEvents(deps.db, {
      tenantId,
      keys,
      rate: RATE,
      seconds: DURATION_S,
      firstSeq: 0,
    });
    const writeSeconds = (written.endedAt - written.startedAt) / 1000;
    const cpu = {
      app: (cpuSeconds(process.pid) - cpuBefore.app) / writeSeconds,
      receiver: (receiver.cpuSeconds() - cpuBefore.receiver) / writeSeconds,
      postgres: database.postmasterPid
        ? (treeCpuSeconds(database.postmasterPid) - cpuBefore.postgres) / writeSeconds
        : Number.NaN,
    };
    const receivedByEnd = await receiver.count();
    progress(`written; ${written.sent - receivedByEnd} not yet received; draining`);
    const drainStarted = performance.now();
    await waitUntil(async () => (await receiver.count()) >= written.sent, DRAIN_S * 1000);
    const drainSeconds = (performance.now() - drainStarted) / 1000;
    // A second more, for any delivery sent twice.
    await Bun.sleep(1000);
    const { records, samples, malformed } = await receiver.records();
    const signatures = verifySamples(samples, secret);
    await deps.webhooks.dispatcher.stop();

    const total = written.committedAt.length;
    const seen = new Uint8Array(total);
    const ids = new Set<string>();
    const lastSeqOfKey = new Map<string, number>();
    const delays: number[] = [];
    /** When each of `delays`' events was committed, in ms since writing began. */
    const committedSince: number[] = [];
    let duplicates = 0;
    let outOfOrder = 0;
    let foreign = 0;
    let lastReceipt = 0;
    let receivedInWindow = 0;
    for (const [id, receivedAt, , , seq, key] of records.sort((a, b) => a[1] - b[1])) {
      if (ids.has(id)) {
        duplicates++;
        continue;
      }
      ids.add(id);
      if (seq === null || seq < 0 || seq >= total || !key) {
        foreign++;
        continue;
      }
      seen[seq] = 1;
      const committedAt = written.committedAt[seq] as number;
      const delay = receivedAt - committedAt;
      delays.push(delay);
      committedSince.push(committedAt - written.startedAt);
      if ((lastSeqOfKey.get(key) ?? -1) > seq) outOfOrder++;
      lastSeqOfKey.set(key, seq);
      lastReceipt = Math.max(lastReceipt, receivedAt);
      if (receivedAt <= written.endedAt) receivedInWindow++;
    }
    const delivered = seen.reduce((sum, one) => sum + one, 0);
    const missing = written.sent - delivered;
    const statuses = rowsOf<{ status: string; n: number; attempts: number }>(
      await deps.db.execute(
        sql`select status, count(*)::int as n, sum(attempts)::int as attempts
          from webhook_deliveries group by status`,
      ),
    );
    const logList = await call(
      "GET",
      `/api/v1/webhooks/${endpointId}/deliveries?limit=1`,
      undefined,
      token,
    );
    const attemptsLogged = logList.total as number;
    const warnings = logged.filter((line) => line.includes('"level":"warn"')).length;
    const errors = logged.filter((line) => line.includes('"level":"error"')).length;
    for (const line of logged.slice(0, 5)) console.error(`app: ${line}`);
    for (const error of written.errors) console.error(`write: ${error}`);

    const p = (q: number) => round(percentile(delays, q), 1);
    const result = {
      database: database.label,
      date: new Date().toISOString().slice(0, 10),
      rate: RATE,
      duration_s: DURATION_S,
      batch_ms: BATCH_MS,
      keys: KEYS,
      sent: written.sent,
      write_failures: written.failed,
      delivered,
      missing,
      duplicates,
      out_of_order: outOfOrder,
      foreign,
      malformed,
      written_per_s: round(written.sent / writeSeconds, 0),
      delivered_per_s_while_writing: round(receivedInWindow / writeSeconds, 0),
      delivered_per_s_to_last: round(delivered / ((lastReceipt - written.startedAt) / 1000), 0),
      behind_at_end_of_writing: written.sent - receivedByEnd,
      drain_s: round(drainSeconds, 1),
      pool: POOL ? Number(POOL) : "default",
      delay_ms: { p50: p(50), p90: p(90), p99: p(99), max: round(Math.max(...delays), 1) },
      delay_p99_per_10s_ms: byTenSeconds(delays, committedSince, Math.ceil(DURATION_S / 10)).map(
        (slice) => (slice.length > 0 ? round(percentile(slice, 99), 0) : null),
      ),
      commit_lag_ms: {
        p50: round(percentile(written.lagMs, 50), 1),
        p99: round(percentile(written.lagMs, 99), 1),
        max: round(Math.max(...written.lagMs), 1),
      },
      signatures,
      deliveries: statuses,
      attempts_logged: attemptsLogged,
      cpu_cores: {
        app_and_writer: round(cpu.app, 2),
        receiver: round(cpu.receiver, 2),
        postgres: Number.isNaN(cpu.postgres) ? null : round(cpu.postgres, 2),
      },
      app_warnings: warnings,
      app_errors: errors,
    };
    const met =
      missing === 0 && written.failed === 0 && result.delay_ms.p99 < 1000 ? "met" : "**missed**";
    console.log(`\n### ${database.label}\n`);
    console.log(
      table(
        ["measure", "value"],
        [
          ["events written / s (asked)", `${result.written_per_s} (${RATE})`],
          ["delivered / sent", `${delivered} / ${written.sent}`],
          [
            "not delivered within the drain, duplicates, out of order in their key",
            `${missing}, ${duplicates}, ${outOfOrder}`,
          ],
          [
            "delivered / s while writing; to the last receipt",
            `${result.delivered_per_s_while_writing}; ${result.delivered_per_s_to_last}`,
          ],
          [
            "not yet received when writing ended; drained in s",
            `${result.behind_at_end_of_writing}; ${result.drain_s}`,
          ],
          [
            "delay commit → receipt p50 / p90 / p99 / max ms",
            `${p(50)} / ${p(90)} / ${p(99)} / ${result.delay_ms.max}`,
          ],
          [
            "delay p99 per 10 s of commits, ms",
            result.delay_p99_per_10s_ms.map((p99) => p99 ?? "none arrived").join(", "),
          ],
          [
            "commit less due time p50 / p99 / max ms",
            `${result.commit_lag_ms.p50} / ${result.commit_lag_ms.p99} / ${result.commit_lag_ms.max}`,
          ],
          [
            "signatures verified (standardwebhooks)",
            `${signatures.verified} of ${signatures.checked}; a changed body refused: ${signatures.tamperedRefused}`,
          ],
          [
            "deliveries by status (rows, attempts)",
            statuses.map((row) => `${row.status} ${row.n} (${row.attempts})`).join(", "),
          ],
          ["attempts logged (GET …/deliveries total)", attemptsLogged],
          [
            "CPU, cores: app and writer / receiver / PostgreSQL",
            `${result.cpu_cores.app_and_writer} / ${result.cpu_cores.receiver} / ${result.cpu_cores.postgres ?? "not read"}`,
          ],
          ["app warnings / errors logged", `${warnings} / ${errors}`],
          [`goal: ${RATE}/s delivered, p99 < 1 s`, met],
        ],
      ),
    );
    return result;
  } finally {
    await database.close().catch((error) => console.error(`closing: ${String(error)}`));
    await receiver.stop();
  }
}

const results = [];
for (const kind of DATABASES) results.push(await run(kind));
if (JSON_OUT) await Bun.write(JSON_OUT, JSON.stringify(results, null, 2));
// Timers of the app (rate windows, sweeps) would keep the process alive.
process.exit(0);
