import { badRequest, type FieldError, unprocessable } from "../errors.ts";

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/i;

/** An RFC 3339 instant, or a field error naming the parameter. */
function instantOf(
  field: string,
  value: string | undefined,
  errors: FieldError[],
): Date | undefined {
  if (value === undefined) return undefined;
  const at = RFC3339.test(value) ? new Date(value) : undefined;
  if (!at || Number.isNaN(at.getTime())) {
    errors.push({ field, message: "must be an RFC 3339 timestamp, e.g. 2026-03-02T12:00:00Z" });
    return undefined;
  }
  return at;
}

/**
 * A query's `from` and `to`: each an RFC 3339 instant when given (400 naming it otherwise),
 * and `from` not after `to` (422 naming `from`).
 */
export function rangeOf(query: { from?: string | undefined; to?: string | undefined }) {
  const errors: FieldError[] = [];
  const from = instantOf("from", query.from, errors);
  const to = instantOf("to", query.to, errors);
  if (errors.length) throw badRequest("invalid query parameters", errors);
  if (from && to && from.getTime() > to.getTime())
    throw unprocessable("from", "must not be after `to`");
  return { from, to };
}
