/** A phone number as stored, `+` and digits only: no formula, and left as it is. */
const PLAIN_PHONE = /^\+[0-9]{1,15}$/;

/**
 * A cell a spreadsheet would run as a formula gets a leading apostrophe; an E.164 number,
 * which starts with `+` but computes nothing, is left as it is.
 */
export const neutralise = (cell: string) =>
  /^[=+\-@\t\r]/.test(cell) && !PLAIN_PHONE.test(cell) ? `'${cell}` : cell;

const csvCell = (cell: string) => {
  const safe = neutralise(cell);
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
};

export const csvLine = (cells: string[]) => `${cells.map(csvCell).join(",")}\r\n`;

/**
 * A CSV download streamed page by page: a BOM and the header, then each page's rows until a
 * page comes back empty. Any size costs the memory of one page.
 */
export function csvStream<C>(
  header: string[],
  nextPage: (cursor: C | undefined) => Promise<{ lines: string[][]; cursor: C } | undefined>,
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let cursor: C | undefined;
  let headerSent = false;
  return new ReadableStream({
    async pull(controller) {
      if (!headerSent) {
        headerSent = true;
        controller.enqueue(encoder.encode(`\uFEFF${csvLine(header)}`));
        return;
      }
      const page = await nextPage(cursor);
      if (!page || page.lines.length === 0) {
        controller.close();
        return;
      }
      cursor = page.cursor;
      controller.enqueue(encoder.encode(page.lines.map(csvLine).join("")));
    },
  });
}

export const csvResponse = (stream: ReadableStream<Uint8Array>, fileName: string) =>
  new Response(stream, {
    headers: {
      "content-type": "text/csv; charset=utf-8",
      "content-disposition": `attachment; filename="${fileName}"`,
    },
  });
