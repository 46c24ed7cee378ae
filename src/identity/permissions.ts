import type { ScopeLevel, Scopes } from "../../db/schema/access.ts";
import { ROLES, type Role } from "./roles.ts";

const AGENT_UP: Role[] = ["agent", "supervisor", "admin", "platform_admin"];
const SUPERVISOR_UP: Role[] = ["supervisor", "admin", "platform_admin"];
const ADMIN_UP: Role[] = ["admin", "platform_admin"];

export type ScopedResource = keyof Scopes;
export const SCOPED_RESOURCES: ScopedResource[] = [
  "campaigns",
  "leads",
  "cdrs",
  "users",
  "webhooks",
];
export const SCOPE_LEVELS: ScopeLevel[] = ["none", "read", "write"];

export interface PermissionRule {
  /** Roles of users who hold it. */
  roles: Role[];
  /** The scope an API key needs for it; without one, API keys are refused. */
  scope?: { resource: ScopedResource; level: "read" | "write" };
  /** Open to users who must still change their password. */
  allowPendingPassword?: boolean;
  /**
   * The highest role of the users an API key may create or change through this permission.
   * A key is an integration's credential, not a person's: it must never mint or alter the
   * accounts that administer the tenant.
   */
  keyRoleCeiling?: Role;
}

/**
 * Every permission a route can require: which roles hold it and which API-key scope grants
 * it. Routes name one of these in their `auth` option; nothing else decides who may call what.
 */
export const PERMISSIONS = {
  "session.me": { roles: AGENT_UP, allowPendingPassword: true },
  "session.password": { roles: AGENT_UP, allowPendingPassword: true },
  "session.logout": { roles: AGENT_UP, allowPendingPassword: true },
  "tenants.read": { roles: ["platform_admin"] },
  "tenants.write": { roles: ["platform_admin"] },
  "tenants.settings": { roles: ADMIN_UP },
  "users.read": { roles: ADMIN_UP, scope: { resource: "users", level: "read" } },
  "users.write": {
    roles: ADMIN_UP,
    scope: { resource: "users", level: "write" },
    keyRoleCeiling: "supervisor",
  },
  "audit.read": { roles: ADMIN_UP },
  "api_keys.manage": { roles: ADMIN_UP },
  "edge_nodes.manage": { roles: ADMIN_UP },
  "campaigns.read": { roles: AGENT_UP, scope: { resource: "campaigns", level: "read" } },
  "campaigns.write": { roles: ADMIN_UP, scope: { resource: "campaigns", level: "write" } },
  "campaigns.status": { roles: SUPERVISOR_UP, scope: { resource: "campaigns", level: "write" } },
  /**
   * A campaign's regulatory profile and pacing (mode, ratio, abandon cap): supervisors too; the
   * rest of its settings is admins'.
   */
  "campaigns.rules": { roles: SUPERVISOR_UP, scope: { resource: "campaigns", level: "write" } },
  /** Choosing the `none` profile, which turns the rules off: a person who is an admin. */
  "campaigns.unregulated": { roles: ADMIN_UP },
  "campaigns.history": { roles: SUPERVISOR_UP, scope: { resource: "campaigns", level: "read" } },
  "leads.read": { roles: SUPERVISOR_UP, scope: { resource: "leads", level: "read" } },
  "leads.write": { roles: ADMIN_UP, scope: { resource: "leads", level: "write" } },
  "dnc.read": { roles: SUPERVISOR_UP, scope: { resource: "leads", level: "read" } },
  "dnc.write": { roles: ADMIN_UP, scope: { resource: "leads", level: "write" } },
  "agents.self": { roles: AGENT_UP },
  "agents.read": { roles: SUPERVISOR_UP },
  /** A supervisor's pause or sign-out of an agent. */
  "agents.supervise": { roles: SUPERVISOR_UP },
  "calls.disposition": { roles: AGENT_UP },
  /** Hang-up and transfer: the call's agent, or a supervisor for any call. */
  "calls.control": { roles: AGENT_UP },
  "realtime.supervisor": { roles: SUPERVISOR_UP },
  "realtime.agent": { roles: AGENT_UP },
  "cdrs.read": { roles: SUPERVISOR_UP, scope: { resource: "cdrs", level: "read" } },
  "webhooks.read": { roles: ADMIN_UP, scope: { resource: "webhooks", level: "read" } },
  "webhooks.write": { roles: ADMIN_UP, scope: { resource: "webhooks", level: "write" } },
} satisfies Record<string, PermissionRule>;

export type Permission = keyof typeof PERMISSIONS;

/** API keys may read their own identity on `/auth/me`, though it needs no scope. */
export const OPEN_TO_ANY_KEY: ReadonlySet<Permission> = new Set(["session.me"]);

const LEVEL_RANK: Record<ScopeLevel, number> = { none: 0, read: 1, write: 2 };

/** Whether scopes grant a level on a resource; write includes read, a missing resource is none. */
export const scopeGrants = (scopes: Scopes, resource: ScopedResource, level: "read" | "write") =>
  LEVEL_RANK[scopes[resource] ?? "none"] >= LEVEL_RANK[level];

const roleRank = (role: Role) => ROLES.indexOf(role);

/**
 * Whether a caller holding a permission may act on a user of `role` (create one, change one,
 * or give one that role). Users are bounded by the service's own rules; API keys by the
 * permission's `keyRoleCeiling`.
 */
export function reachesRole(
  caller: { kind: "user" | "api_key" },
  permission: Permission,
  role: Role,
): boolean {
  const ceiling: Role | undefined = (PERMISSIONS[permission] as PermissionRule).keyRoleCeiling;
  if (caller.kind !== "api_key" || ceiling === undefined) return true;
  return roleRank(role) <= roleRank(ceiling);
}
