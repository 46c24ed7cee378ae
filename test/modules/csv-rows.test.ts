import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { csvRows } from "../../src/modules/leads/csv.ts";

const dir = mkdtempSync(join(tmpdir(), "csv-rows-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const rowsOf = async (text: string) => {
  const path = join(dir, `${crypto.randomUUID()}.csv`);
  writeFileSync(path, text);
  const rows: string[][] = [];
  for await (const row of csvRows(path)) rows.push([...row]);
  return rows;
};

test("a CRLF split between two reads of the file is one line end", async () => {
  // The file is read 256 KiB at a time: the CR ends the first read, its LF starts the second.
  const header = "phone,note\r\n";
  const read = 256 * 1024;
  const filler = "x".repeat(read - header.length - "+14155552671,".length - 1);
  const rows = await rowsOf(`${header}+14155552671,${filler}\r\n+14155552672,b\r\n`);
  expect(rows.map((row) => row.length)).toEqual([2, 2, 2]);
  expect(rows.flat().some((cell) => cell.includes("\r"))).toBe(false);
  expect(rows[2]).toEqual(["+14155552672", "b"]);
});

test("a lone CR still ends lines in a file that uses no other", async () => {
  expect(await rowsOf("phone,note\r+14155552671,a\r+14155552672,b\r")).toEqual([
    ["phone", "note"],
    ["+14155552671", "a"],
    ["+14155552672", "b"],
  ]);
});
