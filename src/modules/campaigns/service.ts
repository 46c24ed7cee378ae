import {
  ACTION_EVENTS,
  adoptedCampaign,
  type CampaignActor,
  type CampaignRecord,
  type CampaignStatus,
  type StatusAction,
  statusAfter,
} from "../../../actors/campaign.machine.ts";
import {
  callsInFlight,
  type DialingState,
  dialingDone,
  recentCounts,
} from "../../../actors/dialing.ts";
import {
  bodyHashOf,
  IDEMPOTENCY_WINDOW_MS,
  type IdempotencyEntry,
  type IdempotencyWindow,
} from "../../../actors/idempotency.ts";
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
import { ok, type Page } from "../../envelope.ts";
import { ApiError, badRequest, notFound } from "../../errors.ts";
import { auditedWrite } from "../../identity/audit.ts";
import { auditActorOf, type Principal } from "../../identity/principal.ts";
import { isUuid } from "../../identity/tenant-scope.ts";
import { GroupCommit } from "../../lib/group-commit.ts";
import { assertIdempotencyKey } from "../../lib/idempotency-key.ts";
import { errorEnvelope } from "../../plugins/errors.ts";
import { campaignStatusMessage } from "../../realtime/hub.ts";
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

function assertWindowOrder(start: string, end: string) {
  // "HH:MM" strings compare in time order.
  if (start >= end) {
    throw badRequest("invalid request body", [
      { field: "calling_window.start", message: "must be before calling_window.end" },
    ]);
  }
}

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

/** Runs a command on a campaign's actor, or answers 404 when it is not the tenant's. */
async function onCampaign<T>(
  deps: ServiceDeps,
  tenantId: string,
  id: string,
  command: (actor: CampaignActor) => Promise<T>,
): Promise<T> {
  if (!isUuid(id)) throw campaignNotFound();
  const outcome = await deps.campaigns.withCampaign(tenantId, id, command);
  if (!outcome.found) throw campaignNotFound();
  return outcome.value;
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
    [principal, tenantId, id, input, meta],
    meta.requestId,
  );
}

const patchCommand = ownedCommand("campaign.patch", patchHere);

function patchHere(
  deps: ServiceDeps,
  principal: Principal,
  tenantId: string,
  id: string,
  input: PatchCampaignInput,
  meta: RequestMeta,
) {
  return onCampaign(deps, tenantId, id, async (actor) => {
    const current = actor.getSnapshot().context.campaign;
    if (input.version !== current.version) {
      throw new ApiError(
        409,
        "version_conflict",
        `version mismatch: the campaign is at version ${current.version}`,
      );
    }
    const { version: _base, ...changes } = input;
    const settings = settingsOf(changes);
    assertWindowOrder(
      settings.callingWindowStart ?? current.callingWindowStart,
      settings.callingWindowEnd ?? current.callingWindowEnd,
    );
    const now = new Date(deps.clock.now());
    const row = await auditedWrite(
      deps.db,
      (tx) =>
        updateCampaignSettings(tx, {
          id,
          fence: deps.campaigns.leases.fenceOf(id),
          expectedVersion: current.version,
          settings,
          updatedAt: now,
        }),
      {
        tenantId,
        actor: auditActorOf(principal),
        action: "campaign.updated",
        targetType: "campaign",
        requestId: meta.requestId,
        at: now,
        details: { changes },
      },
    );
    if (!row) throw new ApiError(409, "version_conflict", "the campaign changed meanwhile");
    const campaign = campaignRecordOf(row);
    actor.send({ type: "campaign.updated", campaign });
    return { campaign: campaignView(campaign) };
  });
}

/** The digest of each of the three possible bodies, `{"action": …}`, computed once. */
const ACTION_DIGESTS = Object.fromEntries(
  Object.keys(ACTION_EVENTS).map((action) => [action, bodyHashOf({ action })]),
) as Record<StatusAction, string>;

/** A status reply as JSON text: serialised once, then sent, kept under its key and replayed. */
export interface StatusReply {
  status: number;
  text: string;
  replayed: boolean;
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
    [principal, tenantId, id, action, idempotencyKey ?? null, meta],
    meta.requestId,
  );
}

const statusCommand = ownedCommand("campaign.status", changeStatusHere);

/** The status change on the campaign's owner; a missing key crosses processes as null. */
function changeStatusHere(
  deps: ServiceDeps,
  principal: Principal,
  tenantId: string,
  id: string,
  action: StatusAction,
  sentKey: string | null,
  meta: RequestMeta,
): Promise<StatusReply> {
  const idempotencyKey = sentKey ?? undefined;
  const bodyHash = ACTION_DIGESTS[action];
  // A key already in a loaded actor's window is answered without queueing behind other
  // commands: its entry was recorded after its change committed, and a replay changes nothing.
  const loaded = deps.campaigns.peek(id);
  if (idempotencyKey !== undefined && loaded?.campaign.tenantId === tenantId) {
    const earlier = earlierReply(loaded.idempotency, idempotencyKey, bodyHash, deps.clock.now());
    if (earlier) return Promise.resolve(earlier);
  }
  return onCampaign(deps, tenantId, id, async (actor) => {
    const now = deps.clock.now();
    if (idempotencyKey !== undefined) {
      const window = actor.getSnapshot().context.idempotency;
      const earlier = earlierReply(window, idempotencyKey, bodyHash, now);
      if (earlier) return earlier;
    }
    const remember = (status: number, text: string): IdempotencyEntry | undefined =>
      idempotencyKey === undefined
        ? undefined
        : { key: idempotencyKey, bodyHash, status, text, expiresAt: now + IDEMPOTENCY_WINDOW_MS };

    const before = actor.getSnapshot();
    const campaign = before.context.campaign;
    const committed = { version: campaign.version + 1, updatedAt: new Date(now).toISOString() };
    const event = { type: ACTION_EVENTS[action], ...committed };
    const to = statusAfter(before, event);
    if (to === undefined) {
      const refusal = new ApiError(
        409,
        "invalid_transition",
        `cannot ${action} a campaign that is ${campaign.status}`,
      );
      const entry = remember(409, JSON.stringify(errorEnvelope(refusal, meta.requestId)));
      if (!entry) throw refusal;
      await insertIdempotencyKey(deps.db, entryRow(id, entry), deps.campaigns.leases.fenceOf(id));
      actor.send({ type: "idempotency.recorded", entry });
      return { status: entry.status, text: entry.text, replayed: false };
    }

    const next = adoptedCampaign(campaign, to, committed);
    const text = JSON.stringify(ok({ campaign: campaignView(next) }));
    const reply = remember(200, text);
    const { relayed } = await commitStatus(deps, {
      campaign,
      to,
      action,
      actor: auditActorOf(principal),
      requestId: meta.requestId,
      at: new Date(now),
      entry: reply,
    });
    actor.send({ ...event, reply, relayed });
    return { status: 200, text, replayed: false };
  });
}

/** The reply kept under `key`, or undefined when the key is new; another body is 422. */
function earlierReply(
  window: IdempotencyWindow,
  key: string,
  bodyHash: string,
  now: number,
): StatusReply | undefined {
  const found = window.lookup(key, bodyHash, now);
  if (found.kind === "miss") return undefined;
  if (found.kind === "mismatch") {
    throw new ApiError(
      422,
      "idempotency_key_reused",
      "Idempotency-Key was already used with a different body",
    );
  }
  return { status: found.entry.status, text: found.entry.text, replayed: true };
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
 * Writes a status change with its history row (and idempotency record), telling other
 * processes' supervisors in the same commit; the actor adopts it after. Returns whether the
 * commit told them (else the push goes the usual way, once the actor has adopted it).
 */
async function commitStatus(
  deps: ServiceDeps,
  change: {
    campaign: CampaignRecord;
    to: CampaignStatus;
    action: string;
    actor: { actorType: string; actorId: string | null };
    requestId: string | null;
    at: Date;
    entry?: IdempotencyEntry | undefined;
  },
): Promise<{ relayed: boolean }> {
  const { campaign, entry } = change;
  const { token } = deps.campaigns.leases.fenceOf(campaign.id);
  const push = deps.realtime.campaignMessageInCommit(
    campaign.tenantId,
    campaign.id,
    campaignStatusMessage(campaign.id, campaign.status, change.to),
  );
  const updated = await deps.statusCommits.submit({
    campaignId: campaign.id,
    leaseToken: token,
    tenantId: campaign.tenantId,
    expectedVersion: campaign.version,
    action: change.action,
    from: campaign.status,
    to: change.to,
    ...change.actor,
    requestId: change.requestId,
    at: change.at,
    idempotency: entry && entryRow(campaign.id, entry),
    push,
  });
  if (updated) return { relayed: push !== undefined };
  // Only another owner writes a campaign: this process's lease has been taken over.
  if (deps.campaigns.leases.shared) throw new LeaseLostError(campaign.id);
  throw new Error(`campaign ${campaign.id} changed outside its actor`);
}

/**
 * Completes a running campaign once every lead is final (Completed, Exhausted, DoNotCall)
 * and no call is in flight, as its dialing state counts them. A campaign without leads stays
 * running. Runs inside the campaign's queue, after a dialing change.
 */
/** Completes the campaign if its live state says it is done; enters the campaign's queue. */
export async function completeCampaignIfDone(
  deps: ServiceDeps,
  tenantId: string,
  campaignId: string,
) {
  const live = deps.campaigns.peek(campaignId);
  if (live?.campaign.status !== "running" || !live.dialing || !dialingDone(live.dialing)) return;
  await deps.campaigns.withCampaign(tenantId, campaignId, (actor) => completeIfDone(deps, actor));
}

async function completeIfDone(deps: ServiceDeps, actor: CampaignActor) {
  const before = actor.getSnapshot();
  const { campaign, dialing } = before.context;
  if (campaign.status !== "running" || !dialing || !dialingDone(dialing)) return;
  const now = deps.clock.now();
  const committed = { version: campaign.version + 1, updatedAt: new Date(now).toISOString() };
  const event = { type: "campaign.complete" as const, ...committed };
  const to = statusAfter(before, event);
  if (to === undefined) return;
  const { relayed } = await commitStatus(deps, {
    campaign,
    to,
    action: "complete",
    actor: { actorType: "system", actorId: null },
    requestId: null,
    at: new Date(now),
  });
  actor.send({ ...event, relayed });
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
