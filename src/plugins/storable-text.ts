import { Elysia } from "elysia";
import { badRequest } from "../errors.ts";
import { holdsUnstorableText, UNSTORABLE_TEXT, unstorableTextPaths } from "../lib/storable-text.ts";
import { PageQuery } from "../pagination.ts";
import { VALIDATION_MESSAGES } from "./errors.ts";

/** Pagination never fails (a bad value is the default), and its values are never stored. */
const PAGE_FIELDS = new Set(Object.keys(PageQuery));

/** The query without pagination's fields; the query itself when it has none (most requests). */
function withoutPaging(query: Record<string, unknown>): Record<string, unknown> {
  let paged = false;
  for (const name in query) if (PAGE_FIELDS.has(name)) paged = true;
  if (!paged) return query;
  return Object.fromEntries(Object.entries(query).filter(([name]) => !PAGE_FIELDS.has(name)));
}

/** Refuses a part of a request that carries text the database cannot store. */
function assertStorable(part: "params" | "query" | "body", value: unknown): void {
  if (!holdsUnstorableText(value)) return;
  const paths = unstorableTextPaths(value);
  throw badRequest(
    VALIDATION_MESSAGES[part] as string,
    paths.map((field) => ({ field, message: UNSTORABLE_TEXT })),
  );
}

/**
 * One rule for every route, those added later included: no string of a body, query or path
 * reaches a handler with a NUL or an unpaired surrogate, which PostgreSQL would refuse (a 500)
 * or store mangled. It runs after schema validation, so authentication still comes first.
 */
export const storableTextPlugin = new Elysia({ name: "storable-text" }).onBeforeHandle(
  { as: "global" },
  ({ params, query, body }) => {
    assertStorable("params", params);
    assertStorable("query", withoutPaging(query));
    assertStorable("body", body);
  },
);
