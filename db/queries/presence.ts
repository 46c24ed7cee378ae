import type { RawClient } from "../client.ts";
import { arrayLiteral, namedStatement, runStatement } from "../statement.ts";
import { outboxStatement, STAMP_SQL } from "./webhooks.ts";

/** An agent's presence as the table holds it, times in epoch milliseconds. */
export interface PresenceRow {
  userId: string;
  tenantId: string;
  email: string | null;
  state: string;
  campaignId: string | null;
  callId: string | null;
  since: number;
  reason: string | null;
  pauseAfterCall: boolean;
  readyAt: number | null;
  version: number;
}

/** A state an agent left, and how long it lasted: a row of `agent_state_log`. */
export interface StateSpan {
  tenantId: string;
  userId: string;
  state: string;
  reason: string | null;
  campaignId: string | null;
  startedAt: number;
  endedAt: number;
}

/** One agent's state to write; `graceUntil` only counts where a session starts or ends. */
export interface PresenceWrite {
  userId: string;
  tenantId: string;
  state: string;
  campaignId: string | null;
  callId: string | null;
  since: number;
  reason: string | null;
  pauseAfterCall: boolean;
  readyAt: number | null;
  graceUntil: number | null;
}

const iso = (at: number | null) => (at === null ? null : new Date(at).toISOString());

/**
 * Writes the states of several agents in one statement, raising each row's version, and
 * returns the versions written. The state leaves `grace_until` alone, except where the agent
 * signs in or out: a session's deadline starts with the session. The states the agents left
 * since their last write (`spans`) go to `agent_state_log` in the same statement.
 */
export async function upsertPresence(
  raw: RawClient,
  writes: readonly PresenceWrite[],
  spans: readonly StateSpan[] = [],
): Promise<{ userId: string; version: number }[]> {
  if (writes.length === 0) return [];
  const column = <T>(value: (write: PresenceWrite) => T, text: (value: T) => string | null) =>
    arrayLiteral(writes.map((write) => text(value(write))));
  const spanColumn = <T>(value: (span: StateSpan) => T, text: (value: T) => string | null) =>
    arrayLiteral(spans.map((span) => text(value(span))));
  const same = (value: string | null) => value;
  return UPSERT_PRESENCE.run<{ userId: string; version: number }>(raw, {
    user_ids: column((write) => write.userId, same),
    tenant_ids: column((write) => write.tenantId, same),
    states: column((write) => write.state, same),
    campaign_ids: column((write) => write.campaignId, same),
    call_ids: column((write) => write.callId, same),
    sinces: column((write) => write.since, iso),
    grace_untils: column((write) => write.graceUntil, iso),
    reasons: column((write) => write.reason, same),
    pauses_after_call: column((write) => write.pauseAfterCall, String),
    ready_ats: column((write) => write.readyAt, iso),
    log_tenant_ids: spanColumn((span) => span.tenantId, same),
    log_user_ids: spanColumn((span) => span.userId, same),
    log_states: spanColumn((span) => span.state, same),
    log_reasons: spanColumn((span) => span.reason, same),
    log_campaign_ids: spanColumn((span) => span.campaignId, same),
    log_starts: spanColumn((span) => span.startedAt, iso),
    log_ends: spanColumn((span) => span.endedAt, iso),
  });
}

const UPSERT_PRESENCE = namedStatement<{
  user_ids: string;
  tenant_ids: string;
  states: string;
  campaign_ids: string;
  call_ids: string;
  sinces: string;
  grace_untils: string;
  reasons: string;
  pauses_after_call: string;
  ready_ats: string;
  log_tenant_ids: string;
  log_user_ids: string;
  log_states: string;
  log_reasons: string;
  log_campaign_ids: string;
  log_starts: string;
  log_ends: string;
}>(`
  with w as (
    select * from unnest(:user_ids::uuid[], :tenant_ids::uuid[], :states::text[],
      :campaign_ids::uuid[], :call_ids::uuid[], :sinces::timestamptz[], :grace_untils::timestamptz[],
      :reasons::text[], :pauses_after_call::boolean[], :ready_ats::timestamptz[])
      as w(user_id, tenant_id, state, campaign_id, call_id, since, grace_until, reason,
        pause_after_call, ready_at)),
  left_states as (
    insert into agent_state_log (tenant_id, user_id, state, reason, campaign_id, started_at, ended_at)
    select * from unnest(:log_tenant_ids::uuid[], :log_user_ids::uuid[], :log_states::text[],
      :log_reasons::text[], :log_campaign_ids::uuid[], :log_starts::timestamptz[],
      :log_ends::timestamptz[])),${outboxStatement("state_changed", {
        type: "agent.state_changed",
        source: "w left join users u on u.id = w.user_id",
        tenantId: "w.tenant_id",
        orderKey: "w.user_id::text",
        data: `jsonb_build_object('agent', jsonb_build_object('user_id', w.user_id,
          'email', u.email, 'state', w.state, 'campaign_id', w.campaign_id, 'call_id', w.call_id,
          'since', ${STAMP_SQL("w.since")}, 'reason', w.reason,
          'pause_after_call', coalesce(w.pause_after_call, false),
          'ready_at', ${STAMP_SQL("w.ready_at")}))`,
        at: "coalesce(w.since, now())",
      })}
  insert into agent_presence as p
    (user_id, tenant_id, state, campaign_id, call_id, since, grace_until, reason,
      pause_after_call, ready_at, version)
  select user_id, tenant_id, state, campaign_id, call_id, since,
    case when state = 'offline' then null else grace_until end, reason, pause_after_call,
    ready_at, 1
  from w
  on conflict (user_id) do update set
    tenant_id = excluded.tenant_id, state = excluded.state, campaign_id = excluded.campaign_id,
    call_id = excluded.call_id, since = excluded.since, reason = excluded.reason,
    pause_after_call = excluded.pause_after_call, ready_at = excluded.ready_at,
    grace_until = case when (p.state = 'offline') = (excluded.state = 'offline')
      then p.grace_until else excluded.grace_until end,
    version = p.version + 1
  returning user_id as "userId", version::float8 as version`);

/**
 * Sets the sign-out deadlines of agents who are signed in (null: none), leaving their state
 * and version alone.
 */
export async function setGraceDeadlines(
  raw: RawClient,
  deadlines: readonly { userId: string; graceUntil: number | null }[],
): Promise<void> {
  if (deadlines.length === 0) return;
  await runStatement(raw, SET_GRACE_DEADLINES, [
    arrayLiteral(deadlines.map((deadline) => deadline.userId)),
    arrayLiteral(deadlines.map((deadline) => iso(deadline.graceUntil))),
  ]);
}

const SET_GRACE_DEADLINES = `
  update agent_presence p set grace_until = d.grace_until
  from unnest($1::uuid[], $2::timestamptz[]) as d(user_id, grace_until)
  where p.user_id = d.user_id and p.state <> 'offline'`;

/**
 * Takes the agents whose deadline passed by `until` (one agent's, or every agent's): their
 * deadline is cleared in the same statement, so of several processes sweeping at once exactly
 * one gets each agent to sign out.
 */
export async function claimExpiredGraces(
  raw: RawClient,
  params: { until: number; userId?: string | undefined },
): Promise<{ userId: string; tenantId: string }[]> {
  return runStatement(raw, CLAIM_EXPIRED_GRACES, [iso(params.until), params.userId ?? null]);
}

const CLAIM_EXPIRED_GRACES = `
  update agent_presence set grace_until = null
  where grace_until <= $1::timestamptz and state <> 'offline'
    and ($2::uuid is null or user_id = $2::uuid)
  returning user_id as "userId", tenant_id as "tenantId"`;

const PRESENCE_COLUMNS = `
  p.user_id as "userId", p.tenant_id as "tenantId", u.email, p.state,
  p.campaign_id as "campaignId", p.call_id as "callId",
  round(extract(epoch from p.since) * 1000)::float8 as since, p.reason,
  p.pause_after_call as "pauseAfterCall",
  round(extract(epoch from p.ready_at) * 1000)::float8 as "readyAt", p.version::float8 as version`;

/** One agent's row, with the e-mail a wallboard shows. */
export async function findPresence(
  raw: RawClient,
  userId: string,
): Promise<PresenceRow | undefined> {
  const rows = await runStatement<PresenceRow>(raw, FIND_PRESENCE, [userId]);
  return rows[0];
}

const FIND_PRESENCE = `
  select ${PRESENCE_COLUMNS}
  from agent_presence p left join users u on u.id = p.user_id
  where p.user_id = $1::uuid`;

/** Every agent signed in, and the agents named (whatever their state). */
export function listPresenceOf(raw: RawClient, userIds: string[]): Promise<PresenceRow[]> {
  return runStatement<PresenceRow>(raw, LIST_SIGNED_IN_AND_NAMED, [arrayLiteral(userIds)]);
}

const LIST_SIGNED_IN_AND_NAMED = `
  select ${PRESENCE_COLUMNS}
  from agent_presence p join users u on u.id = p.user_id
  where p.state <> 'offline' or p.user_id = any($1::uuid[])`;

/** Every agent signed in, of every tenant: what a process starts from. */
export function listSignedInPresence(raw: RawClient): Promise<PresenceRow[]> {
  return runStatement<PresenceRow>(raw, LIST_SIGNED_IN, []);
}

const LIST_SIGNED_IN = `
  select ${PRESENCE_COLUMNS}
  from agent_presence p join users u on u.id = p.user_id
  where p.state <> 'offline'`;
