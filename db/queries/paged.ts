export interface Paged<T> {
  items: T[];
  total: number;
}

/** Runs a page query and its count together: every list endpoint returns both. */
export async function paged<T>(
  items: Promise<T[]>,
  totals: Promise<{ total: number }[]>,
): Promise<Paged<T>> {
  const [rows, counted] = await Promise.all([items, totals]);
  return { items: rows, total: counted[0]?.total ?? 0 };
}
