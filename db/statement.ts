import type { RawClient } from "./client.ts";

/**
 * Runs a statement written as text with numbered parameters on the driver under Drizzle.
 * Drizzle builds a query's text from its parts every time it runs it (an eighth of the
 * dialer's CPU under load); the statements on every call's path are written once as text
 * and go straight to the driver, which prepares them (see the two clients). Parameters are
 * strings, numbers, booleans or null; rows should carry no timestamps, which the drivers
 * read differently.
 */
export async function runStatement<T>(
  raw: RawClient,
  text: string,
  params: readonly unknown[],
): Promise<T[]> {
  if (raw.kind === "pglite") return (await raw.client.query<T>(text, params as unknown[])).rows;
  return (await raw.client.unsafe(text, params as never[])) as unknown as T[];
}

/**
 * A PostgreSQL array literal of `values`, each quoted, null staying NULL (`{"a",NULL}`), for
 * `unnest($1::uuid[])` and the like: one parameter carries a column of a batch on both drivers.
 */
export const arrayLiteral = (values: readonly (string | null)[]) =>
  `{${values.map((value) => (value === null ? "NULL" : `"${value.replace(/["\\]/g, "\\$&")}"`)).join(",")}}`;
