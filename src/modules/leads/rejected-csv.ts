import type { Executor } from "../../../db/client.ts";
import { rejectedRowsAfter } from "../../../db/queries/leads.ts";

const PAGE = 1000;

/** A cell a spreadsheet would run as a formula gets a leading apostrophe. */
export const neutralise = (cell: string) => (/^[=+\-@\t\r]/.test(cell) ? `'${cell}` : cell);

const csvCell = (cell: string) => {
  const safe = neutralise(cell);
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
};
const csvLine = (cells: string[]) => `${cells.map(csvCell).join(",")}\r\n`;

/**
 * The rejected rows of an import as CSV: the file's header plus `reason`, then each rejected
 * row as it was, in file order. Streamed page by page, so any size costs the same memory.
 */
export function rejectedRowsCsv(
  db: Executor,
  importId: string,
  header: string[],
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let afterRow = 0;
  let headerSent = false;
  return new ReadableStream({
    async pull(controller) {
      if (!headerSent) {
        headerSent = true;
        controller.enqueue(encoder.encode(`\uFEFF${csvLine([...header, "reason"])}`));
        return;
      }
      const page = await rejectedRowsAfter(db, importId, afterRow, PAGE);
      if (page.length === 0) {
        controller.close();
        return;
      }
      afterRow = page[page.length - 1]?.row ?? afterRow;
      controller.enqueue(
        encoder.encode(page.map((row) => csvLine([...row.cells, row.reason])).join("")),
      );
    },
  });
}
