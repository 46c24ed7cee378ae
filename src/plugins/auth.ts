import { Elysia } from "elysia";
import type { ServiceDeps } from "../deps.ts";
import { ApiError, forbidden, MISSING_AUTHORIZATION, unauthenticated } from "../errors.ts";
import { PERMISSIONS, type Permission } from "../identity/permissions.ts";
import type { Principal } from "../identity/principal.ts";
import { isUuid } from "../identity/tenant-scope.ts";

export type AuthDeps = Pick<ServiceDeps, "tokens" | "tenants">;

const BEARER = /^Bearer ([A-Za-z0-9._~+/=-]+)$/;
const INVALID_TOKEN = "invalid or expired token";

/** Turns a bearer value into a principal; the same checks serve HTTP and WebSocket upgrades. */
export async function authenticate(deps: AuthDeps, token: string | undefined): Promise<Principal> {
  if (!token) throw unauthenticated(MISSING_AUTHORIZATION);
  const claims = await deps.tokens.verify(token);
  if (!claims || !isUuid(claims.sub) || !isUuid(claims.tid)) throw unauthenticated(INVALID_TOKEN);
  const user = await deps.tenants.user(claims.tid, claims.sub);
  if (!user || user.tenantId !== claims.tid) throw unauthenticated(INVALID_TOKEN);
  if (user.status === "disabled") throw new ApiError(403, "account_disabled", "account disabled");
  return {
    kind: "user",
    user,
    tenantId: user.tenantId,
    role: user.role,
    tokenExpiresAt: claims.exp * 1000,
  };
}

/** Checks a principal against one permission of the table. */
export function authorize(principal: Principal, permission: Permission): void {
  const rule: { roles: readonly string[]; allowPendingPassword?: boolean } =
    PERMISSIONS[permission];
  if (principal.user.mustChangePassword && !rule.allowPendingPassword) {
    throw new ApiError(403, "password_change_required", "password change required");
  }
  if (!rule.roles.includes(principal.role)) throw forbidden("insufficient role");
}

export const bearerOf = (header: string | null | undefined) => {
  if (!header) return undefined;
  const match = BEARER.exec(header.trim());
  if (!match) throw unauthenticated(MISSING_AUTHORIZATION);
  return match[1];
};

/** The one auth guard: routes declare `{ auth: "<permission>" }` and receive `principal`. */
export const authPlugin = (deps: AuthDeps) =>
  new Elysia({ name: "auth" }).macro({
    auth: (permission: Permission) => ({
      async resolve({ request }) {
        const principal = await authenticate(deps, bearerOf(request.headers.get("authorization")));
        authorize(principal, permission);
        return { principal };
      },
    }),
  });

export type AuthGuard = ReturnType<typeof authPlugin>;
