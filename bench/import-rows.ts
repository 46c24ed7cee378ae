/**
 * The rows of bench/import.ts: the CSV a user uploads, and the same rows pre-normalised for a
 * raw COPY into `leads`.
 */

/** Area codes whose 7-digit numbers 200-0000 to 999-9999 are all valid for libphonenumber. */
const AREA_CODES = [415, 212, 312, 646, 773, 917, 628, 872] as const;
const NUMBERS_PER_AREA = 8_000_000;

/** What the CSV says, and what the import stores for it (links become canonical names). */
const TIME_ZONES = [
  ["America/New_York", "America/New_York"],
  ["America/Chicago", "America/Chicago"],
  ["Europe/London", "Europe/London"],
  ["US/Pacific", "America/Los_Angeles"],
] as const;

export const MAX_ROWS = AREA_CODES.length * NUMBERS_PER_AREA;

/** The E.164 phone of row `index` (0-based): unique within a file. */
export function phoneOf(index: number): string {
  const area = AREA_CODES[Math.floor(index / NUMBERS_PER_AREA)];
  if (area === undefined) throw new Error(`at most ${MAX_ROWS} rows`);
  return `+1${area}${2_000_000 + (index % NUMBERS_PER_AREA)}`;
}

export const CSV_HEADER = "phone,timezone,first_name,last_name\n";

export const csvLine = (index: number) =>
  `${phoneOf(index)},${(TIME_ZONES[index % 4] as readonly [string, string])[0]},First${index},Last${index}\n`;

/** The columns a raw COPY fills; `seq` takes its default, the nullable columns stay null. */
export const LEAD_COLUMNS = [
  "id",
  "tenant_id",
  "campaign_id",
  "lead_list_id",
  "import_id",
  "import_row",
  "phone",
  "timezone",
  "state",
  "attempts",
  "fields",
  "created_at",
  "updated_at",
] as const;

export interface RawTarget {
  tenantId: string;
  campaignId: string;
  listId: string;
  importId: string;
  createdAt: string;
}

/** Row `index` as the import would store it, as a CSV line for COPY (the JSON cell quoted). */
export function rawLine(index: number, target: RawTarget): string {
  const zone = (TIME_ZONES[index % 4] as readonly [string, string])[1];
  const fields = `"{""first_name"": ""First${index}"", ""last_name"": ""Last${index}""}"`;
  return (
    `${Bun.randomUUIDv7()},${target.tenantId},${target.campaignId},${target.listId},` +
    `${target.importId},${index + 1},${phoneOf(index)},${zone},Fresh,0,${fields},` +
    `${target.createdAt},${target.createdAt}\n`
  );
}

/** Writes `count` lines made by `line` (after `head`) to `path`; returns the file's size. */
export async function writeLines(
  path: string,
  count: number,
  line: (index: number) => string,
  head = "",
): Promise<number> {
  // A FileSink writes over an existing file without truncating it: start from an empty one.
  await Bun.write(path, "");
  const writer = Bun.file(path).writer({ highWaterMark: 1024 * 1024 });
  let pending = head;
  for (let index = 0; index < count; index++) {
    pending += line(index);
    if (pending.length >= 256 * 1024) {
      writer.write(pending);
      pending = "";
    }
  }
  writer.write(pending);
  await writer.end();
  return Bun.file(path).size;
}
