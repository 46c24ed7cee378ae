import type { CampaignStatus, StatusAction } from "../../../actors/campaign.machine.ts";
import type { StatusReply } from "../../../actors/commands.ts";
import type { Executor } from "../../../db/client.ts";
import type { CampaignSettings } from "../../../db/queries/campaigns.ts";
import {
  deleteExpiredIdempotencyKeys,
  findTenantCampaign,
  insertCampaign,
  listStatusChanges,
  listTenantCampaigns,
} from "../../../db/queries/campaigns.ts";
import { exhaustLeadsPastAttempts } from "../../../db/queries/leads.ts";
import type { RequestMeta, ServiceDeps } from "../../deps.ts";
import type { Page } from "../../envelope.ts";
import { ApiError, notFound } from "../../errors.ts";
import { auditedWrite } from "../../identity/audit.ts";
import { auditActorOf, type Principal } from "../../identity/principal.ts";
import { isUuid } from "../../identity/tenant-scope.ts";
import { assertIdempotencyKey } from "../../lib/idempotency-key.ts";
import { authorize } from "../../plugins/auth.ts";
import { assertCallerId } from "../leads/normalise.ts";
import {
  assertDispositionCodes,
  assertLawfulSettings,
  assertScreenPop,
  assertWindowOrder,
  settingsOf,
} from "./decide.ts";
import { CAMPAIGN_DEFAULTS } from "./defaults.ts";
import {
  type CampaignStats,
  type CreateCampaignInput,
  campaignView,
  type PatchCampaignInput,
} from "./model.ts";
import { campaignRecordOf } from "./store.ts";

const campaignNotFound = () => notFound("campaign");

/** `none` turns every rule off: only an admin may choose it. */
function assertProfileChoice(principal: Principal, profile: string | undefined) {
  if (profile === "none") authorize(principal, "campaigns.unregulated");
}

export async function createCampaign(
  deps: ServiceDeps,
  principal: Principal,
  tenantId: string,
  input: CreateCampaignInput,
  meta: RequestMeta,
) {
  assertProfileChoice(principal, input.regulatory_profile);
  const tenant = await deps.tenants.tenant(tenantId);
  const complete = {
    ...CAMPAIGN_DEFAULTS,
    regulatory_profile: tenant?.regulatoryProfile ?? "us",
    ...input,
  };
  assertWindowOrder(complete.calling_window.start, complete.calling_window.end);
  assertScreenPop(complete.screen_pop_url);
  assertCallerId(complete.caller_id);
  assertLawfulSettings(complete.regulatory_profile, complete.calling_window);
  assertDispositionCodes(complete.disposition_codes, complete.default_disposition);
  const now = new Date(deps.clock.now());
  const row = await auditedWrite(
    deps.db,
    (tx) =>
      insertCampaign(tx, {
        id: Bun.randomUUIDv7(),
        tenantId,
        status: "draft",
        version: 1,
        createdAt: now,
        updatedAt: now,
        ...(settingsOf(complete) as CampaignSettings),
      }),
    {
      tenantId,
      actor: auditActorOf(principal),
      action: "campaign.created",
      targetType: "campaign",
      requestId: meta.requestId,
      at: now,
      details: (created) => ({ name: created.name }),
    },
  );
  return { campaign: campaignView(campaignRecordOf(row)) };
}

export async function listCampaigns(
  deps: ServiceDeps,
  tenantId: string,
  status: CampaignStatus | undefined,
  page: Page,
) {
  const { items, total } = await listTenantCampaigns(deps.db, { tenantId, status, page });
  return { items: items.map((row) => campaignView(campaignRecordOf(row))), total };
}

async function loadCampaign(db: Executor, tenantId: string, id: string) {
  const row = isUuid(id) ? await findTenantCampaign(db, { tenantId, campaignId: id }) : undefined;
  if (!row) throw campaignNotFound();
  return row;
}

/**
 * A campaign's live stats (`decideStats`), or undefined when it is not the tenant's: for a
 * realtime push, and `GET /campaigns/{id}`.
 */
export async function campaignStatsFor(
  deps: ServiceDeps,
  tenantId: string,
  campaignId: string,
): Promise<CampaignStats | undefined> {
  if (!isUuid(campaignId)) return undefined;
  const stats = await deps.campaigns
    .run({ tenantId, campaignId }, { type: "stats" })
    .catch((error) => {
      if (error instanceof ApiError && error.status === 404) return null;
      throw error;
    });
  return stats ?? undefined;
}

export async function getCampaign(deps: ServiceDeps, tenantId: string, id: string) {
  const row = await loadCampaign(deps.db, tenantId, id);
  // A loaded actor may hold a change newer than a read that raced it; prefer it.
  const live = deps.campaigns.peek(row.id)?.campaign;
  const record = live && live.version >= row.version ? live : campaignRecordOf(row);
  const stats = (await campaignStatsFor(deps, tenantId, row.id)) as CampaignStats;
  return { campaign: { ...campaignView(record), stats } };
}

/** The settings supervisors change too (`campaigns.rules`): the rules and the pacing. */
export const SUPERVISED_SETTINGS: ReadonlySet<string> = new Set([
  "regulatory_profile",
  "dial_mode",
  "dial_ratio",
  "max_abandon_rate",
]);

/**
 * Campaigns whose leads changed outside their own commands (a listing ended some, its removal
 * gave them back, a lower `max_attempts` exhausted some) take their new counts, and complete
 * if nothing is left to dial. The change already stands: a campaign that cannot be reached
 * now is logged, and its counts are read again when it next loads.
 */
export async function recountCampaigns(
  deps: ServiceDeps,
  tenantId: string,
  campaignIds: readonly string[],
): Promise<void> {
  for (const campaignId of campaignIds) {
    await deps.campaigns
      .run({ tenantId, campaignId }, { type: "leads.recount" })
      .catch((error: unknown) =>
        deps.logger.warn("a campaign's lead counts were not refreshed", {
          campaign_id: campaignId,
          error,
        }),
      );
  }
}

export async function patchCampaign(
  deps: ServiceDeps,
  principal: Principal,
  tenantId: string,
  id: string,
  input: PatchCampaignInput,
  meta: RequestMeta,
) {
  if (!isUuid(id)) throw campaignNotFound();
  const { version, ...changes } = input;
  if (Object.keys(changes).some((field) => !SUPERVISED_SETTINGS.has(field)))
    authorize(principal, "campaigns.write");
  assertProfileChoice(principal, changes.regulatory_profile);
  const reply = await deps.campaigns.run(
    { tenantId, campaignId: id },
    { type: "settings", version, changes, by: auditActorOf(principal), requestId: meta.requestId },
    meta.requestId,
  );
  // Fewer attempts allowed: a lead waiting to be retried past them would wait for good.
  if (changes.max_attempts !== undefined) {
    const maxAttempts = changes.max_attempts;
    const ended = await deps.db.transaction((tx) =>
      exhaustLeadsPastAttempts(tx, {
        tenantId,
        campaignId: id,
        maxAttempts,
        at: new Date(deps.clock.now()),
      }),
    );
    if (ended > 0) await recountCampaigns(deps, tenantId, [id]);
  }
  return reply;
}

/**
 * Starts, pauses or stops a campaign through its actor. The change is committed (status,
 * history row and idempotency record in one statement) before the actor adopts it and before
 * the caller hears of it. Under an `Idempotency-Key`, the first response (a 409 included) is
 * kept for 60 s and replayed to the same caller (user or API key); the same key with another
 * body is 422.
 */
export function changeCampaignStatus(
  deps: ServiceDeps,
  principal: Principal,
  tenantId: string,
  id: string,
  action: StatusAction,
  idempotencyKey: string | undefined,
  meta: RequestMeta,
): Promise<StatusReply> {
  assertIdempotencyKey(idempotencyKey);
  if (!isUuid(id)) throw campaignNotFound();
  const by = auditActorOf(principal);
  return deps.campaigns.run(
    { tenantId, campaignId: id },
    {
      type: "status",
      action,
      // A key is the caller's own: another user's or key's request under it is not a repeat.
      key: idempotencyKey === undefined ? null : `${by.actorId}\n${idempotencyKey}`,
      by,
      requestId: meta.requestId,
    },
    meta.requestId,
  );
}

/** Expired idempotency records deleted per statement: a few milliseconds of work each. */
const CLEAN_UP_BATCH = 2_000;

/**
 * Deletes the idempotency records past their window (the actors have already forgotten them),
 * a batch at a time on the pool for long work, so that no statement runs long and none holds
 * up the status changes pipelined on the main pool. Returns how many went.
 */
export async function deleteExpiredReplies(deps: ServiceDeps): Promise<number> {
  const now = new Date(deps.clock.now());
  let total = 0;
  for (;;) {
    const deleted = await deleteExpiredIdempotencyKeys(deps.longWorkDb, {
      now,
      limit: CLEAN_UP_BATCH,
    });
    total += deleted;
    if (deleted < CLEAN_UP_BATCH) return total;
  }
}

export async function campaignHistory(deps: ServiceDeps, tenantId: string, id: string, page: Page) {
  const campaign = await loadCampaign(deps.db, tenantId, id);
  const { items, total } = await listStatusChanges(deps.db, { campaignId: campaign.id, page });
  return {
    items: items.map((row) => ({
      id: row.id,
      campaign_id: row.campaignId,
      action: row.action,
      from: row.fromStatus,
      to: row.toStatus,
      actor_type: row.actorType,
      actor_id: row.actorId,
      actor_email: row.actorEmail,
      request_id: row.requestId,
      created_at: row.createdAt.toISOString(),
    })),
    total,
  };
}
