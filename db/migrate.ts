import { join } from "node:path";
import type { PgliteDatabase } from "drizzle-orm/pglite";
import { migrate as migratePglite } from "drizzle-orm/pglite/migrator";
import type { PostgresJsDatabase } from "drizzle-orm/postgres-js";
import { migrate as migratePostgres } from "drizzle-orm/postgres-js/migrator";
import type { DatabaseHandle } from "./client.ts";

const migrationsFolder = join(import.meta.dir, "migrations");

/** The advisory lock under which one process at a time migrates and bootstraps PostgreSQL. */
const STARTUP_LOCK = 7_150_611_001;

/** Applies the committed migrations; the same folder serves both drivers. */
export async function runMigrations(handle: DatabaseHandle): Promise<void> {
  if (handle.kind === "pglite") {
    await migratePglite(handle.db as unknown as PgliteDatabase, { migrationsFolder });
  } else {
    await migratePostgres(handle.db as unknown as PostgresJsDatabase, { migrationsFolder });
  }
}

/**
 * Runs a process's start-up writes (migrations, the first admin, the signing secret) while no
 * other process runs its own: processes started together on one PostgreSQL take turns, the
 * first does the work and the others find it done. PGlite has one process by construction.
 */
export async function withStartupLock<T>(handle: DatabaseHandle, work: () => Promise<T>) {
  if (handle.raw.kind === "pglite") return work();
  const holder = await handle.raw.client.reserve();
  try {
    await holder.unsafe(`select pg_advisory_lock(${STARTUP_LOCK})`);
    return await work();
  } finally {
    await holder.unsafe(`select pg_advisory_unlock(${STARTUP_LOCK})`).catch(() => undefined);
    holder.release();
  }
}
