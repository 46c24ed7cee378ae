import type { LiveUser } from "../../actors/tenant.machine.ts";
import type { ApiKeyRow } from "../../db/queries/access.ts";
import type { Scopes } from "../../db/schema/access.ts";
import type { Role } from "./roles.ts";

/** A signed-in user, resolved from a bearer token. */
export interface UserPrincipal {
  kind: "user";
  user: LiveUser;
  tenantId: string;
  role: Role;
  tokenExpiresAt: number;
}

/** An integration, resolved from a workspace API key. It has scopes instead of a role. */
export interface ApiKeyPrincipal {
  kind: "api_key";
  keyId: string;
  tenantId: string;
  role: null;
  scopes: Scopes;
  /** The key as the credential cache holds it, so that reading it costs no query. */
  key: ApiKeyRow;
}

/** Who made a change, as its audit record names them. */
export interface AuditActor {
  actorType: "user" | "api_key";
  actorId: string;
}

/** Who is calling an ordinary route, resolved once per request by the auth plugin. */
export type Principal = UserPrincipal | ApiKeyPrincipal;

/** A telephony edge node, resolved from its node key on `/api/v1/nodes/*` only. */
export interface NodePrincipal {
  kind: "edge_node";
  nodeId: string;
  tenantId: string;
  maxConcurrentCalls: number;
}

/**
 * The actor fields of an audit record for this principal: all that a command sent to another
 * process needs to know of who sent it (the principal was checked where the request came in).
 */
export const auditActorOf = (principal: Principal): AuditActor =>
  principal.kind === "user"
    ? { actorType: "user", actorId: principal.user.id }
    : { actorType: "api_key", actorId: principal.keyId };
