import { sql } from "drizzle-orm";
import { type DatabaseHandle, openDatabase } from "../../db/client.ts";
import { runMigrations } from "../../db/migrate.ts";
import { rowsOf } from "../../db/rows.ts";

let shared: Promise<DatabaseHandle> | undefined;

/**
 * The suite's one database: PGlite in memory, or PostgreSQL when DATABASE_URL is set.
 * It is opened and migrated once per test process; tests reset it instead of reopening.
 */
export function testDatabase(): Promise<DatabaseHandle> {
  shared ??= (async () => {
    const handle = await openDatabase({
      databaseUrl: process.env.DATABASE_URL,
      dataDir: "memory://",
    });
    await runMigrations(handle);
    return handle;
  })();
  return shared;
}

/** Empties every application table, keeping the schema and the migration journal. */
export async function resetDatabase(): Promise<DatabaseHandle> {
  const handle = await testDatabase();
  const tables = await handle.db.execute<{ tablename: string }>(
    sql`select tablename from pg_tables where schemaname = 'public'`,
  );
  const rows = rowsOf<{ tablename: string }>(tables);
  if (rows.length > 0) {
    const names = rows.map((row) => `"${row.tablename}"`).join(", ");
    await handle.db.execute(sql.raw(`truncate ${names} cascade`));
  }
  return handle;
}

/**
 * Cuts the connections that LISTEN on the test database (PostgreSQL only), as a network fault
 * would: postgres.js reconnects and listens again, and what was notified meanwhile is lost.
 */
export async function cutListeningConnections(database: DatabaseHandle): Promise<void> {
  await database.db.execute(sql`
    select pg_terminate_backend(pid) from pg_stat_activity
    where datname = current_database() and pid <> pg_backend_pid() and query ilike 'listen%'`);
}
