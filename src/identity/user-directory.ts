import type { Database } from "../../db/client.ts";
import { findUserById, type UserRow } from "../../db/queries/users.ts";

/** What authenticated requests need to know about their user, without a query: all but the hash. */
export type LiveUser = Omit<UserRow, "passwordHash">;

const MAX_ENTRIES = 100_000;

const liveOf = ({ passwordHash: _secret, ...live }: UserRow): LiveUser => live;

/**
 * The in-memory view of users' live state. A user is loaded on first sight and kept up to
 * date by every write that changes it (`remember`), so token checks never hit the database.
 */
export class UserDirectory {
  private readonly users = new Map<string, LiveUser>();
  private readonly loading = new Map<string, Promise<LiveUser | undefined>>();

  constructor(private readonly db: Database) {}

  async get(id: string): Promise<LiveUser | undefined> {
    const cached = this.users.get(id);
    if (cached) return cached;
    let pending = this.loading.get(id);
    if (!pending) {
      pending = findUserById(this.db, id).then((row) => {
        this.loading.delete(id);
        return row ? this.remember(row) : undefined;
      });
      this.loading.set(id, pending);
    }
    return pending;
  }

  remember(row: UserRow): LiveUser {
    if (this.users.size >= MAX_ENTRIES && !this.users.has(row.id)) {
      const oldest = this.users.keys().next().value;
      if (oldest !== undefined) this.users.delete(oldest);
    }
    const live = liveOf(row);
    this.users.set(row.id, live);
    return live;
  }

  forget(id: string): void {
    this.users.delete(id);
  }
}
