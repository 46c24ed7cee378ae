import type { LiveUser } from "../../actors/tenant.machine.ts";

/** Who is calling, resolved once per request by the auth plugin. */
export interface UserPrincipal {
  kind: "user";
  user: LiveUser;
  tenantId: string;
  role: LiveUser["role"];
  tokenExpiresAt: number;
}

export type Principal = UserPrincipal;

/** The actor fields of an audit record for this principal. */
export const auditActorOf = (principal: Principal) => ({
  actorType: principal.kind,
  actorId: principal.user.id,
});
