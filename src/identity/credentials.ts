import type { Database } from "../../db/client.ts";
import {
  type ApiKeyRow,
  findApiKeyByHash,
  findNodeByHash,
  type NodeRow,
  touchApiKeys,
} from "../../db/queries/access.ts";
import type { Logger } from "../logger.ts";

const MAX_ENTRIES = 10_000;
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
  delete(key: string): void {
    this.map.delete(key);
  }
}

/**
 * API keys and node keys by digest, cached in memory (an unknown digest is cached as
 * unknown, so guessing costs no query after the first). Revocation updates the cache at
 * once. `last_used_at` is collected here and written in batches.
 */
export class CredentialDirectory {
  private readonly keys = new Lru<ApiKeyRow | null>(MAX_ENTRIES);
  private readonly nodes = new Lru<NodeRow | null>(MAX_ENTRIES);
  private readonly pendingUse = new Map<string, number>();
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly db: Database,
    private readonly logger: Logger,
  ) {}

  async apiKey(hash: string): Promise<ApiKeyRow | undefined> {
    let cached = this.keys.get(hash);
    if (cached === undefined) {
      cached = (await findApiKeyByHash(this.db, hash)) ?? null;
      this.keys.set(hash, cached);
    }
    return cached ?? undefined;
  }

  async node(hash: string): Promise<NodeRow | undefined> {
    let cached = this.nodes.get(hash);
    if (cached === undefined) {
      cached = (await findNodeByHash(this.db, hash)) ?? null;
      this.nodes.set(hash, cached);
    }
    return cached ?? undefined;
  }

  /** Replaces what is cached for a key or node after a committed change (creation, revocation). */
  apiKeyChanged(row: ApiKeyRow): void {
    this.keys.set(row.keyHash, row);
  }

  nodeChanged(row: NodeRow): void {
    this.nodes.set(row.apiKeyHash, row);
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
