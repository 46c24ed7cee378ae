import { Elysia } from "elysia";

const ids = new WeakMap<Request, string>();
const SAFE_INCOMING_ID = /^[A-Za-z0-9._:-]{8,128}$/;

/** The id of a request: the caller's `X-Request-Id` when it is sane, else a new UUID. */
export function requestIdOf(request: Request): string {
  let id = ids.get(request);
  if (id === undefined) {
    const incoming = request.headers.get("x-request-id");
    id = incoming && SAFE_INCOMING_ID.test(incoming) ? incoming : crypto.randomUUID();
    ids.set(request, id);
  }
  return id;
}

/** Gives every response an `X-Request-Id` header; the error plugin repeats it in the body. */
export const requestIdPlugin = new Elysia({ name: "request-id" }).onRequest(({ request, set }) => {
  set.headers["x-request-id"] = requestIdOf(request);
});
