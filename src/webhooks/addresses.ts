import { lookup } from "node:dns/promises";
import { type IpRange, inRange, parseIp, parseRangeList } from "../lib/ip-ranges.ts";

/**
 * Where a webhook must never go unless the operator allows private networks: this host,
 * private and shared networks, link-local (with the cloud metadata address), and the ranges
 * reserved for documentation, benchmarks, multicast and the future; in IPv6 also the forms
 * that carry an IPv4 address a router may unwrap (IPv4-compatible, NAT64, Teredo).
 */
const NOT_PUBLIC = parseRangeList(
  [
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.0.0.0/24",
    "192.0.2.0/24",
    "192.168.0.0/16",
    "198.18.0.0/15",
    "198.51.100.0/24",
    "203.0.113.0/24",
    "224.0.0.0/4",
    "240.0.0.0/4",
    "::/96",
    "::1/128",
    "64:ff9b::/96",
    "100::/64",
    "2001::/32",
    "2001:2::/48",
    "2001:db8::/32",
    "3fff::/20",
    "fc00::/7",
    "fe80::/10",
    "ff00::/8",
  ].join(","),
);

/** 6to4 (`2002::/16`): its next 32 bits are the IPv4 address it stands for. */
const SIX_TO_FOUR = parseRangeList("2002::/16")[0] as IpRange;

export const isPublicAddress = (address: string): boolean => {
  const parsed = parseIp(address);
  if (parsed === undefined || NOT_PUBLIC.some((range) => inRange(parsed, range))) return false;
  if (!inRange(parsed, SIX_TO_FOUR)) return true;
  const v4 = (parsed >> 80n) & 0xffffffffn;
  return isPublicAddress([24n, 16n, 8n, 0n].map((shift) => (v4 >> shift) & 0xffn).join("."));
};

/** A host's addresses, as the system resolver gives them. Injected so tests can change DNS. */
export type Resolve = (host: string) => Promise<string[]>;

export const systemResolve: Resolve = async (host) =>
  (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address);

/** Why a webhook may not go to `url`, or undefined when it may. */
export async function refusalOf(
  url: URL,
  options: { allowPrivate: boolean; resolve: Resolve },
): Promise<string | undefined> {
  if (options.allowPrivate) return undefined;
  if (url.protocol !== "https:") return "must use https";
  const host = url.hostname.replace(/^\[|\]$/g, "");
  let addresses: string[];
  try {
    addresses = parseIp(host) !== undefined ? [host] : await options.resolve(host);
  } catch {
    return `its host ${host} does not resolve`;
  }
  if (addresses.length === 0) return `its host ${host} does not resolve`;
  const inside = addresses.find((address) => !isPublicAddress(address));
  return inside
    ? `resolves to ${inside}, a loopback, private, link-local or reserved address`
    : undefined;
}
