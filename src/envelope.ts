/** Success bodies of the envelope. Errors are rendered by the error plugin alone. */
export interface Page {
  limit: number;
  offset: number;
}

export const ok = <T extends object>(data: T) => ({ status: "success" as const, data });

export const okList = <T>(items: T[], total: number, page: Page) => ({
  status: "success" as const,
  data: { items },
  total,
  limit: page.limit,
  offset: page.offset,
});
