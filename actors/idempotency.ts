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

/** A 53-bit digest of an idempotency key: a number, which a map holds without an object. */
export const keyDigest = (key: string): number =>
  Bun.hash.murmur32v3(key) * 2 ** 21 + (Bun.hash.xxHash32(key) >>> 11);

/**
 * The keys a campaign remembers, in the order they were recorded, which is the order they
 * expire in (every key lives 60 s from its first request). It is the one part of a
 * campaign actor's context changed in place: copying a window of thousands of keys on every
 * command cost more than the command. It persists as a plain object of its entries.
 *
 * At thousands of changes a second the windows hold hundreds of thousands of replies, and a
 * full garbage collection takes time by the number of objects it traces, not by their bytes.
 * So an entry is one string (see `pack`), key included, filed under a number, the key's
 * digest: one object per entry, where a map by key held two (a full collection over 260,000
 * open keys took 16 ms instead of 32). The rare key whose digest another key holds is filed
 * by the key itself.
 */
export class IdempotencyWindow {
  private readonly byDigest = new Map<number, string>();
  private readonly collided = new Map<string, string>();

  constructor(private readonly digestOf: (key: string) => number = keyDigest) {}

  /** A window of these entries (a persisted one, or another window's), in expiry order. */
  static from(source: IdempotencyWindow | PersistedWindow | Iterable<IdempotencyEntry>) {
    const window = new IdempotencyWindow();
    const entries =
      source instanceof IdempotencyWindow
        ? source.all()
        : Symbol.iterator in source
          ? (source as Iterable<IdempotencyEntry>)
          : Object.values(source as PersistedWindow);
    for (const entry of [...entries].sort((a, b) => a.expiresAt - b.expiresAt)) window.file(entry);
    return window;
  }

  get size(): number {
    return this.byDigest.size + this.collided.size;
  }

  /** What a request under `key` with this body gets from the window at `now`. */
  lookup(key: string, bodyHash: string, now: number): IdempotencyLookup {
    const packed = this.find(key);
    if (packed === undefined || expiresAtOf(packed) <= now) return MISS;
    const entry = unpack(packed);
    return entry.bodyHash === bodyHash ? { kind: "replay", entry } : { kind: "mismatch", entry };
  }

  /**
   * Keeps `entry` and forgets what had expired by the time of its request: the window is
   * pruned as it grows, so nothing else has to.
   */
  record(entry: IdempotencyEntry): void {
    this.prune(entry.expiresAt - IDEMPOTENCY_WINDOW_MS);
    this.file(entry);
  }

  /** Forgets the expired entries: those at the old end, up to the first live one. */
  prune(now: number): void {
    pruneOldEnd(this.byDigest, now);
    pruneOldEnd(this.collided, now);
  }

  /** When the oldest entry expires (epoch milliseconds), if there is one. */
  get oldestExpiresAt(): number | undefined {
    const first = [firstOf(this.byDigest), firstOf(this.collided)].filter((p) => p !== undefined);
    return first.length === 0 ? undefined : Math.min(...first.map(expiresAtOf));
  }

  /** Every entry, oldest first. */
  all(): IdempotencyEntry[] {
    return [...this.byDigest.values(), ...this.collided.values()]
      .map(unpack)
      .sort((a, b) => a.expiresAt - b.expiresAt);
  }

  toJSON(): PersistedWindow {
    return Object.fromEntries(this.all().map((entry) => [entry.key, entry]));
  }

  /** Files `entry` at the young end, in place of any entry of its key. */
  private file(entry: IdempotencyEntry): void {
    const digest = this.digestOf(entry.key);
    const held = this.byDigest.get(digest);
    // A key recorded again (after its window) moves to the young end, where it now expires.
    this.collided.delete(entry.key);
    if (held === undefined || holdsKey(held, entry.key)) {
      this.byDigest.delete(digest);
      this.byDigest.set(digest, pack(entry));
    } else {
      this.collided.set(entry.key, pack(entry));
    }
  }

  private find(key: string): string | undefined {
    const packed = this.byDigest.get(this.digestOf(key));
    if (packed !== undefined && holdsKey(packed, key)) return packed;
    return this.collided.size === 0 ? undefined : this.collided.get(key);
  }
}

const MISS: IdempotencyLookup = { kind: "miss" };

function firstOf<K>(entries: Map<K, string>): string | undefined {
  for (const packed of entries.values()) return packed;
  return undefined;
}

function pruneOldEnd<K>(entries: Map<K, string>, now: number): void {
  for (const [filedUnder, packed] of entries) {
    if (expiresAtOf(packed) > now) return;
    entries.delete(filedUnder);
  }
}

/**
 * An entry as one string: `status:expiresAt:hashLength:keyLength:`, then the body hash, the
 * key and the reply's text. Joined from an array, since a concatenation would be kept as a
 * rope, an object for each of its pieces.
 */
const pack = (entry: IdempotencyEntry): string =>
  [
    entry.status,
    ":",
    entry.expiresAt,
    ":",
    entry.bodyHash.length,
    ":",
    entry.key.length,
    ":",
    entry.bodyHash,
    entry.key,
    entry.text,
  ].join("");

/** Where each part of a packed entry starts. */
function layoutOf(packed: string) {
  const afterStatus = packed.indexOf(":");
  const afterExpiry = packed.indexOf(":", afterStatus + 1);
  const afterHashLength = packed.indexOf(":", afterExpiry + 1);
  const afterKeyLength = packed.indexOf(":", afterHashLength + 1);
  const hashStart = afterKeyLength + 1;
  const keyStart = hashStart + Number(packed.slice(afterExpiry + 1, afterHashLength));
  const keyLength = Number(packed.slice(afterHashLength + 1, afterKeyLength));
  return { afterStatus, afterExpiry, hashStart, keyStart, textStart: keyStart + keyLength };
}

function expiresAtOf(packed: string): number {
  const from = packed.indexOf(":") + 1;
  return Number(packed.slice(from, packed.indexOf(":", from)));
}

function holdsKey(packed: string, key: string): boolean {
  const { keyStart, textStart } = layoutOf(packed);
  return textStart - keyStart === key.length && packed.startsWith(key, keyStart);
}

function unpack(packed: string): IdempotencyEntry {
  const { afterStatus, afterExpiry, hashStart, keyStart, textStart } = layoutOf(packed);
  return {
    key: packed.slice(keyStart, textStart),
    bodyHash: packed.slice(hashStart, keyStart),
    status: Number(packed.slice(0, afterStatus)),
    text: packed.slice(textStart),
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
