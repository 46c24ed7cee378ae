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
