import { type AnyColumn, sql } from "drizzle-orm";
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

/**
 * `column = any($1::type[])`: one statement however many values. An `in ($1, …, $n)` list is a
 * statement of its own for each length, which postgres.js prepares on first use (a round trip
 * that holds up every query queued on the connection) and keeps for the connection's life.
 */
export const isAny = (
  column: AnyColumn,
  values: readonly (string | number)[],
  type: "uuid" | "bigint",
) => sql`${column} = any(${arrayLiteral(values.map(String))}::${sql.raw(type)}[])`;

export const isAnyUuid = (column: AnyColumn, ids: readonly string[]) => isAny(column, ids, "uuid");

/** A parameter of a statement, as the drivers take it. */
export type StatementParam = string | number | boolean | null;

/**
 * A statement written with named parameters (`:lead_id`), numbered once for the driver:
 * read by name rather than by counting `$n`, and run with one object of named values. A
 * name used twice is one parameter; a name missing from the values is an error at once.
 */
export function namedStatement<P extends Record<string, StatementParam>>(text: string) {
  const names: string[] = [];
  // `::type` casts are left alone: a name follows a single colon.
  const numbered = text.replace(/(?<![:\w]):([a-z_][a-z0-9_]*)/g, (_match, name: string) => {
    const known = names.indexOf(name);
    if (known !== -1) return `$${known + 1}`;
    names.push(name);
    return `$${names.length}`;
  });
  return {
    text: numbered,
    /** The values in the order of their numbers. */
    values: (params: P) => valuesOf(names, params),
    run<T>(raw: RawClient, params: P): Promise<T[]> {
      return runStatement<T>(raw, numbered, valuesOf(names, params));
    },
  };
}

function valuesOf(names: readonly string[], params: Record<string, StatementParam>) {
  return names.map((name) => {
    const value = params[name];
    if (value === undefined) throw new Error(`statement parameter :${name} is missing`);
    return value;
  });
}
