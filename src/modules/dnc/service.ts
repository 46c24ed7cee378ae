import type { Executor } from "../../../db/client.ts";
import {
  addDnc,
  type DncRow,
  findDncEntry,
  holdDncListing,
  removeDnc,
  restoreListedLeads,
  retireListedLeads,
  shareDncListing,
} from "../../../db/queries/calls.ts";
import type { RequestMeta, ServiceDeps } from "../../deps.ts";
import { notFound } from "../../errors.ts";
import { recordAudit } from "../../identity/audit.ts";
import { auditActorOf, type Principal } from "../../identity/principal.ts";
import { recountCampaigns } from "../campaigns/service.ts";

/** Who changes which tenant's list, and the request that did it. */
export interface DncChange {
  principal: Principal;
  tenantId: string;
  /** E.164. */
  phone: string;
  meta: RequestMeta;
}

/** The audit record of a list change, written in the change's own transaction. */
const auditDnc = (tx: Executor, change: DncChange, action: string, at: Date) =>
  recordAudit(tx, {
    tenantId: change.tenantId,
    ...auditActorOf(change.principal),
    action,
    targetType: "dnc_entry",
    targetId: change.phone,
    requestId: change.meta.requestId,
    details: { phone: change.phone, ip: change.meta.ip },
    at,
  });

/**
 * Adds a number (source `user` for a person, `api` for a key); adding one already listed
 * changes nothing and records nothing. `added` says which it was.
 */
export async function addToDnc(
  deps: ServiceDeps,
  change: DncChange,
): Promise<{ entry: DncRow; added: boolean }> {
  const now = new Date(deps.clock.now());
  const { result, campaigns } = await deps.db.transaction(async (tx) => {
    await shareDncListing(tx, change.tenantId);
    const result = await addDnc(tx, {
      tenantId: change.tenantId,
      phone: change.phone,
      source: change.principal.kind === "user" ? "user" : "api",
      createdBy: auditActorOf(change.principal).actorId,
      createdAt: now,
    });
    if (result.added) await auditDnc(tx, change, "dnc.added", now);
    // Its leads still to be dialled end, those of a number listed before included.
    const campaigns = await retireListedLeads(tx, {
      tenantId: change.tenantId,
      phones: [change.phone],
      at: now,
      passLocked: true,
    });
    return { result, campaigns };
  });
  await recountCampaigns(deps, change.tenantId, campaigns);
  await endListedLeads(deps, change.tenantId, [change.phone]);
  return result;
}

/**
 * Ends the leads still to be dialled of numbers a committed change put on the list (a call's
 * disposition or opt-out key; a listing, for the leads other transactions held as it passed),
 * waiting for those held, and recounts their campaigns. The listing already stands: a failure
 * here is logged, and the claims skip those leads meanwhile.
 */
export async function endListedLeads(
  deps: ServiceDeps,
  tenantId: string,
  phones: readonly string[],
) {
  try {
    const at = new Date(deps.clock.now());
    const campaigns = await deps.db.transaction(async (tx) => {
      await shareDncListing(tx, tenantId);
      return retireListedLeads(tx, { tenantId, phones, at, passLocked: false });
    });
    await recountCampaigns(deps, tenantId, campaigns);
  } catch (error) {
    deps.logger.warn("listed numbers' leads were not ended", { error });
  }
}

/** Removes a number; the answer is the entry as it was, with who added it. */
export async function removeFromDnc(deps: ServiceDeps, change: DncChange) {
  const now = new Date(deps.clock.now());
  const listed = { tenantId: change.tenantId, phone: change.phone };
  const removed = await deps.db.transaction(async (tx) => {
    // Listings under way finish first, and those after it find the number gone.
    await holdDncListing(tx, change.tenantId);
    const entry = await findDncEntry(tx, listed);
    if (!entry || !(await removeDnc(tx, listed))) return undefined;
    await auditDnc(tx, change, "dnc.removed", now);
    return { entry, campaigns: await restoreListedLeads(tx, { ...listed, at: now }) };
  });
  if (!removed) throw notFound("do-not-call entry");
  await recountCampaigns(deps, change.tenantId, removed.campaigns);
  return removed.entry;
}
