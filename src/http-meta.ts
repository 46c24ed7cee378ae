import type { RequestMeta } from "./deps.ts";
import { requestIdOf } from "./plugins/request-id.ts";

type Server = { requestIP(request: Request): { address: string } | null } | null;

/**
 * The audit facts of a request. The client address is the socket's, or behind a trusted
 * proxy the first `X-Forwarded-For` entry.
 */
export function requestMeta(request: Request, server: Server, trustProxy = false): RequestMeta {
  const forwarded = trustProxy
    ? request.headers.get("x-forwarded-for")?.split(",")[0]?.trim()
    : undefined;
  return { requestId: requestIdOf(request), ip: forwarded || server?.requestIP(request)?.address };
}
