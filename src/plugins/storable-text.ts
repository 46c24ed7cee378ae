import { Elysia } from "elysia";
import { badRequest } from "../errors.ts";
import { UNSTORABLE_TEXT, unstorableTextPaths } from "../lib/storable-text.ts";
import { PageQuery } from "../pagination.ts";
import { VALIDATION_MESSAGES } from "./errors.ts";

/** Pagination never fails (a bad value is the default), and its values are never stored. */
const PAGE_FIELDS = new Set(Object.keys(PageQuery));

const withoutPaging = (query: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(query).filter(([name]) => !PAGE_FIELDS.has(name)));

/** Refuses the first part of a request that carries text the database cannot store. */
function assertStorable(parts: Record<"params" | "query" | "body", unknown>): void {
  for (const [part, value] of Object.entries(parts)) {
    const paths = unstorableTextPaths(value);
    if (paths.length === 0) continue;
    throw badRequest(
      VALIDATION_MESSAGES[part] as string,
      paths.map((field) => ({ field, message: UNSTORABLE_TEXT })),
    );
  }
}

/**
 * One rule for every route, those added later included: no string of a body, query or path
 * reaches a handler with a NUL or an unpaired surrogate, which PostgreSQL would refuse (a 500)
 * or store mangled. It runs after schema validation, so authentication still comes first.
 */
export const storableTextPlugin = new Elysia({ name: "storable-text" }).onBeforeHandle(
  { as: "global" },
  ({ params, query, body }) => assertStorable({ params, query: withoutPaging(query), body }),
);
