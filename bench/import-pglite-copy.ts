/**
 * The raw-COPY reference of bench/import.ts on PGlite, run as its own process:
 *
 *   bun bench/import-pglite-copy.ts <data-dir> <csv-file> <batch-mib>
 *
 * PGlite is a single-process database: a data directory must not be open in two processes at
 * once. So bench/import.ts stops the server first, and this process opens the directory alone,
 * copies the pre-normalised rows of <csv-file> (CSV lines in the column order of LEAD_COLUMNS)
 * into `leads` inside one transaction, with one `COPY ... FROM '/dev/blob'` per <batch-mib>
 * MiB of whole lines (a blob is held in memory; the server's import uses 4 MiB), and prints
 * {"ms": ..., "rows": ...} on stdout. Opening and closing the database are not timed.
 */
import { PGlite } from "@electric-sql/pglite";
import { LEAD_COLUMNS } from "./import-rows.ts";

const [dataDir, file, batchMiB = "4"] = process.argv.slice(2);
if (!dataDir || !file) throw new Error("usage: import-pglite-copy.ts <data-dir> <csv-file> [mib]");

const batchBytes = Number(batchMiB) * 1024 * 1024;
const statement = `copy leads (${LEAD_COLUMNS.join(", ")}) from '/dev/blob' with (format csv)`;

/** Whole lines of the file, about `bytes` at a time. */
async function* batches(path: string, bytes: number): AsyncGenerator<Uint8Array> {
  let pieces: Uint8Array[] = [];
  let length = 0;
  for await (const chunk of Bun.file(path).stream()) {
    pieces.push(chunk);
    length += chunk.length;
    if (length < bytes) continue;
    const joined = Buffer.concat(pieces, length);
    const end = joined.lastIndexOf(10) + 1;
    yield joined.subarray(0, end);
    pieces = [joined.subarray(end)];
    length = joined.length - end;
  }
  if (length) yield Buffer.concat(pieces, length);
}

const db = await PGlite.create(dataDir);
const started = performance.now();
let rows = 0;
await db.transaction(async (tx) => {
  for await (const batch of batches(file, batchBytes)) {
    const result = await tx.query(statement, [], { blob: new Blob([batch]) });
    rows += result.affectedRows ?? 0;
  }
});
const ms = performance.now() - started;
await db.close();
console.log(JSON.stringify({ ms, rows }));
