/** How long the status operation remembers a key, from its first request. */
export const IDEMPOTENCY_WINDOW_MS = 60_000;

/** The first response given under a key, kept until `expiresAt` (epoch milliseconds). */
export interface IdempotencyEntry {
  key: string;
  bodyHash: string;
  status: number;
  body: Record<string, unknown>;
  expiresAt: number;
}

export type IdempotencyWindow = Record<string, IdempotencyEntry>;

export type IdempotencyLookup =
  | { kind: "miss" }
  | { kind: "replay"; entry: IdempotencyEntry }
  | { kind: "mismatch"; entry: IdempotencyEntry };

/** What a request under `key` with this body gets from the window at `now`. */
export function lookupKey(
  window: IdempotencyWindow,
  key: string,
  bodyHash: string,
  now: number,
): IdempotencyLookup {
  const entry = window[key];
  if (!entry || entry.expiresAt <= now) return { kind: "miss" };
  return entry.bodyHash === bodyHash ? { kind: "replay", entry } : { kind: "mismatch", entry };
}

/**
 * Entries are kept in the order they were recorded, which is the order they expire in (every
 * key lives 60 s from its first request), so the oldest entry says whether any has expired.
 */
export function hasExpired(window: IdempotencyWindow, now: number): boolean {
  for (const key in window) return (window[key] as IdempotencyEntry).expiresAt <= now;
  return false;
}

/** The window without its expired entries: those at its old end, up to the first live one. */
export function pruneWindow(window: IdempotencyWindow, now: number): IdempotencyWindow {
  if (!hasExpired(window, now)) return window;
  const pruned = { ...window };
  for (const key in pruned) {
    if ((pruned[key] as IdempotencyEntry).expiresAt > now) break;
    delete pruned[key];
  }
  return pruned;
}

const recentDigests = new Map<string, string>();
const RECENT_DIGESTS_MAX = 1024;

/**
 * A stable digest of a request body: key order and whitespace do not make it different.
 * Commands repeat a few small bodies (`{"action":"start"}`), so recent digests are kept.
 */
export function bodyHashOf(body: unknown): string {
  const canonical = canonicalJson(body);
  let digest = recentDigests.get(canonical);
  if (digest === undefined) {
    digest = new Bun.CryptoHasher("sha256").update(canonical).digest("hex");
    if (recentDigests.size >= RECENT_DIGESTS_MAX) recentDigests.clear();
    recentDigests.set(canonical, digest);
  }
  return digest;
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, item]) => item !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(",")}}`;
  }
  return JSON.stringify(value ?? null);
}
