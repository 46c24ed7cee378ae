import { Elysia } from "elysia";
import type { RequestMeta, ServiceDeps } from "../deps.ts";
import { ApiError, forbidden, MISSING_AUTHORIZATION, unauthenticated } from "../errors.ts";
import { requestMeta, type Server } from "../http-meta.ts";
import {
  OPEN_TO_ANY_KEY,
  PERMISSIONS,
  type Permission,
  type PermissionRule,
  scopeGrants,
} from "../identity/permissions.ts";
import type {
  ApiKeyPrincipal,
  NodePrincipal,
  Principal,
  UserPrincipal,
} from "../identity/principal.ts";
import type { RateDecision } from "../identity/rate-limiter.ts";
import { ROLES, type Role } from "../identity/roles.ts";
import {
  API_KEY_PREFIX,
  digestOf,
  isWellFormedSecret,
  NODE_KEY_PREFIX,
} from "../identity/secrets.ts";
import {
  assertTenantReach,
  IGNORED_TENANT,
  isUuid,
  resolveTenant,
} from "../identity/tenant-scope.ts";
import { refuseUnreadableBody } from "./json-body.ts";

export type AuthDeps = Pick<
  ServiceDeps,
  "tokens" | "tenants" | "credentials" | "rateLimiter" | "clock" | "config"
>;

/** The scheme's name is case-insensitive (RFC 9110 §11.1). */
const BEARER = /^Bearer +([A-Za-z0-9._~+/=-]+)$/i;
const INVALID_TOKEN = "invalid or expired token";
const INVALID_KEY = "invalid or revoked key";

type Headers = Record<string, string | number>;

/** The IETF draft's rate-limit fields, on every response to an API key. */
export function rateLimitHeaders(decision: RateDecision): Record<string, string> {
  return {
    "ratelimit-policy": `"per-key";q=${decision.limit};w=60`,
    ratelimit: `"per-key";r=${decision.remaining};t=${decision.resetSeconds}`,
  };
}

function principalOf(
  user: UserPrincipal["user"] | undefined,
  claims: { tid: string; exp: number; role: string },
): UserPrincipal {
  if (!user || user.tenantId !== claims.tid) throw unauthenticated(INVALID_TOKEN);
  if (user.status === "disabled") throw new ApiError(403, "account_disabled", "account disabled");
  const claimed = ROLES.indexOf(claims.role as Role);
  if (claimed === -1) throw unauthenticated(INVALID_TOKEN);
  return {
    kind: "user",
    user,
    tenantId: user.tenantId,
    // The token pins its role: a promotion needs a new token, a demotion holds at once.
    role: ROLES[Math.min(claimed, ROLES.indexOf(user.role))] as Role,
    tokenExpiresAt: claims.exp * 1000,
  };
}

/**
 * A token seen before, whose user's tenant is loaded, resolves without a promise: the hot
 * path of every signed-in request.
 */
function cachedUserPrincipal(deps: AuthDeps, token: string): UserPrincipal | undefined {
  const claims = deps.tokens.cached(token);
  const user = claims && deps.tenants.loadedUser(claims.tid, claims.sub);
  return user && claims ? principalOf(user, claims) : undefined;
}

async function userPrincipal(deps: AuthDeps, token: string): Promise<UserPrincipal> {
  const claims = await deps.tokens.verify(token);
  if (!claims || !isUuid(claims.sub) || !isUuid(claims.tid)) throw unauthenticated(INVALID_TOKEN);
  return principalOf(await deps.tenants.user(claims.tid, claims.sub), claims);
}

/** Resolves a key and counts the request against its rate limit; failures never count. */
async function apiKeyPrincipal(
  deps: AuthDeps,
  key: string,
  headers: Headers,
): Promise<ApiKeyPrincipal> {
  const row = isWellFormedSecret(key) ? await deps.credentials.apiKey(digestOf(key)) : undefined;
  if (!row || row.revokedAt) throw unauthenticated(INVALID_KEY);
  const tenant =
    deps.tenants.loadedTenant(row.tenantId) ?? (await deps.tenants.tenant(row.tenantId));
  if (!tenant) throw unauthenticated(INVALID_KEY);
  const now = deps.clock.now();
  const taken = deps.rateLimiter.take(
    row.id,
    row.rateLimitPerMinute ?? tenant.rateLimitPerMinute,
    now,
  );
  // A promise only while the key's units are asked for: the hot path stays synchronous.
  const decision = taken instanceof Promise ? await taken : taken;
  const limitHeaders = rateLimitHeaders(decision);
  Object.assign(headers, limitHeaders);
  if (!decision.allowed) {
    throw new ApiError(429, "rate_limited", "rate limit exceeded", undefined, {
      ...limitHeaders,
      "retry-after": String(decision.resetSeconds),
    });
  }
  deps.credentials.markUsed(row.id, now);
  return {
    kind: "api_key",
    keyId: row.id,
    tenantId: row.tenantId,
    role: null,
    scopes: row.scopes,
    key: row,
  };
}

/**
 * Turns a bearer value into a principal: a user token or a workspace API key. Node keys
 * belong to `/api/v1/nodes/*` alone and are refused here. `headers` receives the rate-limit
 * fields of a key.
 */
export function authenticate(
  deps: AuthDeps,
  bearer: string | undefined,
  headers: Headers = {},
): Principal | Promise<Principal> {
  if (!bearer) throw unauthenticated(MISSING_AUTHORIZATION);
  if (bearer.startsWith(API_KEY_PREFIX)) return apiKeyPrincipal(deps, bearer, headers);
  if (bearer.startsWith(NODE_KEY_PREFIX)) throw unauthenticated(INVALID_KEY);
  return cachedUserPrincipal(deps, bearer) ?? userPrincipal(deps, bearer);
}

/** Checks a principal against one permission of the table. */
export function authorize(principal: Principal, permission: Permission): void {
  const rule: PermissionRule = PERMISSIONS[permission];
  if (principal.kind === "api_key") {
    if (OPEN_TO_ANY_KEY.has(permission)) return;
    if (!rule.scope) throw forbidden("API keys cannot use this endpoint");
    if (!scopeGrants(principal.scopes, rule.scope.resource, rule.scope.level)) {
      throw forbidden(`the API key needs ${rule.scope.level} access to ${rule.scope.resource}`);
    }
    return;
  }
  if (principal.user.mustChangePassword && !rule.allowPendingPassword) {
    throw new ApiError(403, "password_change_required", "password change required");
  }
  if (!rule.roles.includes(principal.role)) throw forbidden("insufficient role");
}

/** Narrows to a user for the operations that only a person does (passwords, logout). */
export function asUser(principal: Principal): UserPrincipal {
  if (principal.kind !== "user") throw forbidden("API keys cannot use this endpoint");
  return principal;
}

export const bearerOf = (header: string | null | undefined) => {
  if (!header) return undefined;
  const match = BEARER.exec(header.trim());
  if (!match) throw unauthenticated(MISSING_AUTHORIZATION);
  return match[1];
};

/** A node key's node; user tokens, API keys and revoked node keys are all 401. */
export async function authenticateNode(
  deps: AuthDeps,
  bearer: string | undefined,
): Promise<NodePrincipal> {
  if (!bearer) throw unauthenticated(MISSING_AUTHORIZATION);
  const row =
    bearer.startsWith(NODE_KEY_PREFIX) && isWellFormedSecret(bearer)
      ? await deps.credentials.node(digestOf(bearer))
      : undefined;
  if (!row || row.revokedAt) throw unauthenticated(INVALID_KEY);
  return {
    kind: "edge_node",
    nodeId: row.id,
    tenantId: row.tenantId,
    maxConcurrentCalls: row.maxConcurrentCalls,
  };
}

/** The transform phase leaves the principal on the request's context for `resolve` to type. */
type Carrier = { principal?: Principal; node?: NodePrincipal };

/** What a guarded route's handler receives beside the request. */
export type Caller = {
  principal: Principal;
  /** The tenant the request acts in (see `resolveTenant`). */
  tenantId: string;
  meta: RequestMeta;
};

/** A route's own options, as the macro sees them when it is applied to the route. */
type RouteOptions = { query?: { properties?: Record<string, unknown> } };

/**
 * The one auth guard. Routes declare `{ auth: "<permission>" }` and receive `principal`,
 * `tenantId` and `meta`, or `{ nodeAuth: true }` (the edge-node protocol) and receive `node`,
 * or `{ meta: true }` (no credentials: login) and receive `meta`.
 *
 * Authentication, the permission and the reach of `tenant_id` (403) are checked in the
 * transform phase, before the body is validated, so that an unauthenticated or unauthorised
 * caller learns nothing about the body the route expects. The named tenant is looked up after
 * validation (an unknown one is 404), and only on routes whose query schema takes `tenant_id`;
 * the others act in the caller's own tenant.
 *
 * `server` is the listening server, asked for only when a service reads a client's address:
 * a hook that reads the context's `server` makes Elysia build a dearer context for every
 * request of its routes.
 */
export const authPlugin = (deps: AuthDeps, server: () => Server) => {
  const metaOf = (request: Request) => requestMeta(request, server, deps.config);
  return new Elysia({ name: "auth" }).macro({
    auth: (permission: Permission) => {
      let takesTenant = false;
      return {
        // The API document names each route's permission; the permission matrix test reads it.
        detail: { ["x-permission" as string]: permission },
        // Elysia shows the macro the route's own options when it applies it to the route.
        introspect(route: unknown) {
          const named = (route as RouteOptions).query?.properties?.tenant_id;
          takesTenant = named !== undefined && !(named as Record<string, unknown>)[IGNORED_TENANT];
        },
        async transform(context) {
          const { request, set, query } = context;
          const bearer = bearerOf(request.headers.get("authorization"));
          const found = authenticate(deps, bearer, set.headers as Headers);
          const principal = found instanceof Promise ? await found : found;
          authorize(principal, permission);
          assertTenantReach(principal, (query as Record<string, unknown>).tenant_id);
          refuseUnreadableBody(context.body);
          (context as Carrier).principal = principal;
        },
        resolve(context): Caller | Promise<Caller> {
          const principal = (context as Carrier).principal as Principal;
          const meta = metaOf(context.request);
          const tenant = takesTenant
            ? resolveTenant(deps, principal, (context.query as Record<string, unknown>).tenant_id)
            : principal.tenantId;
          if (typeof tenant === "string") return { principal, tenantId: tenant, meta };
          // Elysia awaits a hook whose source can return a promise (it reads `return x.then(`);
          // the users test of a tenant not loaded yet covers this path.
          return tenant.then((tenantId) => ({ principal, tenantId, meta }));
        },
      };
    },
    nodeAuth: (_enabled: true) => ({
      detail: { ["x-permission" as string]: "node" },
      async transform(context) {
        const bearer = bearerOf(context.request.headers.get("authorization"));
        (context as Carrier).node = await authenticateNode(deps, bearer);
        refuseUnreadableBody(context.body);
      },
      resolve(context) {
        return { node: (context as Carrier).node as NodePrincipal };
      },
    }),
    meta: (_enabled: true) => ({
      resolve({ request }) {
        return { meta: metaOf(request) };
      },
    }),
  });
};

export type AuthGuard = ReturnType<typeof authPlugin>;
