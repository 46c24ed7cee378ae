import type { RawClient } from "../client.ts";
import { arrayLiteral, runStatement } from "../statement.ts";

/** An agent's presence as the table holds it, times in epoch milliseconds. */
export interface PresenceRow {
  userId: string;
  tenantId: string;
  email: string | null;
  state: string;
  campaignId: string | null;
  callId: string | null;
  since: number;
  version: number;
}

/** One agent's state to write; `graceUntil` only counts where a session starts or ends. */
export interface PresenceWrite {
  userId: string;
  tenantId: string;
  state: string;
  campaignId: string | null;
  callId: string | null;
  since: number;
  graceUntil: number | null;
}

const iso = (at: number | null) => (at === null ? null : new Date(at).toISOString());

/**
 * Writes the states of several agents in one statement, raising each row's version, and
 * returns the versions written. The state leaves `grace_until` alone, except where the agent
 * signs in or out: a session's deadline starts with the session.
 */
export async function upsertPresence(
  raw: RawClient,
  writes: readonly PresenceWrite[],
): Promise<{ userId: string; version: number }[]> {
  if (writes.length === 0) return [];
  return runStatement(raw, UPSERT_PRESENCE, [
    arrayLiteral(writes.map((write) => write.userId)),
    arrayLiteral(writes.map((write) => write.tenantId)),
    arrayLiteral(writes.map((write) => write.state)),
    arrayLiteral(writes.map((write) => write.campaignId)),
    arrayLiteral(writes.map((write) => write.callId)),
    arrayLiteral(writes.map((write) => iso(write.since))),
    arrayLiteral(writes.map((write) => iso(write.graceUntil))),
  ]);
}

const UPSERT_PRESENCE = `
  insert into agent_presence as p
    (user_id, tenant_id, state, campaign_id, call_id, since, grace_until, version)
  select user_id, tenant_id, state, campaign_id, call_id, since,
    case when state = 'offline' then null else grace_until end, 1
  from unnest($1::uuid[], $2::uuid[], $3::text[], $4::uuid[], $5::uuid[], $6::timestamptz[],
    $7::timestamptz[]) as w(user_id, tenant_id, state, campaign_id, call_id, since, grace_until)
  on conflict (user_id) do update set
    tenant_id = excluded.tenant_id, state = excluded.state, campaign_id = excluded.campaign_id,
    call_id = excluded.call_id, since = excluded.since,
    grace_until = case when (p.state = 'offline') = (excluded.state = 'offline')
      then p.grace_until else excluded.grace_until end,
    version = p.version + 1
  returning user_id as "userId", version::float8 as version`;

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
  round(extract(epoch from p.since) * 1000)::float8 as since, p.version::float8 as version`;

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
