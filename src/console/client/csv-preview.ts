const DELIMITERS = [",", ";", "\t", "|"] as const;

/** The delimiter of the header line: the candidate that occurs most often outside quotes. */
function delimiterOf(text: string): string {
  const counts = new Map<string, number>(DELIMITERS.map((d) => [d, 0]));
  let quoted = false;
  for (const char of text) {
    if (char === '"') quoted = !quoted;
    else if (!quoted && (char === "\n" || char === "\r")) break;
    else if (!quoted && counts.has(char)) counts.set(char, (counts.get(char) ?? 0) + 1);
  }
  return [...counts].sort((a, b) => b[1] - a[1])[0]?.[0] ?? ",";
}

/**
 * The first rows of a CSV text, the header included: quoted cells with delimiters, quotes and
 * line breaks, CRLF or LF, a BOM, and blank lines skipped, as the server's import reads them.
 * Only a preview: the server decides what each row is worth.
 */
export function previewRows(text: string, rows: number): string[][] {
  const source = text.replace(/^\uFEFF/, "");
  const delimiter = delimiterOf(source);
  const found: string[][] = [];
  let row: string[] = [];
  let cell = "";
  let quoted = false;
  const endRow = () => {
    row.push(cell);
    if (row.length > 1 || row[0] !== "") found.push(row);
    row = [];
    cell = "";
  };
  for (let i = 0; i < source.length && found.length < rows; i++) {
    const char = source[i] as string;
    if (quoted) {
      if (char === '"' && source[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (char === '"') quoted = false;
      else cell += char;
    } else if (char === '"' && cell === "") quoted = true;
    else if (char === delimiter) {
      row.push(cell);
      cell = "";
    } else if (char === "\n") endRow();
    else if (char !== "\r") cell += char;
  }
  if (found.length < rows && (cell !== "" || row.length)) endRow();
  return found.slice(0, rows);
}

/** What is wrong with a file before it is sent, if anything: each stops the upload. */
export interface FileProblem {
  kind: "not_text" | "unclosed_quote" | "no_rows";
  message: string;
}

/**
 * Checks the start of a file (`bytes`; `whole` when it is the entire file) the way the import
 * would find out only after the upload: not text at all, a quote never closed (which would
 * swallow the lines after it), or a header with no rows.
 */
export function problemOf(bytes: Uint8Array, whole: boolean): FileProblem | undefined {
  if (bytes.includes(0))
    return { kind: "not_text", message: "This file is not text: choose a CSV file." };
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    if (whole)
      return { kind: "not_text", message: "This file is not UTF-8 text: save it as CSV (UTF-8)." };
    text = new TextDecoder("utf-8").decode(bytes);
  }
  if (whole) {
    const line = unclosedQuoteLine(text.replace(/^\uFEFF/, ""));
    if (line !== undefined)
      return {
        kind: "unclosed_quote",
        message: `A quote opened on line ${line} is never closed: every line after it would be read as part of that cell. Fix the file first.`,
      };
    if (previewRows(text, 2).length < 2)
      return {
        kind: "no_rows",
        message: "The file has a header and no rows: nothing would be imported.",
      };
  }
  return undefined;
}

/** The line a quoted cell that never closes starts on, if one does. */
function unclosedQuoteLine(text: string): number | undefined {
  let line = 1;
  let quoted = false;
  let openedOn = 1;
  let atCellStart = true;
  for (let i = 0; i < text.length; i++) {
    const char = text[i] as string;
    if (quoted) {
      if (char === '"' && text[i + 1] === '"') i++;
      else if (char === '"') quoted = false;
      else if (char === "\n") line++;
      continue;
    }
    if (char === '"' && atCellStart) {
      quoted = true;
      openedOn = line;
    }
    if (char === "\n") line++;
    atCellStart = char === "\n" || char === "," || char === ";" || char === "\t" || char === "|";
  }
  return quoted ? openedOn : undefined;
}
