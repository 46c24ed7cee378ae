import type { Database } from "../../db/client.ts";
import { findTenantById, type TenantRow } from "../../db/queries/tenants.ts";

const MAX_ENTRIES = 10_000;

/** Tenants by id, cached: every request names one and they change rarely. */
export class TenantDirectory {
  private readonly tenants = new Map<string, TenantRow>();

  constructor(private readonly db: Database) {}

  async get(id: string): Promise<TenantRow | undefined> {
    const cached = this.tenants.get(id);
    if (cached) return cached;
    const row = await findTenantById(this.db, id);
    if (row) this.remember(row);
    return row;
  }

  remember(row: TenantRow): TenantRow {
    if (this.tenants.size >= MAX_ENTRIES && !this.tenants.has(row.id)) {
      const oldest = this.tenants.keys().next().value;
      if (oldest !== undefined) this.tenants.delete(oldest);
    }
    this.tenants.set(row.id, row);
    return row;
  }
}
