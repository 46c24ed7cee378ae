import { describe, expect, test } from "bun:test";
import { previewRows } from "../../src/console/client/csv-preview.ts";

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
