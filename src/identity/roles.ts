import { t } from "elysia";

export const ROLES = ["agent", "supervisor", "admin", "platform_admin"] as const;
export type Role = (typeof ROLES)[number];
export const RoleSchema = t.Union(ROLES.map((role) => t.Literal(role)));

export const USER_STATUSES = ["active", "disabled"] as const;
export type UserStatus = (typeof USER_STATUSES)[number];
export const UserStatusSchema = t.Union(USER_STATUSES.map((status) => t.Literal(status)));

/** The reserved tenant that platform admins belong to. */
export const PLATFORM_DOMAIN = "platform";
