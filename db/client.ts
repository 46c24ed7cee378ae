import type { PGlite } from "@electric-sql/pglite";
import type { ExtractTablesWithRelations } from "drizzle-orm";
import type { PgDatabase, PgQueryResultHKT, PgTransaction } from "drizzle-orm/pg-core";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { drizzle as drizzlePostgres } from "drizzle-orm/postgres-js";
import type postgres from "postgres";
import { pgliteClient } from "./pglite-client.ts";
import { postgresClient } from "./postgres-client.ts";
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
  /** `longWork`: the pool for imports, reports and clean-ups, off `client`'s few connections. */
  | { kind: "postgres"; client: postgres.Sql; longWork: postgres.Sql };

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
  close(): Promise<void>;
}

export interface DatabaseOptions {
  databaseUrl?: string | undefined;
  dataDir: string;
  /** PostgreSQL connections at most; postgres.js pipelines queries on busy ones. */
  poolSize?: number;
}

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
    const client = postgresClient(options.databaseUrl, options.poolSize ?? defaultPoolSize());
    const longWorkPool = postgresClient(options.databaseUrl, LONG_WORK_POOL_SIZE);
    const db = drizzlePostgres({ client, schema }) as unknown as Database;
    const longWork = drizzlePostgres({ client: longWorkPool, schema }) as unknown as Database;
    return {
      db,
      longWork,
      kind: "postgres",
      raw: { kind: "postgres", client, longWork: longWorkPool },
      close: async () => {
        await Promise.all([client.end({ timeout: 5 }), longWorkPool.end({ timeout: 5 })]);
      },
    };
  }
  const client = await pgliteClient(options.dataDir);
  const db = drizzlePglite({ client, schema }) as unknown as Database;
  return {
    db,
    longWork: db,
    kind: "pglite",
    raw: { kind: "pglite", client },
    close: () => client.close(),
  };
}
