import type { ServiceDeps } from "../deps.ts";
import { forbidden, notFound } from "../errors.ts";
import type { Principal } from "./principal.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (value: string) => UUID.test(value);

/** Only a platform admin may name another tenant with `?tenant_id=`; anyone else gets 403. */
export function assertTenantReach(principal: Principal, tenantId: unknown) {
  if (
    typeof tenantId === "string" &&
    tenantId !== principal.tenantId &&
    principal.role !== "platform_admin"
  ) {
    throw forbidden("tenant_id is not your tenant");
  }
}

/**
 * The tenant a request acts in: the caller's own, or for a platform admin the `tenant_id`
 * it names. Anyone else naming another tenant is refused with 403.
 */
export async function resolveTenant(
  deps: Pick<ServiceDeps, "tenants">,
  principal: Principal,
  requested: string | undefined,
) {
  assertTenantReach(principal, requested);
  if (requested === undefined || requested === principal.tenantId) return principal.tenantId;
  if (!isUuid(requested) || !(await deps.tenants.tenant(requested))) throw notFound("tenant");
  return requested;
}
