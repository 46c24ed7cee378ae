import type { Database } from "../../db/client.ts";
import { findUserById, type UserRow } from "../../db/queries/users.ts";

/** What every authenticated request needs to know about its user, without a query. */
export interface LiveUser {
  id: string;
  tenantId: string;
  email: string;
  role: UserRow["role"];
  status: UserRow["status"];
  mustChangePassword: boolean;
}

const MAX_ENTRIES = 100_000;

const liveOf = (row: UserRow): LiveUser => ({
  id: row.id,
  tenantId: row.tenantId,
  email: row.email,
  role: row.role,
  status: row.status,
  mustChangePassword: row.mustChangePassword,
});

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
