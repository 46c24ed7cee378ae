import { t } from "elysia";
import type { Page } from "./envelope.ts";

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 500;

/**
 * Query fields every list accepts. They are strings on purpose: a bad value is not an error,
 * it falls back to the default.
 */
export const PageQuery = {
  limit: t.Optional(t.String()),
  offset: t.Optional(t.String()),
};

const INTEGER = /^\d+$/;

/**
 * `limit` outside 1–500 or not a number gives 50; `offset` negative or not a number gives 0,
 * and one past the largest safe integer is that integer: a page past the end, still empty.
 */
export function parsePage(query: {
  limit?: string | undefined;
  offset?: string | undefined;
}): Page {
  const limit = query.limit !== undefined && INTEGER.test(query.limit) ? Number(query.limit) : NaN;
  const offset =
    query.offset !== undefined && INTEGER.test(query.offset) ? Number(query.offset) : NaN;
  return {
    limit: limit >= 1 && limit <= MAX_LIMIT ? limit : DEFAULT_LIMIT,
    offset: Number.isNaN(offset) ? 0 : Math.min(offset, Number.MAX_SAFE_INTEGER),
  };
}
