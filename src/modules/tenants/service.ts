import { isUniqueViolation } from "../../../db/errors.ts";
import { insertTenant, listTenants, updateTenant } from "../../../db/queries/tenants.ts";
import type { RequestMeta, ServiceDeps } from "../../deps.ts";
import { AFTER_CALL_REASON } from "../../dialer/agents.ts";
import type { Page } from "../../envelope.ts";
import { conflict, notFound, unprocessable } from "../../errors.ts";
import { auditedWrite } from "../../identity/audit.ts";
import { auditActorOf, type Principal } from "../../identity/principal.ts";
import { isUuid } from "../../identity/tenant-scope.ts";
import { authorize } from "../../plugins/auth.ts";
import { assertKnownProfile } from "../campaigns/decide.ts";
import {
  type CreateTenantInput,
  type NotReadyReason,
  type PatchTenantInput,
  tenantView,
} from "./model.ts";

const domainTaken = () =>
  conflict("domain already in use", [{ field: "domain", message: "already in use" }]);

export async function createTenant(
  deps: ServiceDeps,
  principal: Principal,
  input: CreateTenantInput,
  meta: RequestMeta,
) {
  const now = new Date(deps.clock.now());
  const id = Bun.randomUUIDv7();
  try {
    const tenant = await auditedWrite(
      deps.db,
      (tx) =>
        insertTenant(tx, {
          id,
          name: input.name.trim(),
          domain: input.domain,
          rateLimitPerMinute: deps.config.RATE_LIMIT_DEFAULT_PER_MINUTE,
          createdAt: now,
          updatedAt: now,
        }),
      {
        tenantId: id,
        actor: auditActorOf(principal),
        action: "tenant.created",
        targetType: "tenant",
        requestId: meta.requestId,
        at: now,
        details: (row) => ({ name: row.name, domain: row.domain }),
      },
    );
    deps.tenants.tenantChanged(tenant);
    return { tenant: tenantView(tenant) };
  } catch (error) {
    if (isUniqueViolation(error)) throw domainTaken();
    throw error;
  }
}

export async function listAllTenants(deps: ServiceDeps, page: Page) {
  const { items, total } = await listTenants(deps.db, page);
  return { items: items.map(tenantView), total };
}

/** Admins change their own tenant's settings; platform admins any tenant's. */
export async function patchTenant(
  deps: ServiceDeps,
  principal: Principal,
  id: string,
  input: PatchTenantInput,
  meta: RequestMeta,
) {
  const visible = principal.role === "platform_admin" || id === principal.tenantId;
  if (!visible || !isUuid(id) || !(await deps.tenants.tenant(id))) throw notFound("tenant");
  const profile = input.regulatory_profile;
  if (profile !== undefined) assertKnownProfile(profile);
  if (profile === "none") authorize(principal, "campaigns.unregulated");
  if (input.not_ready_reasons) assertDistinctReasons(input.not_ready_reasons);
  const now = new Date(deps.clock.now());
  const updated = await auditedWrite(
    deps.db,
    (tx) =>
      updateTenant(tx, {
        id,
        patch: {
          name: input.name?.trim(),
          rateLimitPerMinute: input.rate_limit_per_minute,
          regulatoryProfile: profile,
          notReadyReasons: input.not_ready_reasons,
          transferNumbers: input.transfer_numbers,
        },
        now,
      }),
    {
      tenantId: id,
      actor: auditActorOf(principal),
      action: "tenant.updated",
      targetType: "tenant",
      requestId: meta.requestId,
      at: now,
      details: { changes: input },
    },
  );
  if (!updated) throw notFound("tenant");
  deps.tenants.tenantChanged(updated);
  return { tenant: tenantView(updated) };
}

export async function getTenant(deps: ServiceDeps, principal: Principal, id: string) {
  const visible = principal.role === "platform_admin" || id === principal.tenantId;
  const tenant = visible && isUuid(id) ? await deps.tenants.tenant(id) : undefined;
  if (!tenant) throw notFound("tenant");
  return { tenant: tenantView(tenant) };
}

/** Each reason once, and none that the service gives itself. */
function assertDistinctReasons(reasons: readonly NotReadyReason[]) {
  const seen = new Set<string>();
  reasons.forEach((reason, index) => {
    if (reason.code === AFTER_CALL_REASON)
      throw unprocessable(
        `not_ready_reasons.${index}.code`,
        `${AFTER_CALL_REASON} is the service's own reason for the pause after a call`,
      );
    if (seen.has(reason.code))
      throw unprocessable(`not_ready_reasons.${index}.code`, `${reason.code} is listed twice`);
    seen.add(reason.code);
  });
}
