import type { Role } from "./roles.ts";

const AGENT_UP: Role[] = ["agent", "supervisor", "admin", "platform_admin"];
const SUPERVISOR_UP: Role[] = ["supervisor", "admin", "platform_admin"];
const ADMIN_UP: Role[] = ["admin", "platform_admin"];

/**
 * Every permission a route can require, and the roles that hold it. Routes name one of
 * these in their `auth` option; nothing else decides who may call what.
 */
export const PERMISSIONS = {
  /** Any signed-in user, even one who must still change the password. */
  "session.self": { roles: AGENT_UP, allowPendingPassword: true },
  "tenants.read": { roles: ["platform_admin"] },
  "tenants.write": { roles: ["platform_admin"] },
  "users.read": { roles: ADMIN_UP },
  "users.write": { roles: ADMIN_UP },
  "audit.read": { roles: ADMIN_UP },
  "campaigns.read": { roles: AGENT_UP },
  "campaigns.write": { roles: ADMIN_UP },
  "campaigns.status": { roles: SUPERVISOR_UP },
  "campaigns.history": { roles: SUPERVISOR_UP },
  "leads.read": { roles: SUPERVISOR_UP },
  "leads.write": { roles: ADMIN_UP },
} satisfies Record<string, { roles: Role[]; allowPendingPassword?: boolean }>;

export type Permission = keyof typeof PERMISSIONS;
