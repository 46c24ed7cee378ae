import { describe, expect, test } from "bun:test";
import { previewRows, problemOf } from "../../src/console/client/csv-preview.ts";

describe("the import preview's reading of a CSV file", () => {
  test("detects the delimiter, reads quoted cells and skips blank lines", () => {
    const text =
      '\uFEFFphone;tz;note\r\n+1415;"America/New_York";"a; b ""c"""\r\n\r\n+1212;UTC;"two\nlines"\n';
    expect(previewRows(text, 10)).toEqual([
      ["phone", "tz", "note"],
      ["+1415", "America/New_York", 'a; b "c"'],
      ["+1212", "UTC", "two\nlines"],
    ]);
  });

  test("stops after the rows asked for, and reads a last line without a line break", () => {
    expect(previewRows("a,b\n1,2\n3,4\n5,6", 2)).toEqual([
      ["a", "b"],
      ["1", "2"],
    ]);
    expect(previewRows("a|b\n1|2", 5)).toEqual([
      ["a", "b"],
      ["1", "2"],
    ]);
  });
});

describe("what the import would refuse after the upload, found before it", () => {
  const bytes = (text: string) => new TextEncoder().encode(text);

  test("a binary file, a quote never closed, a header with no rows", () => {
    expect(problemOf(new Uint8Array([0x50, 0x4b, 0x03, 0x04, 0, 0, 0x14]), true)?.kind).toBe(
      "not_text",
    );
    expect(problemOf(new Uint8Array([0xff, 0xfe, 0x41]), true)?.kind).toBe("not_text");
    const unclosed = problemOf(bytes('phone,note\n+14155550100,"open\n+14155550101,x\n'), true);
    expect(unclosed).toEqual({
      kind: "unclosed_quote",
      message: expect.stringContaining("line 2"),
    });
    expect(problemOf(bytes("phone,tz\n"), true)?.kind).toBe("no_rows");
  });

  test("a good file, quotes with line breaks and doubled quotes included, has none", () => {
    expect(problemOf(bytes('phone,note\n+14155550100,"two\nlines, ""quoted"""\n'), true)).toBe(
      undefined,
    );
    // The start of a larger file: a quote may close after the part read.
    expect(problemOf(bytes('phone,note\n+14155550100,"open'), false)).toBe(undefined);
  });
});
