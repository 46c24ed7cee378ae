import type { ServiceDeps } from "../deps.ts";
import { forbidden, notFound } from "../errors.ts";
import type { Principal } from "./principal.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (value: string) => UUID.test(value);

/** Marks a route's `tenant_id` as taken and never looked up (see `IgnoredTenantQuery`). */
export const IGNORED_TENANT = "x-ignored";

/**
 * A tenant id as named in a request, in the stored (lower) case: `ABC…` is the tenant `abc…`,
 * never a second key for its actor, its caches or its sockets.
 */
const namedTenant = (tenantId: unknown) =>
  typeof tenantId === "string" ? tenantId.toLowerCase() : undefined;

/** Only a platform admin may name another tenant with `?tenant_id=`; anyone else gets 403. */
export function assertTenantReach(principal: Principal, tenantId: unknown) {
  const named = namedTenant(tenantId);
  if (named !== undefined && named !== principal.tenantId && principal.role !== "platform_admin") {
    throw forbidden("tenant_id is not your tenant");
  }
}

/**
 * The tenant a request acts in: the caller's own, or for a platform admin the `tenant_id`
 * it names. Anyone else naming another tenant is refused with 403; a malformed or unknown
 * tenant is 404. The one place a request's tenant is decided (the auth macro and the socket
 * upgrades call it). Without `tenant_id`, or naming a tenant whose actor is loaded, it
 * answers without a promise: the hot path of signed-in requests.
 */
export function resolveTenant(
  deps: Pick<ServiceDeps, "tenants">,
  principal: Principal,
  requested: unknown,
): string | Promise<string> {
  assertTenantReach(principal, requested);
  const named = namedTenant(requested);
  if (named === undefined || named === principal.tenantId) return principal.tenantId;
  if (!isUuid(named)) throw notFound("tenant");
  if (deps.tenants.loadedTenant(named)) return named;
  return deps.tenants.tenant(named).then((tenant) => {
    if (!tenant) throw notFound("tenant");
    return named;
  });
}
