import type { Executor } from "../../../db/client.ts";
import { rejectedRowsAfter } from "../../../db/queries/leads.ts";
import { csvStream } from "../../lib/csv-export.ts";

const PAGE = 1000;

/** The rejected rows of an import as CSV: the file's header plus `reason`, then each row as it was. */
export const rejectedRowsCsv = (db: Executor, importId: string, header: string[]) =>
  csvStream<number>([...header, "reason"], async (afterRow = 0) => {
    const page = await rejectedRowsAfter(db, { importId, afterRow, limit: PAGE });
    const last = page[page.length - 1];
    return last
      ? { lines: page.map((row) => [...row.cells, row.reason]), cursor: last.row }
      : undefined;
  });
