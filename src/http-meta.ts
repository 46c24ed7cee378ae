import type { RequestMeta } from "./deps.ts";
import { requestIdOf } from "./plugins/request-id.ts";

/** The audit facts of a request; the client address is read from the server when there is one. */
export function requestMeta(
  request: Request,
  server: { requestIP(r: Request): { address: string } | null } | null,
): RequestMeta {
  return { requestId: requestIdOf(request), ip: server?.requestIP(request)?.address };
}
