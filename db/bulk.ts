import { once } from "node:events";
import { finished } from "node:stream/promises";
import { yieldToEventLoop } from "../src/lib/event-loop.ts";
import type { RawClient } from "./client.ts";

/** Raw SQL inside one transaction, with COPY for bulk loads: what the lead import needs. */
export interface BulkSession {
  query<T extends Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  /** Runs a statement and returns the number of rows it touched. */
  execute(text: string, params?: unknown[]): Promise<number>;
  /** Streams CSV lines (each ending in a newline) into `table` with COPY. */
  copyFrom(table: string, columns: string[], lines: AsyncIterable<string>): Promise<void>;
}

const WRITE_BYTES = 256 * 1024;
const PGLITE_BATCH_BYTES = 4 * 1024 * 1024;

const copyStatement = (table: string, columns: string[], source: string) =>
  `copy ${table} (${columns.join(", ")}) from ${source} with (format csv)`;

async function* batched(lines: AsyncIterable<string>, bytes: number): AsyncGenerator<string> {
  let pending = "";
  for await (const line of lines) {
    pending += line;
    if (pending.length >= bytes) {
      yield pending;
      pending = "";
    }
  }
  if (pending) yield pending;
}

/**
 * Runs `work` in one transaction on the raw driver. Any error rolls everything back, and the
 * error `work` threw is what the caller sees (not the driver's report of the aborted COPY).
 */
export async function withBulkTransaction<T>(
  raw: RawClient,
  work: (session: BulkSession) => Promise<T>,
): Promise<T> {
  let failure: unknown;
  const guarded = async (session: BulkSession) => {
    try {
      return await work(session);
    } catch (error) {
      failure = error;
      throw error;
    }
  };
  try {
    if (raw.kind === "postgres") {
      return (await raw.longWork.begin((sql) =>
        guarded({
          query: async (text, params = []) => (await sql.unsafe(text, params as never[])) as never,
          execute: async (text, params = []) => (await sql.unsafe(text, params as never[])).count,
          async copyFrom(table, columns, lines) {
            const writable = await sql.unsafe(copyStatement(table, columns, "stdin")).writable();
            // A failed COPY is reported by the transaction; the stream's own error event is noise.
            writable.on("error", () => {});
            try {
              for await (const chunk of batched(lines, WRITE_BYTES)) {
                if (!writable.write(chunk)) await once(writable, "drain");
              }
              writable.end();
              await finished(writable);
            } catch (error) {
              writable.destroy(error as Error);
              throw error;
            }
          },
        }),
      )) as T;
    }
    return await raw.client.transaction((tx) =>
      guarded({
        query: async (text, params = []) => (await tx.query(text, params)).rows as never,
        execute: async (text, params = []) => (await tx.query(text, params)).affectedRows ?? 0,
        async copyFrom(table, columns, lines) {
          for await (const chunk of batched(lines, PGLITE_BATCH_BYTES)) {
            await tx.query(copyStatement(table, columns, "'/dev/blob'"), [], {
              blob: new Blob([chunk]),
            });
            // PGlite blocks while it works: timers and other requests run between batches.
            await yieldToEventLoop();
          }
        },
      }),
    );
  } catch (error) {
    throw failure ?? error;
  }
}
