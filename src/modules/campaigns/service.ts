import type {
  CampaignRecord,
  CampaignStatus,
  StatusAction,
} from "../../../actors/campaign.machine.ts";
import {
  callsInFlight,
  type DialingState,
  dialingDone,
  recentCounts,
} from "../../../actors/dialing.ts";
import type { IdempotencyEntry } from "../../../actors/idempotency.ts";
import type { CampaignPipeline } from "../../../actors/ports.ts";
import type { Executor, RawClient } from "../../../db/client.ts";
import {
  type CampaignSettings,
  commitStatusChanges,
  deleteExpiredIdempotencyKeys,
  findTenantCampaign,
  insertCampaign,
  insertIdempotencyKey,
  listStatusChanges,
  listTenantCampaigns,
  type StatusChange,
  updateCampaignSettings,
} from "../../../db/queries/campaigns.ts";
import { LeaseLostError } from "../../cluster/leases.ts";
import { onOwner, ownedCommand } from "../../cluster/owner.ts";
import type { RequestMeta, ServiceDeps } from "../../deps.ts";
import { answerRateOf, ledgerNow, paceCampaign } from "../../dialer/pacing.ts";
import type { Page } from "../../envelope.ts";
import { ApiError, notFound } from "../../errors.ts";
import { auditedWrite } from "../../identity/audit.ts";
import { type AuditActor, auditActorOf, type Principal } from "../../identity/principal.ts";
import { isUuid } from "../../identity/tenant-scope.ts";
import { GroupCommit } from "../../lib/group-commit.ts";
import { assertIdempotencyKey } from "../../lib/idempotency-key.ts";
import { campaignStatusMessage } from "../../realtime/hub.ts";
import {
  ACTION_DIGESTS,
  assertWindowOrder,
  type CampaignCommand,
  type CampaignReplies,
  type CampaignWrite,
  type CommitFacts,
  campaignStep,
  earlierReply,
  type StatusReply,
} from "./commands.ts";
import { CAMPAIGN_DEFAULTS } from "./defaults.ts";
import {
  AGENT_STATES,
  type CampaignStats,
  type CreateCampaignInput,
  campaignView,
  type PatchCampaignInput,
} from "./model.ts";
import { campaignRecordOf } from "./store.ts";

const campaignNotFound = () => notFound("campaign");

/** API fields to columns, for the fields that are present. */
function settingsOf(input: Partial<CreateCampaignInput>): Partial<CampaignSettings> {
  const settings: Partial<CampaignSettings> = {};
  if (input.name !== undefined) settings.name = input.name.trim();
  if (input.dial_mode !== undefined) settings.dialMode = input.dial_mode;
  if (input.caller_id !== undefined) settings.callerId = input.caller_id;
  if (input.calling_window !== undefined) {
    settings.callingWindowStart = input.calling_window.start;
    settings.callingWindowEnd = input.calling_window.end;
  }
  if (input.max_attempts !== undefined) settings.maxAttempts = input.max_attempts;
  if (input.retry_delay_seconds !== undefined)
    settings.retryDelaySeconds = input.retry_delay_seconds;
  if (input.dial_ratio !== undefined) settings.dialRatio = input.dial_ratio;
  if (input.max_abandon_rate !== undefined) settings.maxAbandonRate = input.max_abandon_rate;
  return settings;
}

export async function createCampaign(
  deps: ServiceDeps,
  principal: Principal,
  tenantId: string,
  input: CreateCampaignInput,
  meta: RequestMeta,
) {
  const complete = { ...CAMPAIGN_DEFAULTS, ...input };
  assertWindowOrder(complete.calling_window.start, complete.calling_window.end);
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
  const { items, total } = await listTenantCampaigns(deps.db, tenantId, { status }, page);
  return { items: items.map((row) => campaignView(campaignRecordOf(row))), total };
}

async function loadCampaign(db: Executor, tenantId: string, id: string) {
  const row = isUuid(id) ? await findTenantCampaign(db, tenantId, id) : undefined;
  if (!row) throw campaignNotFound();
  return row;
}

/**
 * Live numbers of a campaign, from its actor's dialing state: leads by state, calls in flight,
 * agents by state, the answer rate of its recent calls, the abandon rate over the legal
 * window (its compliance ledger), and the dial ratio its pacing gives now, with the reason.
 */
function statsOf(
  deps: ServiceDeps,
  campaign: CampaignRecord,
  dialing: DialingState,
): CampaignStats {
  const agents: Record<string, number> = Object.fromEntries(
    AGENT_STATES.map((state) => [state, 0]),
  );
  const campaignAgents = deps.dialer.agents.inCampaign(campaign.id);
  for (const agent of campaignAgents) agents[agent.state] = (agents[agent.state] ?? 0) + 1;
  const now = deps.clock.now();
  const pacing = paceCampaign(campaign, dialing, campaignAgents, now, deps.dialer.pacer);
  return {
    leads_total: Object.values(dialing.leads).reduce((sum, total) => sum + total, 0),
    leads_by_state: { ...dialing.leads },
    calls_in_flight: callsInFlight(dialing),
    agents_by_state: agents,
    answer_rate: answerRateOf(recentCounts(dialing)),
    abandon_rate: ledgerNow(campaign, dialing, now).abandonRate,
    dial_ratio: pacing.ratio,
    dial_ratio_reason: pacing.reason,
  };
}

/**
 * A campaign's stats for a realtime push, or undefined when it is not the tenant's. Read from
 * the live actor; only a campaign whose dialing state was never loaded is loaded once.
 */
export async function campaignStatsFor(
  deps: ServiceDeps,
  tenantId: string,
  campaignId: string,
): Promise<CampaignStats | undefined> {
  if (!isUuid(campaignId)) return undefined;
  const stats = await onOwner(
    deps,
    { tenantId, campaignId, missing: campaignNotFound },
    statsCommand,
    [tenantId, campaignId],
  ).catch((error) => {
    if (error instanceof ApiError && error.status === 404) return undefined;
    throw error;
  });
  return stats ?? undefined;
}

const statsCommand = ownedCommand(
  "campaign.stats",
  async (deps: ServiceDeps, tenantId: string, campaignId: string) =>
    (await statsHere(deps, tenantId, campaignId)) ?? null,
  { readOnly: true },
);

async function statsHere(deps: ServiceDeps, tenantId: string, campaignId: string) {
  const live = deps.campaigns.peek(campaignId);
  if (live?.dialing && live.campaign.tenantId === tenantId)
    return statsOf(deps, live.campaign, live.dialing);
  const found = await deps.campaigns.withDialing(tenantId, campaignId, async (actor, dialing) =>
    statsOf(deps, actor.getSnapshot().context.campaign, dialing),
  );
  return found.found ? found.value : undefined;
}

export async function getCampaign(deps: ServiceDeps, tenantId: string, id: string) {
  const row = await loadCampaign(deps.db, tenantId, id);
  // A loaded actor may hold a change newer than a read that raced it; prefer it.
  const live = deps.campaigns.peek(row.id)?.campaign;
  const record = live && live.version >= row.version ? live : campaignRecordOf(row);
  const stats = (await campaignStatsFor(deps, tenantId, row.id)) as CampaignStats;
  return { campaign: { ...campaignView(record), stats } };
}

export function patchCampaign(
  deps: ServiceDeps,
  principal: Principal,
  tenantId: string,
  id: string,
  input: PatchCampaignInput,
  meta: RequestMeta,
) {
  if (!isUuid(id)) throw campaignNotFound();
  return onOwner(
    deps,
    { tenantId, campaignId: id, missing: campaignNotFound },
    patchCommand,
    [auditActorOf(principal), tenantId, id, input, meta.requestId],
    meta.requestId,
  );
}

const patchCommand = ownedCommand("campaign.patch", patchHere);

function patchHere(
  deps: ServiceDeps,
  actor: AuditActor,
  tenantId: string,
  id: string,
  input: PatchCampaignInput,
  requestId: string,
) {
  const { version, ...changes } = input;
  return onCampaignCommand(deps, tenantId, id, {
    type: "settings",
    version,
    settings: settingsOf(changes),
    changes,
    actor,
    requestId,
  });
}

/**
 * Starts, pauses or stops a campaign through its actor. The change is committed (status,
 * history row and idempotency record in one transaction) before the actor adopts it and
 * before the caller hears of it. Under an `Idempotency-Key`, the first response (a 409
 * included) is kept for 60 s and replayed; the same key with another body is 422.
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
  return onOwner(
    deps,
    { tenantId, campaignId: id, missing: campaignNotFound },
    statusCommand,
    [auditActorOf(principal), tenantId, id, action, idempotencyKey ?? null, meta.requestId],
    meta.requestId,
  );
}

const statusCommand = ownedCommand("campaign.status", changeStatusHere);

/** The status change on the campaign's owner; a missing key crosses processes as null. */
function changeStatusHere(
  deps: ServiceDeps,
  actor: AuditActor,
  tenantId: string,
  id: string,
  action: StatusAction,
  sentKey: string | null,
  requestId: string,
): Promise<StatusReply> {
  const key = sentKey ?? undefined;
  // A key already in a loaded actor's window is answered without queueing behind other
  // commands: its entry was recorded after its change committed, and a replay changes nothing.
  const loaded = deps.campaigns.peek(id);
  if (key !== undefined && loaded?.campaign.tenantId === tenantId) {
    const earlier = earlierReply(loaded.idempotency, key, ACTION_DIGESTS[action], deps.clock.now());
    if (earlier) return Promise.resolve(earlier);
  }
  return onCampaignCommand(deps, tenantId, id, {
    type: "status",
    action,
    key,
    actor,
    requestId,
  });
}

/** Status changes in batches of at most this many (one statement each). */
const STATUS_BATCH = 200;
/** Batches written at once: while one commits, the next is already on its way. */
const STATUS_BATCHES_AT_ONCE = 2;

/**
 * Commits status changes of different campaigns together when they arrive while earlier
 * ones are being written: at thousands of changes a second, one statement and one commit
 * carry tens of them. A change to one campaign is never in a batch with another change to the
 * same campaign (its commands run one at a time), and each caller hears of its own change
 * only once its batch has committed.
 */
export const statusCommitsOn = (raw: RawClient) =>
  new GroupCommit<StatusChange, boolean>(
    async (changes) => {
      const updated = await commitStatusChanges(raw, changes);
      return changes.map((change) => updated.has(change.campaignId));
    },
    STATUS_BATCHES_AT_ONCE,
    STATUS_BATCH,
  );

/**
 * The campaign's commands as they run here: the pure step (commands.ts) and the port that
 * commits what it decided. A status change goes with others of other campaigns in one
 * statement and tells other processes' supervisors in its commit; a refused change's reply
 * is kept under its key; a settings change goes with its audit record.
 */
const campaignPipeline = <C extends CampaignCommand>(
  deps: ServiceDeps,
): CampaignPipeline<C, CampaignWrite, CommitFacts, CampaignReplies[C["type"]]> => ({
  step: campaignStep,
  commit: async (writes) => {
    const facts: CommitFacts = { relayed: false };
    for (const write of writes) {
      if (write.type === "status") facts.relayed = await commitStatus(deps, write);
      else if (write.type === "reply") {
        const fence = deps.campaigns.leases.fenceOf(write.campaignId);
        await insertIdempotencyKey(deps.db, entryRow(write.campaignId, write.entry), fence);
      } else facts.campaign = await commitSettings(deps, write);
    }
    return facts;
  },
});

/** Runs a campaign command on its actor here, or answers 404 when it is not the tenant's. */
async function onCampaignCommand<C extends CampaignCommand>(
  deps: ServiceDeps,
  tenantId: string,
  id: string,
  command: C,
): Promise<CampaignReplies[C["type"]]> {
  if (!isUuid(id)) throw campaignNotFound();
  const outcome = await deps.campaigns.execute(tenantId, id, command, campaignPipeline<C>(deps));
  if (!outcome.found) throw campaignNotFound();
  return outcome.value;
}

/** Writes a status change; returns whether its commit told other processes of it. */
async function commitStatus(
  deps: ServiceDeps,
  write: Extract<CampaignWrite, { type: "status" }>,
): Promise<boolean> {
  const { campaign, entry } = write;
  const { token } = deps.campaigns.leases.fenceOf(campaign.id);
  const push = deps.realtime.campaignMessageInCommit(
    campaign.tenantId,
    campaign.id,
    campaignStatusMessage(campaign.id, campaign.status, write.to),
  );
  const updated = await deps.statusCommits.submit({
    campaignId: campaign.id,
    leaseToken: token,
    tenantId: campaign.tenantId,
    expectedVersion: campaign.version,
    action: write.action,
    from: campaign.status,
    to: write.to,
    ...write.actor,
    requestId: write.requestId,
    at: write.at,
    idempotency: entry && entryRow(campaign.id, entry),
    push,
  });
  if (updated) return push !== undefined;
  // Only another owner writes a campaign: this process's lease has been taken over.
  if (deps.campaigns.leases.shared) throw new LeaseLostError(campaign.id);
  throw new Error(`campaign ${campaign.id} changed outside its actor`);
}

/** Writes new settings with their audit record; returns the campaign as written. */
async function commitSettings(
  deps: ServiceDeps,
  write: Extract<CampaignWrite, { type: "settings" }>,
): Promise<CampaignRecord> {
  const { campaign } = write;
  const row = await auditedWrite(
    deps.db,
    (tx) =>
      updateCampaignSettings(tx, {
        id: campaign.id,
        fence: deps.campaigns.leases.fenceOf(campaign.id),
        expectedVersion: campaign.version,
        settings: write.settings,
        updatedAt: write.at,
      }),
    {
      tenantId: campaign.tenantId,
      actor: write.actor,
      action: "campaign.updated",
      targetType: "campaign",
      requestId: write.requestId,
      at: write.at,
      details: { changes: write.changes },
    },
  );
  if (!row) throw new ApiError(409, "version_conflict", "the campaign changed meanwhile");
  return campaignRecordOf(row);
}

/** Completes the campaign if its live state says it is done; enters the campaign's queue. */
export async function completeCampaignIfDone(
  deps: ServiceDeps,
  tenantId: string,
  campaignId: string,
) {
  const live = deps.campaigns.peek(campaignId);
  if (live?.campaign.status !== "running" || !live.dialing || !dialingDone(live.dialing)) return;
  // A campaign gone meanwhile is not found: nothing to complete.
  await deps.campaigns.execute(tenantId, campaignId, { type: "complete" }, campaignPipeline(deps));
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
    const deleted = await deleteExpiredIdempotencyKeys(deps.longWorkDb, now, CLEAN_UP_BATCH);
    total += deleted;
    if (deleted < CLEAN_UP_BATCH) return total;
  }
}

const entryRow = (campaignId: string, entry: IdempotencyEntry) => ({
  campaignId,
  key: entry.key,
  bodyHash: entry.bodyHash,
  responseStatus: entry.status,
  responseBody: entry.text,
  expiresAt: new Date(entry.expiresAt),
});

export async function campaignHistory(deps: ServiceDeps, tenantId: string, id: string, page: Page) {
  const campaign = await loadCampaign(deps.db, tenantId, id);
  const { items, total } = await listStatusChanges(deps.db, campaign.id, page);
  return {
    items: items.map((row) => ({
      id: row.id,
      campaign_id: row.campaignId,
      action: row.action,
      from: row.fromStatus,
      to: row.toStatus,
      actor_type: row.actorType,
      actor_id: row.actorId,
      request_id: row.requestId,
      created_at: row.createdAt.toISOString(),
    })),
    total,
  };
}
