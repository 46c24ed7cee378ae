/** How long the status operation remembers a key, from its first request. */
export const IDEMPOTENCY_WINDOW_MS = 60_000;

/** The first response given under a key, kept until `expiresAt` (epoch milliseconds). */
export interface IdempotencyEntry {
  key: string;
  bodyHash: string;
  status: number;
  /** The reply's JSON text: serialised once, then sent, stored and replayed as it is. */
  text: string;
  expiresAt: number;
}

/** A window as it persists (JSON): its entries by key, oldest first. */
export type PersistedWindow = Record<string, IdempotencyEntry>;

export type IdempotencyLookup =
  | { kind: "miss" }
  | { kind: "replay"; entry: IdempotencyEntry }
  | { kind: "mismatch"; entry: IdempotencyEntry };

/**
 * The keys a campaign remembers, in the order they were recorded, which is the order they
 * expire in (every key lives 60 s from its first request). It is the one part of a
 * campaign actor's context changed in place: copying a window of thousands of keys on every
 * command cost more than the command. It persists as a plain object of its entries.
 *
 * Each entry is held as one flat string (see `pack`), not as an object with its own strings:
 * at thousands of changes a second the windows hold hundreds of thousands of replies, and a
 * full garbage collection takes time by the number of objects it traces, not by their bytes
 * (an object per entry made it take half as long again).
 */
export class IdempotencyWindow {
  private readonly entries = new Map<string, string>();

  /** A window of these entries (a persisted one, or another window's), in expiry order. */
  static from(source: IdempotencyWindow | PersistedWindow | Iterable<IdempotencyEntry>) {
    const window = new IdempotencyWindow();
    const entries =
      source instanceof IdempotencyWindow
        ? source.all()
        : Symbol.iterator in source
          ? (source as Iterable<IdempotencyEntry>)
          : Object.values(source as PersistedWindow);
    for (const entry of [...entries].sort((a, b) => a.expiresAt - b.expiresAt))
      window.entries.set(entry.key, pack(entry));
    return window;
  }

  get size(): number {
    return this.entries.size;
  }

  /** What a request under `key` with this body gets from the window at `now`. */
  lookup(key: string, bodyHash: string, now: number): IdempotencyLookup {
    const packed = this.entries.get(key);
    if (packed === undefined || expiresAtOf(packed) <= now) return MISS;
    const entry = unpack(key, packed);
    return entry.bodyHash === bodyHash ? { kind: "replay", entry } : { kind: "mismatch", entry };
  }

  /**
   * Keeps `entry` and forgets what had expired by the time of its request: the window is
   * pruned as it grows, so nothing else has to.
   */
  record(entry: IdempotencyEntry): void {
    this.prune(entry.expiresAt - IDEMPOTENCY_WINDOW_MS);
    // A key recorded again (after its window) moves to the young end, where it now expires.
    this.entries.delete(entry.key);
    this.entries.set(entry.key, pack(entry));
  }

  /** Forgets the expired entries: those at the old end, up to the first live one. */
  prune(now: number): void {
    for (const [key, packed] of this.entries) {
      if (expiresAtOf(packed) > now) return;
      this.entries.delete(key);
    }
  }

  /** Every entry, oldest first. */
  *all(): IterableIterator<IdempotencyEntry> {
    for (const [key, packed] of this.entries) yield unpack(key, packed);
  }

  toJSON(): PersistedWindow {
    return Object.fromEntries([...this.all()].map((entry) => [entry.key, entry]));
  }
}

const MISS: IdempotencyLookup = { kind: "miss" };

/**
 * An entry without its key as one string: `status:expiresAt:hashLength:` then the body hash
 * and the reply's text. Joined from an array, since a concatenation would be kept as a rope,
 * an object for each of its pieces.
 */
const pack = (entry: IdempotencyEntry): string =>
  [
    entry.status,
    ":",
    entry.expiresAt,
    ":",
    entry.bodyHash.length,
    ":",
    entry.bodyHash,
    entry.text,
  ].join("");

function expiresAtOf(packed: string): number {
  const from = packed.indexOf(":") + 1;
  return Number(packed.slice(from, packed.indexOf(":", from)));
}

function unpack(key: string, packed: string): IdempotencyEntry {
  const afterStatus = packed.indexOf(":");
  const afterExpiry = packed.indexOf(":", afterStatus + 1);
  const afterLength = packed.indexOf(":", afterExpiry + 1);
  const hashEnd = afterLength + 1 + Number(packed.slice(afterExpiry + 1, afterLength));
  return {
    key,
    bodyHash: packed.slice(afterLength + 1, hashEnd),
    status: Number(packed.slice(0, afterStatus)),
    text: packed.slice(hashEnd),
    expiresAt: Number(packed.slice(afterStatus + 1, afterExpiry)),
  };
}

/** A stable digest of a request body: key order and whitespace do not make it different. */
export function bodyHashOf(body: unknown): string {
  return new Bun.CryptoHasher("sha256").update(canonicalJson(body)).digest("hex");
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
