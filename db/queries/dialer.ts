import {
  and,
  asc,
  count,
  desc,
  eq,
  gte,
  inArray,
  isNotNull,
  isNull,
  lt,
  min,
  ne,
  or,
  sql,
} from "drizzle-orm";
import type { HopperLead, LeadState } from "../../actors/dialing.ts";
import type { Executor, RawClient } from "../client.ts";
import { type Fence, fenceCondition } from "../fence.ts";
import { rowsOf } from "../rows.ts";
import { calls, campaignStatusChanges, campaigns, cdrs, leads, nodes } from "../schema/index.ts";
import { arrayLiteral, runStatement } from "../statement.ts";

export type CallRow = typeof calls.$inferSelect;

export interface HopperParams {
  campaignId: string;
  now: Date;
  windowStart: string;
  windowEnd: string;
  maxAttempts: number;
  limit: number;
  /** Fresh leads too, or only the callbacks and retries due. */
  fresh: boolean;
}

/**
 * Up to `limit` leads a campaign may dial now, in dialing order: due callbacks, then due
 * retries, then fresh leads in import order; only with attempts left, off the do-not-call
 * list, and inside the calling window in the lead's own time zone (DST-aware, by the
 * database's zone rules). Each state is read in order by its own index and stops at `limit`.
 *
 * The window test is wrapped in a CASE on purpose: as two range comparisons the planner
 * guesses that 1 lead in 200 passes it, and rather than walk the index to the first `limit`
 * leads it reads and sorts every fresh lead of the campaign (100 ms at 50,000 leads, against
 * 2 ms). A CASE it takes for a coin toss.
 */
export function hopperQuery(params: HopperParams) {
  const now = params.now.toISOString();
  // States, ranks and the limit are written into the text: as parameters, the planner would
  // not trust a plan made without their values, and would plan again on every run.
  const limit = sql.raw(String(Math.trunc(params.limit)));
  const pick = (state: "Callback" | "Retry" | "Fresh", rank: number) => sql`
    (select l.id, l.lead_list_id, l.phone, l.timezone, l.state, l.attempts, l.fields,
        ${sql.raw(String(rank))} as rank, l.next_attempt_at, l.seq
      from leads l
      where l.campaign_id = ${params.campaignId}::uuid and l.state = ${sql.raw(`'${state}'`)}
        and l.attempts < ${params.maxAttempts}
        ${state === "Fresh" ? sql`` : sql`and l.next_attempt_at <= ${now}::timestamptz`}
        and not exists (select 1 from dnc_numbers d where d.tenant_id = l.tenant_id and d.phone = l.phone)
        and case when (timezone(l.timezone, ${now}::timestamptz))::time >= ${params.windowStart}::time
          and (timezone(l.timezone, ${now}::timestamptz))::time < ${params.windowEnd}::time
          then true else false end
      order by ${state === "Fresh" ? sql`l.seq` : sql`l.next_attempt_at, l.seq`}
      limit ${limit})`;
  return sql`
    select p.id, p.lead_list_id, p.phone, p.timezone, p.state, p.attempts, p.fields, ll.caller_id
    from (${pick("Callback", 0)} union all ${pick("Retry", 1)}
      ${params.fresh ? sql`union all ${pick("Fresh", 2)}` : sql``}) p
    join lead_lists ll on ll.id = p.lead_list_id
    order by p.rank, p.next_attempt_at, p.seq
    limit ${limit}`;
}

/** The hopper's leads (see `hopperQuery`). Nothing is marked: a claim re-checks each lead. */
export async function readHopper(db: Executor, params: HopperParams): Promise<HopperLead[]> {
  const result = await db.execute(hopperQuery(params));
  return rowsOf<{
    id: string;
    lead_list_id: string;
    phone: string;
    timezone: string;
    state: HopperLead["state"];
    attempts: number;
    fields: Record<string, string> | string;
    caller_id: string;
  }>(result).map((row) => ({
    id: row.id,
    leadListId: row.lead_list_id,
    phone: row.phone,
    timezone: row.timezone,
    state: row.state,
    attempts: row.attempts,
    callerId: row.caller_id,
    fields: typeof row.fields === "string" ? JSON.parse(row.fields) : row.fields,
  }));
}

/** A call a claim would place on a lead, if the lead is still dialable. */
export interface CallCandidate {
  callId: string;
  leadId: string;
  leadListId: string;
  phone: string;
  callerId: string;
  /** The agent a preview call belongs to from the start. */
  agentId: string | null;
}

/**
 * Claims leads for calls in one statement: each candidate's lead is marked `Dialing` (one
 * more attempt) if it is still dialable now (state unchanged, attempts left, due, not on the
 * do-not-call list, not locked elsewhere), and its call is inserted as claimed. Returns the
 * leads taken, in no particular order, with the state each had and their attempt count after
 * this one; the other candidates place nothing. One statement, where a transaction of two
 * took four round trips.
 */
export async function claimLeads(
  raw: RawClient,
  params: {
    tenantId: string;
    campaignId: string;
    edgeNodeId: string;
    candidates: readonly CallCandidate[];
    maxAttempts: number;
    timeoutSeconds: number;
    now: Date;
    leaseExpiresAt: Date;
    /** The claim's `Idempotency-Key`, kept on each call it places. */
    claimKey?: string | undefined;
    fence: Fence;
    /**
     * The node's capacity, checked against its calls in the database under a lock of the
     * node: where other processes may place calls on it at the same time.
     */
    nodeCapacity?: number | undefined;
  },
): Promise<{ id: string; prior: HopperLead["state"]; attempts: number }[]> {
  const { candidates } = params;
  if (candidates.length === 0) return [];
  const values = [
    arrayLiteral(candidates.map((candidate) => candidate.leadId)),
    arrayLiteral(candidates.map((candidate) => candidate.callId)),
    arrayLiteral(candidates.map((candidate) => candidate.agentId)),
    arrayLiteral(candidates.map((candidate) => candidate.leadListId)),
    arrayLiteral(candidates.map((candidate) => candidate.phone)),
    arrayLiteral(candidates.map((candidate) => candidate.callerId)),
    params.campaignId,
    params.maxAttempts,
    params.now.toISOString(),
    params.tenantId,
    params.edgeNodeId,
    params.timeoutSeconds,
    params.leaseExpiresAt.toISOString(),
    params.claimKey ?? null,
    params.fence.token,
  ];
  const capacity = params.nodeCapacity;
  if (capacity === undefined) return runStatement(raw, CLAIM_LEADS, values);
  if (raw.kind === "pglite") return runStatement(raw, CLAIM_LEADS_CAPPED, [...values, capacity]);
  // The lock makes claims on one node take turns; the claim's own statement then reads the
  // calls that the one before it committed.
  return raw.client.begin(async (tx) => {
    await tx.unsafe("select pg_advisory_xact_lock($1::int, hashtext($2::text))", [
      NODE_CLAIMS_LOCK,
      params.edgeNodeId,
    ]);
    return tx.unsafe(CLAIM_LEADS_CAPPED, [...values, capacity] as never[]);
  }) as unknown as Promise<{ id: string; prior: HopperLead["state"]; attempts: number }[]>;
}

/** The advisory lock class of a node's claims (a campaign's lease has its own). */
const NODE_CLAIMS_LOCK = 1145652813;

/**
 * Marks the candidates' leads as dialing and places their calls. `capped`: at most `$16` minus
 * the node's calls in flight, the first candidates first.
 */
const claimLeadsStatement = (capped: boolean) => `
  with candidate as (
    select * from unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[], $5::text[], $6::text[])
      with ordinality as k(lead_id, call_id, agent_id, lead_list_id, phone, caller_id, ord)),
  taken as (
    select c.id, c.state as prior from leads c join candidate k on k.lead_id = c.id
    where c.campaign_id = $7::uuid and c.attempts < $8::int
      and (c.state = 'Fresh' or (c.state in ('Retry', 'Callback') and c.next_attempt_at <= $9::timestamptz))
      and not exists (select 1 from dnc_numbers d where d.tenant_id = c.tenant_id and d.phone = c.phone)
      and ${fenceCondition("$7", "$15")}
    ${
      capped
        ? `order by k.ord limit greatest(0, $16::int - (select count(*) from calls
             where edge_node_id = $11::uuid and status <> 'ended'))`
        : ""
    }
    for update of c skip locked),
  marked as (
    update leads l set state = 'Dialing', attempts = l.attempts + 1, updated_at = $9::timestamptz
    from taken p where l.id = p.id
    returning l.id, p.prior, l.attempts),
  placed as (
    insert into calls (id, tenant_id, campaign_id, lead_list_id, lead_id, edge_node_id, agent_id,
      phone, caller_id, attempt, timeout_seconds, status, bridged, machine, lease_expires_at,
      claimed_at, updated_at, claim_key)
    select k.call_id, $10::uuid, $7::uuid, k.lead_list_id, k.lead_id, $11::uuid, k.agent_id,
      k.phone, k.caller_id, m.attempts, $12::int, 'claimed', false, false, $13::timestamptz,
      $9::timestamptz, $9::timestamptz, $14::text
    from candidate k join marked m on m.id = k.lead_id)
  select id, prior, attempts from marked`;

const CLAIM_LEADS = claimLeadsStatement(false);
const CLAIM_LEADS_CAPPED = claimLeadsStatement(true);

/** The calls a node's claim with this key placed since `since`, in the order they were placed. */
export const findClaimedCalls = (
  db: Executor,
  params: { nodeId: string; claimKey: string; since: Date },
) =>
  db
    .select()
    .from(calls)
    .where(
      and(
        eq(calls.edgeNodeId, params.nodeId),
        eq(calls.claimKey, params.claimKey),
        gte(calls.claimedAt, params.since),
      ),
    )
    .orderBy(asc(calls.id));

/**
 * The campaign of a node's call, and whether the call has ended: where an event for it goes,
 * read by a process that does not run the campaign (two node requests in three, with three
 * processes), so written as text for the driver.
 */
export async function nodeCallCampaign(
  raw: RawClient,
  nodeId: string,
  callId: string,
): Promise<{ campaignId: string; ended: boolean } | undefined> {
  const [row] = await runStatement<{ campaign_id: string; status: string }>(
    raw,
    NODE_CALL_CAMPAIGN,
    [nodeId, callId],
  );
  return row && { campaignId: row.campaign_id, ended: row.status === "ended" };
}

const NODE_CALL_CAMPAIGN = `
  select campaign_id::text, status from calls where edge_node_id = $1::uuid and id = $2::uuid`;

export const findNodeCall = async (db: Executor, nodeId: string, callId: string) =>
  (
    await db
      .select()
      .from(calls)
      .where(and(eq(calls.edgeNodeId, nodeId), eq(calls.id, callId)))
      .limit(1)
  )[0];

export const findTenantCall = async (db: Executor, tenantId: string, callId: string) =>
  (
    await db
      .select()
      .from(calls)
      .where(and(eq(calls.tenantId, tenantId), eq(calls.id, callId)))
      .limit(1)
  )[0];

/**
 * Calls that have failed: claimed and not heard of within their lease, or past their lease on
 * a node that is revoked or has stopped sending heartbeats. A call on a live node keeps going
 * however long it lasts.
 */
export const failedCalls = (db: Executor, now: Date, offlineBefore: Date) =>
  db
    .select({ call: calls })
    .from(calls)
    .innerJoin(nodes, eq(nodes.id, calls.edgeNodeId))
    .where(
      and(
        ne(calls.status, "ended"),
        lt(calls.leaseExpiresAt, now),
        or(
          eq(calls.status, "claimed"),
          isNotNull(nodes.revokedAt),
          isNull(nodes.lastHeartbeatAt),
          lt(nodes.lastHeartbeatAt, offlineBefore),
        ),
      ),
    );

export const findLead = async (db: Executor, id: string) =>
  (await db.select().from(leads).where(eq(leads.id, id)).limit(1))[0];

/** A campaign's calls not yet ended, each with the lead it dials. */
export async function liveCallsOf(db: Executor, campaignId: string) {
  const rows = await db
    .select({
      call: calls,
      lead: {
        id: leads.id,
        phone: leads.phone,
        timezone: leads.timezone,
        fields: leads.fields,
        attempts: leads.attempts,
      },
    })
    .from(calls)
    .innerJoin(leads, eq(leads.id, calls.leadId))
    .where(and(eq(calls.campaignId, campaignId), ne(calls.status, "ended")));
  return rows.map(({ call, lead }) => ({ ...call, lead }));
}

/** Campaigns with calls not yet ended: their dialing state is loaded at start. */
export const campaignsWithLiveCalls = async (db: Executor) =>
  (
    await db
      .selectDistinct({ campaignId: calls.campaignId })
      .from(calls)
      .where(ne(calls.status, "ended"))
  ).map((row) => row.campaignId);

/** A campaign's most recent calls, oldest first: their outcomes and when they were answered. */
export async function recentCdrs(db: Executor, campaignId: string, limit: number) {
  const rows = await db
    .select({
      callId: cdrs.callId,
      outcome: cdrs.outcome,
      disposition: cdrs.disposition,
      startedAt: cdrs.startedAt,
      answeredAt: cdrs.answeredAt,
      endedAt: cdrs.endedAt,
    })
    .from(cdrs)
    .where(eq(cdrs.campaignId, campaignId))
    .orderBy(desc(cdrs.createdAt))
    .limit(limit);
  return rows.reverse();
}

/**
 * When each of these dispositioned calls ended, and when it was last changed: its disposition,
 * since nothing changes an ended call after that.
 */
export const dispositionTimes = (db: Executor, callIds: string[]) =>
  callIds.length === 0
    ? Promise.resolve([])
    : db
        .select({ endedAt: calls.endedAt, updatedAt: calls.updatedAt })
        .from(calls)
        .where(and(inArray(calls.id, callIds), isNotNull(calls.disposition)))
        .orderBy(calls.endedAt);

/** Calls of a campaign a person answered since `since`, as the compliance ledger counts them. */
export const answeredCdrsSince = (db: Executor, campaignId: string, since: Date) =>
  db
    .select({
      callId: cdrs.callId,
      outcome: cdrs.outcome,
      answeredAt: cdrs.answeredAt,
      bridgeMs: cdrs.bridgeMs,
    })
    .from(cdrs)
    .where(
      and(
        eq(cdrs.campaignId, campaignId),
        inArray(cdrs.outcome, ["answered", "abandoned"]),
        gte(cdrs.answeredAt, since),
      ),
    )
    .orderBy(cdrs.answeredAt);

/** When a campaign first started running, if it ever did: where its legal window begins. */
export const firstStartOf = async (db: Executor, campaignId: string) =>
  (
    await db
      .select({ at: min(campaignStatusChanges.createdAt) })
      .from(campaignStatusChanges)
      .where(
        and(
          eq(campaignStatusChanges.campaignId, campaignId),
          eq(campaignStatusChanges.toStatus, "running"),
        ),
      )
  )[0]?.at ?? null;

const stamp = (at: Date | null) => at?.toISOString() ?? null;

/** After a call without a conversation. */
export interface LeadRetry {
  maxAttempts: number;
  retryAt: Date;
}

/**
 * A lead's next state and due time after a call without a conversation: Retry after the
 * delay, or Exhausted when its attempts have run out. The one place of that rule, as the
 * `state` and `next_attempt_at` expressions of an `update leads`, given the parameter numbers
 * of the attempts allowed and of the retry time.
 */
const retriedOrExhausted = (maxAttempts: string, retryAt: string) => ({
  state: `case when attempts >= ${maxAttempts}::int then 'Exhausted' else 'Retry' end`,
  nextAttemptAt: `case when attempts >= ${maxAttempts}::int then null else ${retryAt}::timestamptz end`,
});

/**
 * Writes what changes on a live call as the node reports it (status, agent, bridge, machine,
 * lease, ringing and answer times) from the call as the actor now holds it.
 */
export async function saveLiveCall(raw: RawClient, call: CallRow, fence: Fence): Promise<void> {
  await runStatement(raw, SAVE_LIVE_CALL, [
    fence.campaignId,
    fence.token,
    call.id,
    call.status,
    call.agentId,
    call.bridged,
    call.machine,
    stamp(call.leaseExpiresAt),
    stamp(call.ringingAt),
    stamp(call.answeredAt),
    stamp(call.updatedAt),
  ]);
}

const SAVE_LIVE_CALL = `
  update calls set status = $4, agent_id = $5::uuid, bridged = $6::boolean, machine = $7::boolean,
    lease_expires_at = $8::timestamptz, ringing_at = $9::timestamptz,
    answered_at = $10::timestamptz, updated_at = $11::timestamptz
  where id = $3::uuid and ${fenceCondition("$1", "$2")}`;

const END_RETRY = retriedOrExhausted("$21", "$22");

/**
 * Ends a call in one statement: its row, its CDR (once per call), and for a call no agent
 * took, its lead's next state: Retry after the delay, or Exhausted when its attempts have run
 * out. One round trip and one commit, where a transaction of three statements took five.
 * `ended` is the call as it ends; returns the state its lead moved to, if it moved.
 */
export async function endCall(
  raw: RawClient,
  end: {
    ended: CallRow;
    cdrId: string;
    ringSeconds: number;
    talkSeconds: number;
    /** Set when the lead is settled now (no agent took the call). */
    retry?: LeadRetry | undefined;
    fence: Fence;
  },
): Promise<"Retry" | "Exhausted" | undefined> {
  const { ended: call, retry } = end;
  const rows = await runStatement<{ state: "Retry" | "Exhausted" | null }>(raw, END_CALL, [
    call.id,
    call.outcome,
    call.hangupCause,
    stamp(call.endedAt),
    stamp(call.updatedAt),
    call.bridgeMs,
    end.cdrId,
    call.tenantId,
    call.campaignId,
    call.leadListId,
    call.leadId,
    call.edgeNodeId,
    call.bridged ? call.agentId : null,
    call.phone,
    call.callerId,
    call.attempt,
    call.disposition,
    stamp(call.claimedAt),
    stamp(call.answeredAt),
    end.ringSeconds,
    retry?.maxAttempts ?? 0,
    stamp(retry?.retryAt ?? null),
    retry !== undefined,
    end.talkSeconds,
    end.fence.token,
  ]);
  return rows[0]?.state ?? undefined;
}

const END_CALL = `
  with ended as (
    update calls set status = 'ended', outcome = $2, hangup_cause = $3,
      ended_at = $4::timestamptz, updated_at = $5::timestamptz, bridge_ms = $6::int
    where id = $1::uuid and ${fenceCondition("$9", "$25")}
    returning id),
  cdr as (
    insert into cdrs (id, tenant_id, call_id, campaign_id, lead_list_id, lead_id, edge_node_id,
      agent_id, phone, caller_id, attempt, outcome, hangup_cause, disposition, started_at,
      answered_at, ended_at, ring_seconds, talk_seconds, bridge_ms, created_at)
    select $7::uuid, $8::uuid, id, $9::uuid, $10::uuid, $11::uuid, $12::uuid, $13::uuid, $14,
      $15, $16::int, $2, $3, $17, $18::timestamptz, $19::timestamptz, $4::timestamptz,
      $20::int, $24::int, $6::int, $4::timestamptz
    from ended
    on conflict do nothing),
  moved as (
    update leads set state = ${END_RETRY.state}, next_attempt_at = ${END_RETRY.nextAttemptAt},
      last_outcome = $2, updated_at = $4::timestamptz
    where id = $11::uuid and $23::boolean and exists (select 1 from ended)
    returning state)
  select (select state from moved) as state`;

/**
 * Bridges an answered call to its agent and marks its lead Connected, in one statement.
 * `bridged` is the call as it is now.
 */
export async function bridgeCall(raw: RawClient, bridged: CallRow, fence: Fence): Promise<void> {
  await runStatement(raw, BRIDGE_CALL, [
    bridged.id,
    stamp(bridged.answeredAt),
    bridged.agentId,
    stamp(bridged.leaseExpiresAt),
    stamp(bridged.updatedAt),
    fence.campaignId,
    fence.token,
  ]);
}

const BRIDGE_CALL = `
  with answered as (
    update calls set status = 'answered', answered_at = $2::timestamptz, agent_id = $3::uuid,
      bridged = true, lease_expires_at = $4::timestamptz, updated_at = $5::timestamptz
    where id = $1::uuid and ${fenceCondition("$6", "$7")}
    returning lead_id)
  update leads set state = 'Connected', last_outcome = 'answered', updated_at = $5::timestamptz
  where id in (select lead_id from answered)`;

const SETTLE_RETRY = retriedOrExhausted("$9", "$10");

/**
 * Records an agent's disposition in one statement: on the call and its CDR, the lead's next
 * state, and for `do_not_call` the phone on the tenant's do-not-call list with its audit
 * record (`actor`: who dispositioned). `call` is the call as it now is. `lead` says where the lead goes: a fixed state, or (no contact) Retry
 * after the delay, or Exhausted when its attempts have run out. Returns the lead's state.
 */
export async function settleDisposition(
  raw: RawClient,
  settle: {
    call: CallRow;
    lead:
      | { state: "Completed" | "Callback" | "DoNotCall"; nextAttemptAt: Date | null }
      | { retry: LeadRetry };
    addToDnc: boolean;
    actor: { actorType: "user" | "api_key"; actorId: string };
    fence: Fence;
  },
): Promise<LeadState | undefined> {
  const { call, lead } = settle;
  const fixed = "state" in lead ? lead : undefined;
  const retry = "retry" in lead ? lead.retry : undefined;
  const rows = await runStatement<{ state: LeadState | null }>(raw, SETTLE_DISPOSITION, [
    call.id,
    call.disposition,
    stamp(call.updatedAt),
    call.tenantId,
    call.phone,
    call.agentId,
    settle.addToDnc,
    retry !== undefined,
    retry?.maxAttempts ?? 0,
    stamp(retry?.retryAt ?? null),
    fixed?.state ?? null,
    stamp(fixed?.nextAttemptAt ?? null),
    call.leadId,
    Bun.randomUUIDv7(),
    settle.actor.actorType,
    settle.actor.actorId,
    settle.fence.campaignId,
    settle.fence.token,
  ]);
  return rows[0]?.state ?? undefined;
}

const SETTLE_DISPOSITION = `
  with updated as (
    update calls set disposition = $2, updated_at = $3::timestamptz
    where id = $1::uuid and ${fenceCondition("$17", "$18")}
    returning id),
  cdr as (
    update cdrs set disposition = $2
    where call_id = $1::uuid and exists (select 1 from updated)),
  dnc as (
    insert into dnc_numbers (tenant_id, phone, source, created_by, created_at)
    select $4::uuid, $5, 'disposition', $6, $3::timestamptz
    where $7::boolean and exists (select 1 from updated)
    on conflict do nothing
    returning phone),
  dnc_audit as (
    insert into audit_events (id, tenant_id, actor_type, actor_id, action, target_type, target_id,
      details, created_at)
    select $14::uuid, $4::uuid, $15, $16, 'dnc.added', 'dnc_entry', phone,
      jsonb_build_object('phone', phone, 'source', 'disposition', 'call_id', $1::text),
      $3::timestamptz
    from dnc),
  moved as (
    update leads set
      state = case when $8::boolean then ${SETTLE_RETRY.state} else $11::text end,
      next_attempt_at = case when $8::boolean then ${SETTLE_RETRY.nextAttemptAt}
        else $12::timestamptz end,
      last_outcome = $2, updated_at = $3::timestamptz
    where id = $13::uuid and exists (select 1 from updated)
    returning state)
  select (select state from moved) as state`;

/** Calls in flight on a node, whichever process owns their campaigns. */
export const countLiveCallsOnNode = async (db: Executor, nodeId: string) =>
  (
    await db
      .select({ live: count() })
      .from(calls)
      .where(and(eq(calls.edgeNodeId, nodeId), ne(calls.status, "ended")))
  )[0]?.live ?? 0;

/** Calls in flight on a node with their campaigns, whichever process owns them. */
export const liveCallsOnNode = (db: Executor, nodeId: string) =>
  db
    .select({ callId: calls.id, campaignId: calls.campaignId })
    .from(calls)
    .where(and(eq(calls.edgeNodeId, nodeId), ne(calls.status, "ended")));

/** A tenant's running campaigns, oldest first: where a claim looks for work. */
export const runningCampaignIds = async (db: Executor, tenantId: string) =>
  (
    await db
      .select({ id: campaigns.id })
      .from(campaigns)
      .where(and(eq(campaigns.tenantId, tenantId), eq(campaigns.status, "running")))
      .orderBy(asc(campaigns.createdAt), asc(campaigns.id))
  ).map((row) => row.id);
