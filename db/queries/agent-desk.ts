import type { RawClient } from "../client.ts";
import { namedStatement } from "../statement.ts";

/** One earlier call of a lead, as its agent sees it. */
export interface AttemptRow {
  callId: string;
  attempt: number;
  startedAt: Date;
  outcome: string;
  disposition: string | null;
  dispositionOutcome: string | null;
  agentId: string | null;
  agentEmail: string | null;
  notes: string | null;
  talkSeconds: number;
}

/** A lead an agent set a callback for that is still waiting for it. */
export interface CallbackRow {
  leadId: string;
  campaignId: string;
  phone: string;
  timezone: string;
  fields: Record<string, string>;
  dueAt: Date;
  callId: string;
  notes: string | null;
}

/** The calls of a lead, newest first, at most `limit`. */
export function leadAttempts(
  raw: RawClient,
  params: { tenantId: string; leadId: string; limit: number },
): Promise<AttemptRow[]> {
  return LEAD_ATTEMPTS.run<AttemptRow>(raw, {
    tenant_id: params.tenantId,
    lead_id: params.leadId,
    limit: params.limit,
  });
}

const LEAD_ATTEMPTS = namedStatement<{ tenant_id: string; lead_id: string; limit: number }>(`
  select c.call_id as "callId", c.attempt, c.started_at as "startedAt", c.outcome, c.disposition,
    c.disposition_outcome as "dispositionOutcome", c.agent_id as "agentId",
    u.email as "agentEmail", c.notes, c.talk_seconds as "talkSeconds"
  from cdrs c left join users u on u.id = c.agent_id
  where c.tenant_id = :tenant_id::uuid and c.lead_id = :lead_id::uuid
  order by c.started_at desc
  limit :limit::int`);

/**
 * The leads waiting for a callback that the agent set (its last callback disposition of the
 * lead is the agent's), soonest first, at most `limit`.
 */
export function agentCallbacks(
  raw: RawClient,
  params: { tenantId: string; agentId: string; limit: number },
): Promise<CallbackRow[]> {
  return AGENT_CALLBACKS.run<CallbackRow>(raw, {
    tenant_id: params.tenantId,
    agent_id: params.agentId,
    limit: params.limit,
  });
}

const AGENT_CALLBACKS = namedStatement<{ tenant_id: string; agent_id: string; limit: number }>(`
  select * from (
    select distinct on (l.id) l.id as "leadId", l.campaign_id as "campaignId", l.phone,
      l.timezone, l.fields, l.next_attempt_at as "dueAt", c.call_id as "callId", c.notes
    from cdrs c join leads l on l.id = c.lead_id
    where c.tenant_id = :tenant_id::uuid and c.agent_id = :agent_id::uuid
      and c.disposition_outcome = 'callback' and l.state = 'Callback'
      and l.next_attempt_at is not null
      -- Another agent's later callback makes the lead theirs.
      and not exists (
        select 1 from cdrs later
        where later.tenant_id = c.tenant_id and later.lead_id = c.lead_id
          and later.disposition_outcome = 'callback' and later.started_at > c.started_at
          and later.agent_id is distinct from c.agent_id)
    order by l.id, c.started_at desc) callbacks
  order by "dueAt"
  limit :limit::int`);
