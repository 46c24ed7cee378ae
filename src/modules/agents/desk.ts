import { Type } from "@sinclair/typebox";
import { t } from "elysia";
import { agentCallbacks, leadAttempts } from "../../../db/queries/agent-desk.ts";
import { findTenantCall } from "../../../db/queries/dialer.ts";
import type { ServiceDeps } from "../../deps.ts";
import type { AgentPresence } from "../../dialer/agents.ts";
import { currentPreview } from "../../dialer/dials.ts";
import { forbidden } from "../../errors.ts";
import type { Principal } from "../../identity/principal.ts";

/** Earlier calls shown beside a lead, at most. */
const HISTORY_LIMIT = 20;
/** Callbacks listed for an agent, at most. */
const CALLBACKS_LIMIT = 50;

export const AttemptSchema = t.Object({
  call_id: t.String({ format: "uuid" }),
  attempt: Type.Integer(),
  started_at: t.String({ format: "date-time" }),
  outcome: t.String(),
  disposition: t.Union([t.String(), t.Null()]),
  disposition_outcome: t.Union([t.String(), t.Null()]),
  agent_id: t.Union([t.String({ format: "uuid" }), t.Null()]),
  agent_email: t.Union([t.String(), t.Null()]),
  notes: t.Union([t.String(), t.Null()]),
  talk_seconds: Type.Integer(),
});

export const CallbackSchema = t.Object({
  lead_id: t.String({ format: "uuid" }),
  campaign_id: t.String({ format: "uuid" }),
  phone: t.String(),
  timezone: t.String(),
  fields: t.Record(t.String(), t.String()),
  due_at: t.String({ format: "date-time" }),
  call_id: t.String({ format: "uuid", description: "the call whose disposition set it" }),
  notes: t.Union([t.String(), t.Null()]),
});

/** The states in which an agent has a lead of its own. */
const WITH_LEAD = new Set<AgentPresence["state"]>(["reserved", "on_call", "wrap_up"]);

const userOf = (principal: Principal) => {
  if (principal.kind !== "user") throw forbidden("API keys are not agents");
  return principal.user;
};

/**
 * The earlier calls of the lead the caller is reserved for, on, or wrapping up, newest
 * first (the current one included once it has ended); empty with no lead. The lead is the
 * agent's own: no id is taken from the client.
 */
export async function ownLeadHistory(deps: ServiceDeps, principal: Principal) {
  const user = userOf(principal);
  const agent = deps.dialer.agents.get(user.id);
  const offered = (await currentPreview(deps, agent))?.lead.id;
  if (!agent?.campaignId || (!offered && (!agent.callId || !WITH_LEAD.has(agent.state)))) return [];
  // The call is in memory where its campaign is owned; elsewhere it is read.
  const dialing = deps.campaigns.peek(agent.campaignId)?.dialing;
  const callId = agent.callId ?? "";
  const leadId =
    offered ??
    dialing?.calls.get(callId)?.leadId ??
    dialing?.wrapping.get(callId)?.leadId ??
    (await findTenantCall(deps.db, { tenantId: principal.tenantId, callId }))?.leadId;
  if (!leadId) return [];
  const rows = await leadAttempts(deps.rawDb, {
    tenantId: principal.tenantId,
    leadId,
    limit: HISTORY_LIMIT,
  });
  return rows.map((row) => ({
    call_id: row.callId,
    attempt: row.attempt,
    started_at: new Date(row.startedAt).toISOString(),
    outcome: row.outcome,
    disposition: row.disposition,
    disposition_outcome: row.dispositionOutcome,
    agent_id: row.agentId,
    agent_email: row.agentEmail,
    notes: row.notes,
    talk_seconds: row.talkSeconds,
  }));
}

/** The callbacks the caller set that are still to be made, soonest first. */
export async function ownCallbacks(deps: ServiceDeps, principal: Principal) {
  const user = userOf(principal);
  const rows = await agentCallbacks(deps.rawDb, {
    tenantId: principal.tenantId,
    agentId: user.id,
    limit: CALLBACKS_LIMIT,
  });
  return rows.map((row) => ({
    lead_id: row.leadId,
    campaign_id: row.campaignId,
    phone: row.phone,
    timezone: row.timezone,
    fields: row.fields,
    due_at: new Date(row.dueAt).toISOString(),
    call_id: row.callId,
    notes: row.notes,
  }));
}
