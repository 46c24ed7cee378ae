/** Success bodies of the envelope. Errors are rendered by the error plugin alone. */
export interface Page {
  limit: number;
  offset: number;
}

export const ok = <T extends object>(data: T) => ({ status: "success" as const, data });

/** The media type of every JSON body, as Bun's `Response.json` writes it. */
export const JSON_MEDIA_TYPE = "application/json;charset=utf-8";

/** A body serialised ahead of time: sent as it is, under the JSON media type. */
export function jsonText(set: { headers: Record<string, unknown> }, text: string): string {
  set.headers["content-type"] = JSON_MEDIA_TYPE;
  return text;
}

export const okList = <T>(items: T[], total: number, page: Page) => ({
  status: "success" as const,
  data: { items },
  total,
  limit: page.limit,
  offset: page.offset,
});

/**
 * A short list answered whole, in the list envelope: one page holding every item, its limit
 * never below the 1 a client may ask for.
 */
export const okAll = <T>(items: T[]) =>
  okList(items, items.length, { limit: Math.max(1, items.length), offset: 0 });
