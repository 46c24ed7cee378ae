import type { Executor } from "../../db/client.ts";
import { findTenantById } from "../../db/queries/tenants.ts";
import { forbidden, notFound } from "../errors.ts";
import type { Principal } from "./principal.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (value: string) => UUID.test(value);

/**
 * The tenant a request acts in: the caller's own, or for a platform admin the `tenant_id`
 * it names. Anyone else naming another tenant is refused with 403.
 */
export async function resolveTenant(
  db: Executor,
  principal: Principal,
  requested: string | undefined,
) {
  if (requested === undefined || requested === principal.tenantId) return principal.tenantId;
  if (principal.role !== "platform_admin") throw forbidden("tenant_id is not your tenant");
  if (!isUuid(requested) || !(await findTenantById(db, requested))) throw notFound("tenant");
  return requested;
}
