import { createReadStream } from "node:fs";
import { Transform } from "node:stream";
import Papa from "papaparse";

export class NotTextError extends Error {}

/**
 * Decodes UTF-8 strictly as it streams (a BOM is dropped), refusing invalid bytes and NULs:
 * a spreadsheet's binary format or another encoding fails here, not as garbled leads. CRLF
 * becomes LF: papaparse takes the line ending of the file's first lines for all of them, so a
 * file that mixes the two (files joined together) would otherwise run rows into one another.
 */
function strictUtf8() {
  const decoder = new TextDecoder("utf-8", { fatal: true });
  // A CR that ends a chunk waits for the next one, which may start with its LF.
  let heldCr = false;
  const checked = (decoded: string, last: boolean) => {
    if (decoded.includes("\u0000")) throw new NotTextError("the file is binary, not CSV text");
    let text = (heldCr ? "\r" : "") + decoded;
    heldCr = !last && text.endsWith("\r");
    if (heldCr) text = text.slice(0, -1);
    return text.replaceAll("\r\n", "\n");
  };
  return new Transform({
    readableObjectMode: true,
    transform(chunk: Buffer, _encoding, done) {
      try {
        done(null, checked(decoder.decode(chunk, { stream: true }), false));
      } catch (error) {
        done(
          error instanceof NotTextError ? error : new NotTextError("the file is not UTF-8 text"),
        );
      }
    },
    flush(done) {
      try {
        done(null, checked(decoder.decode(), true));
      } catch (error) {
        done(
          error instanceof NotTextError ? error : new NotTextError("the file is not UTF-8 text"),
        );
      }
    },
  });
}

/**
 * The rows of a CSV file, header first, parsed as the file is read. The delimiter (comma,
 * semicolon, tab or pipe) is detected; quoted cells may hold delimiters, quotes and newlines.
 * Parsing pauses while the consumer works on a chunk's rows, so memory stays flat.
 */
/** Marks a row whose quoted cell never closed (it ran on to the end of the file). */
export const UNCLOSED_QUOTE: unique symbol = Symbol("unclosed quote");

/** A row of cells, marked when a quoted cell of it never closed. */
export type CsvRow = string[] & { [UNCLOSED_QUOTE]?: true };

export async function* csvRows(path: string): AsyncGenerator<CsvRow> {
  const source = createReadStream(path, { highWaterMark: 256 * 1024 });
  const text = source.pipe(strictUtf8());
  let failure: unknown;
  source.on("error", (error) => {
    failure = error;
    wake();
  });
  text.on("error", (error) => {
    failure = error;
    wake();
  });

  const chunks: CsvRow[][] = [];
  let finished = false;
  let parser: Papa.Parser | undefined;
  let waiting: (() => void) | undefined;
  function wake() {
    waiting?.();
    waiting = undefined;
  }

  Papa.parse<string[], NodeJS.ReadableStream>(text, {
    delimitersToGuess: [",", ";", "\t", "|"],
    skipEmptyLines: true,
    chunk(results, handle) {
      parser = handle;
      // Pausing the parser does not stop the stream feeding it: pause both, or the file keeps
      // flowing into papaparse's queue while the consumer works.
      handle.pause();
      text.pause();
      const rows: CsvRow[] = results.data;
      for (const error of results.errors) {
        const row = error.code === "MissingQuotes" ? rows[error.row ?? -1] : undefined;
        if (row) row[UNCLOSED_QUOTE] = true;
      }
      chunks.push(rows);
      wake();
    },
    complete() {
      finished = true;
      wake();
    },
    error(error: Error) {
      failure = error;
      wake();
    },
  });

  try {
    for (;;) {
      if (failure) throw failure;
      const rows = chunks.shift();
      if (rows) {
        for (const row of rows) yield row;
        text.resume();
        parser?.resume();
        continue;
      }
      if (finished) return;
      await new Promise<void>((resolve) => {
        waiting = resolve;
      });
    }
  } finally {
    parser?.abort();
    source.destroy();
  }
}
