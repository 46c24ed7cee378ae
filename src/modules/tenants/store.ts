import type { TenantStore } from "../../../actors/ports.ts";
import { liveUserOf } from "../../../actors/tenant.machine.ts";
import type { Database } from "../../../db/client.ts";
import { findTenantById } from "../../../db/queries/tenants.ts";
import { findTenantUser, listTenantLiveUsers } from "../../../db/queries/users.ts";

/** Loads a tenant and all its users' live state in one go, for its actor. */
export function tenantStore(db: Database): TenantStore {
  return {
    async load(tenantId) {
      const tenant = await findTenantById(db, tenantId);
      if (!tenant) return undefined;
      const users = await listTenantLiveUsers(db, tenantId);
      return { tenant, users: Object.fromEntries(users.map((user) => [user.id, user])) };
    },
    async loadUser(tenantId, userId) {
      const row = await findTenantUser(db, { tenantId, id: userId });
      return row ? liveUserOf(row) : undefined;
    },
  };
}
