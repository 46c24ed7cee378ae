import { Elysia } from "elysia";

/** Kept on the request itself: a WeakMap entry per request cost more than the rest of the id. */
const ID = Symbol("request-id");
type Tagged = Request & { [ID]?: string };
const SAFE_INCOMING_ID = /^[A-Za-z0-9._:-]{8,128}$/;
/** Ids are this process's random prefix and a counter: unique, and far cheaper than a UUID each. */
const PREFIX = crypto.randomUUID().slice(0, 8);
let counter = 0;

/** The id of a request: the caller's `X-Request-Id` when it is sane, else a new one. */
export function requestIdOf(request: Request): string {
  let id = (request as Tagged)[ID];
  if (id === undefined) {
    const incoming = request.headers.get("x-request-id");
    id =
      incoming && SAFE_INCOMING_ID.test(incoming)
        ? incoming
        : `${PREFIX}-${(++counter).toString(36)}`;
    (request as Tagged)[ID] = id;
  }
  return id;
}

/**
 * Gives every response an `X-Request-Id` header; the error plugin repeats it in the body and
 * sets the header on every error, including those raised before this hook (unknown routes,
 * unreadable bodies). A transform hook, not a request hook: with any request hook, Elysia
 * builds each request's context on a slower path, which doubled the cost of a cheap route.
 */
export const requestIdPlugin = new Elysia({ name: "request-id" }).onTransform(
  { as: "global" },
  ({ request, set }) => {
    set.headers["x-request-id"] = requestIdOf(request);
  },
);
