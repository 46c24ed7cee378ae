import type { Database } from "../../db/client.ts";
import {
  type ApiKeyRow,
  findApiKeyByHash,
  findNodeByHash,
  type NodeRow,
  touchApiKeys,
} from "../../db/queries/access.ts";
import type { ChangePublisher } from "../cluster/change-feed.ts";
import { ApiError } from "../errors.ts";
import type { Logger } from "../logger.ts";

const KNOWN_ENTRIES = 10_000;
const UNKNOWN_ENTRIES = 10_000;
/** Database lookups that find no key, per second, for keys and nodes together. */
const UNKNOWN_LOOKUPS_PER_SECOND = 100;
const FLUSH_MS = 10_000;

/** A bounded map that forgets its least recently used entry first. */
class Lru<V> {
  private readonly map = new Map<string, V>();
  constructor(private readonly max: number) {}
  get(key: string): V | undefined {
    const value = this.map.get(key);
    if (value !== undefined) {
      this.map.delete(key);
      this.map.set(key, value);
    }
    return value;
  }
  set(key: string, value: V): void {
    this.map.delete(key);
    if (this.map.size >= this.max) {
      const oldest = this.map.keys().next().value;
      if (oldest !== undefined) this.map.delete(oldest);
    }
    this.map.set(key, value);
  }

  clear(): void {
    this.map.clear();
  }

  delete(key: string): void {
    this.map.delete(key);
  }
  get size(): number {
    return this.map.size;
  }
}

/**
 * A token bucket of database lookups that find nothing. A lookup of an unseen digest holds a
 * token and gives it back when it finds a real key, so warming the cache after a restart
 * costs none; once guesses have spent the bucket, an unseen digest is answered without a
 * query, so guessing keys cannot turn into a query each.
 */
class LookupBudget {
  private tokens: number;
  private refilledAt: number;
  constructor(
    private readonly perSecond: number,
    private readonly now: () => number,
  ) {
    this.tokens = perSecond;
    this.refilledAt = now();
  }
  take(): boolean {
    const now = this.now();
    const refill = (Math.max(0, now - this.refilledAt) / 1000) * this.perSecond;
    this.tokens = Math.min(this.perSecond, this.tokens + refill);
    this.refilledAt = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
  giveBack(): void {
    this.tokens = Math.min(this.perSecond, this.tokens + 1);
  }
}

const lookupsExhausted = () =>
  new ApiError(503, "unavailable", "too many unknown keys; try again shortly", undefined, {
    "retry-after": "1",
  });

type Revocable = { revokedAt: Date | null };

/** A read of one digest in flight, and the committed change that overtook it, if any. */
interface Lookup<Row> {
  result: Promise<Row | undefined>;
  overtakenBy?: Row;
}

/**
 * One kind of credential by digest. Known rows and unknown digests live apart, so a flood
 * of guesses can evict only other guesses. A committed change always wins over a read that
 * was in flight when it landed, and a revocation is never undone by an older row.
 */
class CredentialCache<Row extends Revocable> {
  private readonly known: Lru<Row>;
  private readonly unknown: Lru<true>;
  private readonly inFlight = new Map<string, Lookup<Row>>();
  /** Counts `forget`s: a read begun before the last one is answered but not kept. */
  private generation = 0;

  constructor(
    private readonly find: (hash: string) => Promise<Row | undefined>,
    private readonly budget: LookupBudget,
    sizes: { known: number; unknown: number },
  ) {
    this.known = new Lru(sizes.known);
    this.unknown = new Lru(sizes.unknown);
  }

  get(hash: string): Promise<Row | undefined> {
    const known = this.known.get(hash);
    if (known !== undefined) return Promise.resolve(known);
    if (this.unknown.get(hash)) return Promise.resolve(undefined);
    const pending = this.inFlight.get(hash);
    if (pending) return pending.result;
    if (!this.budget.take()) return Promise.reject(lookupsExhausted());
    return this.lookUp(hash);
  }

  changed(hash: string, row: Row): void {
    const current = this.known.get(hash);
    const kept = current?.revokedAt && !row.revokedAt ? current : row;
    this.unknown.delete(hash);
    this.known.set(hash, kept);
    const lookup = this.inFlight.get(hash);
    if (lookup) lookup.overtakenBy = kept;
  }

  get sizes() {
    return { known: this.known.size, unknown: this.unknown.size };
  }

  /** Forgets every row and guess: each is read again when next asked for. */
  forget(): void {
    this.known.clear();
    this.unknown.clear();
    // A read under way may predate what was missed: its answer is not kept.
    this.generation++;
  }

  private lookUp(hash: string): Promise<Row | undefined> {
    const lookup = {} as Lookup<Row>;
    const generation = this.generation;
    lookup.result = (async () => {
      try {
        const row = await this.find(hash);
        if (row) this.budget.giveBack();
        // The read may predate a change committed meanwhile (a revocation): the change wins.
        if (lookup.overtakenBy) return lookup.overtakenBy;
        if (generation !== this.generation) return row;
        if (row) this.known.set(hash, row);
        else this.unknown.set(hash, true);
        return row;
      } finally {
        this.inFlight.delete(hash);
      }
    })();
    this.inFlight.set(hash, lookup);
    return lookup.result;
  }
}

/** How the directory reads credentials; tests count or hold these reads. */
export interface CredentialFinders {
  apiKey(hash: string): Promise<ApiKeyRow | undefined>;
  node(hash: string): Promise<NodeRow | undefined>;
}

export interface CredentialDirectoryOptions {
  finders?: CredentialFinders;
  now?: () => number;
  knownEntries?: number;
  unknownEntries?: number;
  unknownLookupsPerSecond?: number;
}

/**
 * API keys and node keys by digest, cached in memory. Revocation updates the cache at once;
 * unknown digests are remembered apart from real keys and their lookups are rationed.
 * `last_used_at` is collected here and written in batches.
 */
export class CredentialDirectory {
  private readonly keys: CredentialCache<ApiKeyRow>;
  private readonly nodes: CredentialCache<NodeRow>;
  private readonly pendingUse = new Map<string, number>();
  private timer: ReturnType<typeof setInterval> | undefined;
  private publish: ChangePublisher | undefined;

  constructor(
    private readonly db: Database,
    private readonly logger: Logger,
    options: CredentialDirectoryOptions = {},
  ) {
    const finders = options.finders ?? {
      apiKey: (hash) => findApiKeyByHash(db, hash),
      node: (hash) => findNodeByHash(db, hash),
    };
    const budget = new LookupBudget(
      options.unknownLookupsPerSecond ?? UNKNOWN_LOOKUPS_PER_SECOND,
      options.now ?? Date.now,
    );
    const sizes = {
      known: options.knownEntries ?? KNOWN_ENTRIES,
      unknown: options.unknownEntries ?? UNKNOWN_ENTRIES,
    };
    this.keys = new CredentialCache((hash) => finders.apiKey(hash), budget, sizes);
    this.nodes = new CredentialCache((hash) => finders.node(hash), budget, sizes);
  }

  /**
   * Forgets every cached key and node (changes announced by other processes may have been
   * missed): each is read again from the database when next presented.
   */
  forgetAll(): void {
    this.keys.forget();
    this.nodes.forget();
  }

  /** The key with this digest; a 503 when guesses have spent this second's lookups. */
  apiKey(hash: string): Promise<ApiKeyRow | undefined> {
    return this.keys.get(hash);
  }

  node(hash: string): Promise<NodeRow | undefined> {
    return this.nodes.get(hash);
  }

  /** Replaces what is cached for a key or node after a committed change (creation, revocation). */
  apiKeyChanged(row: ApiKeyRow, options: { announce?: boolean } = {}): void {
    this.keys.changed(row.keyHash, row);
    // Other processes only need to hear of revocations: a new key is read on first use.
    if (row.revokedAt && options.announce !== false)
      this.publish?.({ kind: "api_key", hash: row.keyHash });
  }

  nodeChanged(row: NodeRow, options: { announce?: boolean } = {}): void {
    this.nodes.changed(row.apiKeyHash, row);
    if (row.revokedAt && options.announce !== false)
      this.publish?.({ kind: "edge_node", hash: row.apiKeyHash });
  }

  /** Announces revocations from here on to other processes sharing the database. */
  publishChangesTo(publish: ChangePublisher): () => void {
    this.publish = publish;
    return () => {
      if (this.publish === publish) this.publish = undefined;
    };
  }

  /** Entries held, known and unknown, per kind. */
  get sizes() {
    return { keys: this.keys.sizes, nodes: this.nodes.sizes };
  }

  markUsed(keyId: string, at: number): void {
    this.pendingUse.set(keyId, at);
    if (!this.timer) {
      this.timer = setInterval(() => void this.flush(), FLUSH_MS);
      this.timer.unref?.();
    }
  }

  /** A use not yet written, so that reads see it before the next flush. */
  pendingUseOf(keyId: string): number | undefined {
    return this.pendingUse.get(keyId);
  }

  /** Writes the collected `last_used_at` values; called on a timer and at shutdown. */
  async flush(): Promise<void> {
    if (this.pendingUse.size === 0) return;
    const batch = new Map(this.pendingUse);
    this.pendingUse.clear();
    try {
      await touchApiKeys(this.db, batch);
    } catch (error) {
      this.logger.warn("could not record API key use", { error });
    }
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }
}
