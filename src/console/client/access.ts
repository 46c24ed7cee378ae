import { facts } from "./facts.ts";
import { pickedTenant, role } from "./session.ts";

export type Permission = keyof typeof facts.permissions;

/** Whether the signed-in role holds a permission of the API's permission table. */
export const may = (permission: Permission) =>
  Boolean(role.value && facts.permissions[permission].includes(role.value));

/** The roles the signed-in user may give: up to its own (only a platform admin makes another). */
export function grantableRoles(): string[] {
  const own = role.value ? facts.roles.indexOf(role.value) : -1;
  return facts.roles.filter((_, index) => index <= own);
}

/** Where each role starts. */
export function home(): string {
  if (role.value === "platform_admin" && !pickedTenant.value) return "/tenants";
  if (may("realtime.supervisor")) return "/";
  return "/agent";
}
