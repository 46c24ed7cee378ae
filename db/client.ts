import type { PGlite } from "@electric-sql/pglite";
import type { ExtractTablesWithRelations } from "drizzle-orm";
import type { PgDatabase, PgQueryResultHKT, PgTransaction } from "drizzle-orm/pg-core";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { drizzle as drizzlePostgres } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { answeredWithin, DatabaseAvailability } from "./availability.ts";
import { pgliteClient } from "./pglite-client.ts";
import { DatabaseSockets, type Plans, postgresClient } from "./postgres-client.ts";
import * as schema from "./schema/index.ts";

export type Schema = typeof schema;
/** The driver-neutral database every query function takes: PGlite and postgres.js alike. */
export type Database = PgDatabase<PgQueryResultHKT, Schema>;
export type Transaction = PgTransaction<
  PgQueryResultHKT,
  Schema,
  ExtractTablesWithRelations<Schema>
>;
/** A query runs on the database or inside a caller's transaction. */
export type Executor = Database | Transaction;

export type DatabaseKind = "pglite" | "postgres";

/** The driver underneath, for what Drizzle does not do (COPY for bulk imports). */
export type RawClient =
  | { kind: "pglite"; client: PGlite }
  /**
   * `longWork`: the pool for imports, reports and clean-ups, off `client`'s few connections.
   * `genericPlans`: a pool whose prepared statements keep one generic plan, for the dialer's
   * claims (see `claimLeads`).
   */
  | { kind: "postgres"; client: postgres.Sql; longWork: postgres.Sql; genericPlans: postgres.Sql };

export interface DatabaseHandle {
  db: Database;
  /**
   * The same database for long work (reports over many rows, clean-ups). On PostgreSQL it runs on the
   * pool for long work: queries pipeline on the main pool's few connections, and a slow one
   * there would hold up every query queued behind it.
   */
  longWork: Database;
  kind: DatabaseKind;
  raw: RawClient;
  /** Whether the database answers: requests are refused at once while it does not. */
  availability: DatabaseAvailability;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  databaseUrl?: string | undefined;
  dataDir: string;
  /** PostgreSQL connections at most; postgres.js pipelines queries on busy ones. */
  poolSize?: number;
  /** How long connecting, or the availability probe, may take before the database counts as down. */
  timeoutMs?: number;
  /** PostgreSQL's `statement_timeout` on the main pool, and on the pool for long work. */
  statementTimeoutMs?: number;
  longStatementTimeoutMs?: number;
  /** Hears the database go down and come back, for the log. */
  onAvailabilityChange?: (available: boolean, reason?: string) => void;
}

const DEFAULT_TIMEOUT_MS = 2_000;
/** The probe checks a healthy database this often, and a missing one this often. */
const PROBE_UP_MS = 1_000;
const PROBE_DOWN_MS = 250;

/**
 * One connection per core of this host, at least two: PostgreSQL runs no more queries at once
 * than it has cores, and postgres.js pipelines the rest on busy connections, writing each
 * connection's queued queries at once. With ten connections on two cores every query had a
 * connection, a socket write and a backend woken of its own; the dialer's event round trips
 * at 500 calls a second took twice as long as with two.
 */
export const defaultPoolSize = () => Math.max(2, navigator.hardwareConcurrency);

/** Imports, reports and clean-ups running at once on the pool for long work; more wait their turn. */
const LONG_WORK_POOL_SIZE = 4;

export async function openDatabase(options: DatabaseOptions): Promise<DatabaseHandle> {
  if (options.databaseUrl) {
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const prober = postgres(options.databaseUrl, {
      max: 1,
      onnotice: () => {},
      connect_timeout: timeoutMs / 1000,
      backoff: () => 0,
    });
    const sockets = new DatabaseSockets();
    const availability = new DatabaseAvailability({
      probe: () => answeredWithin(prober`select 1`.execute(), timeoutMs),
      upIntervalMs: PROBE_UP_MS,
      downIntervalMs: PROBE_DOWN_MS,
      onChange: (available, reason) => {
        if (available) sockets.answered();
        options.onAvailabilityChange?.(available, reason);
      },
      // The queries waiting on a silent database fail now, not when it speaks again.
      onSilent: () => sockets.cutAll(),
    });
    const pool = (poolSize: number, statementTimeoutMs: number | undefined, plans?: Plans) =>
      postgresClient(options.databaseUrl as string, {
        poolSize,
        connectTimeoutMs: timeoutMs,
        statementTimeoutMs,
        plans,
        availability,
        sockets,
      });
    const poolSize = options.poolSize ?? defaultPoolSize();
    const client = pool(poolSize, options.statementTimeoutMs);
    const longWorkPool = pool(LONG_WORK_POOL_SIZE, options.longStatementTimeoutMs, "custom");
    const genericPlans = pool(poolSize, options.statementTimeoutMs, "generic");
    const db = drizzlePostgres({ client, schema }) as unknown as Database;
    const longWork = drizzlePostgres({ client: longWorkPool, schema }) as unknown as Database;
    return {
      db,
      longWork,
      kind: "postgres",
      raw: { kind: "postgres", client, longWork: longWorkPool, genericPlans },
      availability,
      close: async () => {
        availability.stop();
        await Promise.all([
          client.end({ timeout: 5 }),
          longWorkPool.end({ timeout: 5 }),
          genericPlans.end({ timeout: 5 }),
          prober.end({ timeout: 1 }),
        ]);
      },
    };
  }
  // In-process: it cannot become unreachable, only fail to write its files (for good).
  const availability = new DatabaseAvailability();
  const client = await pgliteClient(options.dataDir, availability);
  const db = drizzlePglite({ client, schema }) as unknown as Database;
  return {
    db,
    longWork: db,
    kind: "pglite",
    raw: { kind: "pglite", client },
    availability,
    close: () => client.close(),
  };
}
