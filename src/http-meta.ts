import type { RequestMeta } from "./deps.ts";
import { requestIdOf } from "./plugins/request-id.ts";

type Server = { requestIP(request: Request): { address: string } | null } | null;

/**
 * The audit facts of a request. The client address is the socket's, or behind a trusted
 * proxy the first `X-Forwarded-For` entry; it is looked up only when something reads it
 * (an audit entry, the login throttle), since asking the server for it is not free.
 */
export function requestMeta(request: Request, server: Server, trustProxy = false): RequestMeta {
  return {
    requestId: requestIdOf(request),
    get ip() {
      const forwarded = trustProxy
        ? request.headers.get("x-forwarded-for")?.split(",")[0]?.trim()
        : undefined;
      return forwarded || server?.requestIP(request)?.address;
    },
  };
}
