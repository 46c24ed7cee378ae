/** The rows of a raw `execute`: postgres.js returns an array, PGlite an object with `rows`. */
export function rowsOf<T>(result: unknown): T[] {
  return (Array.isArray(result) ? result : ((result as { rows?: unknown[] }).rows ?? [])) as T[];
}

/** A JSON column as a driver returns it from a raw `execute`: parsed already, or as text. */
export const jsonOf = <T>(value: T | string): T =>
  typeof value === "string" ? (JSON.parse(value) as T) : value;
