import type { Config } from "./config.ts";
import type { RequestMeta } from "./deps.ts";
import { type IpRange, inRange, parseIp, parseRangeList } from "./lib/ip-ranges.ts";
import { requestIdOf } from "./plugins/request-id.ts";

export type Server = { requestIP(request: Request): { address: string } | null } | null;
export type ProxySettings = Pick<Config, "TRUST_PROXY" | "TRUSTED_PROXIES">;

const trustedRanges = new WeakMap<ProxySettings, IpRange[]>();

/** The proxies whose forwarding headers count; none unless `TRUST_PROXY` is on. */
function trustedProxiesOf(settings: ProxySettings): IpRange[] {
  if (!settings.TRUST_PROXY) return [];
  let ranges = trustedRanges.get(settings);
  if (!ranges) {
    ranges = parseRangeList(settings.TRUSTED_PROXIES);
    trustedRanges.set(settings, ranges);
  }
  return ranges;
}

/** An `X-Forwarded-For` entry without the port or brackets some proxies add. */
const hostOf = (entry: string) =>
  /^\[([^\]]+)\](?::\d+)?$/.exec(entry)?.[1] ??
  /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(entry)?.[1] ??
  entry;

/**
 * The client's address: the socket's peer, or, when that peer is a trusted proxy, the
 * right-most `X-Forwarded-For` entry that is not one. Entries left of it are whatever the
 * client sent and are never believed. An entry that is no address ends the walk at the last
 * trusted hop. Undefined when the request came through no socket (in-process calls).
 */
export function clientAddress(
  request: Request,
  server: Server,
  settings: ProxySettings,
): string | undefined {
  const peer = server?.requestIP(request)?.address;
  const proxies = trustedProxiesOf(settings);
  const trusted = (address: string) => {
    const parsed = parseIp(address);
    return parsed !== undefined && proxies.some((range) => inRange(parsed, range));
  };
  if (peer === undefined || !trusted(peer)) return peer;
  const hops = (request.headers.get("x-forwarded-for") ?? "").split(",");
  let address = peer;
  for (let index = hops.length - 1; index >= 0; index--) {
    const hop = hostOf((hops[index] as string).trim());
    if (hop === "") continue;
    if (parseIp(hop) === undefined) break;
    address = hop;
    if (!trusted(hop)) break;
  }
  return address;
}

/**
 * The audit facts of a request. The client address is looked up once, and only when something
 * reads it (an audit entry, the login throttle), since asking the server for it is not free;
 * the server too is asked for only then. A class rather than an object with a getter: every
 * guarded request builds one, and an object literal with an accessor costs several times as
 * much to make.
 */
class HttpRequestMeta implements RequestMeta {
  readonly requestId: string;
  private address: { ip: string | undefined } | undefined;

  constructor(
    private readonly request: Request,
    private readonly server: () => Server,
    private readonly settings: ProxySettings,
  ) {
    this.requestId = requestIdOf(request);
  }

  get ip() {
    this.address ??= { ip: clientAddress(this.request, this.server(), this.settings) };
    return this.address.ip;
  }
}

export const requestMeta = (
  request: Request,
  server: () => Server,
  settings: ProxySettings,
): RequestMeta => new HttpRequestMeta(request, server, settings);
