import { badRequest } from "../errors.ts";

const IDEMPOTENCY_KEY = /^[\x20-\x7E]{1,255}$/;

/** An `Idempotency-Key` header is 1 to 255 printable ASCII characters, on every route that takes one. */
export function assertIdempotencyKey(key: string | undefined) {
  if (key !== undefined && !IDEMPOTENCY_KEY.test(key)) {
    throw badRequest("invalid Idempotency-Key", [
      { field: "Idempotency-Key", message: "must be 1 to 255 printable ASCII characters" },
    ]);
  }
}
