/**
 * IP addresses and CIDR ranges as 128-bit numbers. IPv4 is mapped into `::ffff:0:0/96`, so
 * one comparison serves both families and a v4-mapped socket address matches a v4 range.
 */
export interface IpRange {
  base: bigint;
  /** Prefix length over the 128-bit form. */
  bits: number;
}

const V4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;
const V4_MAPPED = 0xffffn << 32n;

function parseV4(text: string): bigint | undefined {
  const match = V4.exec(text);
  if (!match) return undefined;
  let value = 0n;
  for (const part of match.slice(1)) {
    const octet = Number(part);
    if (octet > 255) return undefined;
    value = (value << 8n) | BigInt(octet);
  }
  return value;
}

/** Eight 16-bit groups, `::` standing for the zeros left out; the last two may be dotted IPv4. */
function parseV6(text: string): bigint | undefined {
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const groupsOf = (half: string | undefined): number[] | undefined => {
    if (!half) return [];
    const groups: number[] = [];
    const parts = half.split(":");
    for (const [index, part] of parts.entries()) {
      if (index === parts.length - 1 && part.includes(".")) {
        const v4 = parseV4(part);
        if (v4 === undefined) return undefined;
        groups.push(Number(v4 >> 16n), Number(v4 & 0xffffn));
      } else if (/^[0-9a-f]{1,4}$/i.test(part)) {
        groups.push(Number.parseInt(part, 16));
      } else {
        return undefined;
      }
    }
    return groups;
  };
  const head = groupsOf(halves[0]);
  const tail = groupsOf(halves[1]);
  if (!head || !tail) return undefined;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const groups = [...head, ...Array<number>(halves.length === 1 ? 0 : missing).fill(0), ...tail];
  return groups.reduce((value, group) => (value << 16n) | BigInt(group), 0n);
}

/** An address in its 128-bit form; a zone (`%eth0`) is ignored. Undefined if it is none. */
export function parseIp(text: string): bigint | undefined {
  const v4 = parseV4(text);
  if (v4 !== undefined) return V4_MAPPED | v4;
  return text.includes(":") ? parseV6(text.replace(/%.*$/, "")) : undefined;
}

/** `10.0.0.0/8`, `fc00::/7`, or a single address. Undefined if it is none of these. */
export function parseRange(text: string): IpRange | undefined {
  const [address = "", prefix, extra] = text.trim().split("/");
  if (extra !== undefined) return undefined;
  const base = parseIp(address);
  if (base === undefined) return undefined;
  const familyBits = V4.test(address) ? 32 : 128;
  const length = prefix === undefined ? familyBits : Number(prefix);
  if (!/^\d{1,3}$/.test(prefix ?? "0") || length > familyBits) return undefined;
  return { base, bits: 128 - familyBits + length };
}

export const inRange = (address: bigint, range: IpRange) => {
  const shift = BigInt(128 - range.bits);
  return address >> shift === range.base >> shift;
};

/** A comma-separated list of ranges; throws naming the first entry that is not one. */
export function parseRangeList(text: string): IpRange[] {
  return text
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "")
    .map((entry) => {
      const range = parseRange(entry);
      if (!range) throw new Error(`"${entry}" is not an IP address or CIDR range`);
      return range;
    });
}
