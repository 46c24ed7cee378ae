import type { Static } from "elysia";
import type { CallControlCommand, CallReply } from "../../actors/commands.ts";
import { findTenantCampaign } from "../../db/queries/campaigns.ts";
import {
  failedCalls,
  findLead,
  findNodeCall,
  findTenantCall,
  liveCallsOnNode,
  nodeCallCampaign,
} from "../../db/queries/dialer.ts";
import type { ServiceDeps } from "../deps.ts";
import { badRequest, INVALID_BODY, notFound } from "../errors.ts";
import type { NodePrincipal, Principal } from "../identity/principal.ts";
import { isUuid } from "../identity/tenant-scope.ts";
import { INSTANT_EXPECTED, parseInstant } from "../lib/instants.ts";
import { type CallEventBody, NODE_OFFLINE_AFTER_MS } from "../modules/edge-nodes/model.ts";
import type { AgentPresence } from "./agents.ts";
import { callView } from "./model.ts";
import { screenPopUrl } from "./screen-pop.ts";

/**
 * The ways a call's change comes in, each sent to its campaign as one command: a node's
 * event, an agent's disposition, the ends the service declares when a lease runs out or a
 * node no longer holds a call. What each does is decided in `call-decide.ts`.
 */

/** A node's report of one of its calls, as the protocol's schema has it. */
export type CallEventInput = Static<typeof CallEventBody>;
export type CallEventType = CallEventInput["type"];

/** The fields an event of a type needs, or a 400 naming the first missing. */
function mediaOf(event: CallEventInput) {
  const missing = (field: string) =>
    badRequest(INVALID_BODY, [{ field, message: `is required on ${event.type}` }]);
  if (event.type === "amd") {
    if (!event.result) throw missing("result");
    return {
      amd: { result: event.result, confidence: event.confidence ?? 0, ms: event.ms ?? 0 },
    };
  }
  if (event.type === "message_played") {
    if (!event.kind) throw missing("kind");
    if (event.played === undefined) throw missing("played");
    return {
      message: {
        kind: event.kind,
        played: event.played,
        completed: event.completed ?? false,
        reason: event.reason ?? null,
      },
    };
  }
  return {};
}

/**
 * Applies one event a node reports for one of its calls. Events are idempotent (a repeat is
 * acknowledged, not applied) and may arrive out of order. The reply to `answered` names the
 * agent to bridge to, with the phone to reach them at, or says to hang up.
 */
export async function applyCallEvent(
  deps: ServiceDeps,
  node: NodePrincipal,
  sentId: string,
  event: CallEventInput,
): Promise<CallReply & { call: { agent_uri?: string | null } }> {
  const sentAt = parseInstant(event.at);
  if (sentAt === undefined)
    throw badRequest(INVALID_BODY, [{ field: "at", message: INSTANT_EXPECTED }]);
  // Nothing happened after it was reported: a node's clock ahead is read as the service's.
  const at = Math.min(sentAt, deps.clock.now());
  if (!isUuid(sentId)) throw notFound("call");
  const media = mediaOf(event);
  const callId = sentId.toLowerCase();
  let campaignId = deps.campaigns.campaignOfCall(callId);
  if (!campaignId) {
    const found = await nodeCallCampaign(deps.rawDb, { nodeId: node.nodeId, callId });
    if (!found) throw notFound("call");
    if (found.ended) {
      const row = await findNodeCall(deps.db, { nodeId: node.nodeId, callId });
      if (row) return { call: callView(row) };
    }
    campaignId = found.campaignId;
  }
  const reply = await deps.campaigns.run(
    { tenantId: node.tenantId, campaignId, missing: "call" },
    {
      type: "call.event",
      nodeId: node.nodeId,
      callId,
      event: event.type,
      at,
      hangupCause: event.hangup_cause ?? null,
      bridgeMs: event.node_bridge_ms ?? null,
      detecting: event.detecting,
      ...(event.type === "transfer_failed" ? { reason: event.reason ?? null } : {}),
      ...(event.type === "opt_out" ? { digit: event.digit } : {}),
      ...media,
    },
  );
  if (reply.call.action === "hangup") return { call: { ...reply.call, agent_uri: null } };
  if (reply.call.action !== "bridge") return reply;
  const agentId = reply.call.agent_id;
  const agent = agentId ? await deps.tenants.user(node.tenantId, agentId) : undefined;
  return { call: { ...reply.call, agent_uri: agent?.phoneUri ?? null } };
}

export type DispositionInput = {
  disposition: string;
  callback_at?: string | undefined;
  notes?: string | undefined;
};

/**
 * The agent's verdict on a connected call moves its lead (Completed, Callback, DoNotCall, or
 * Retry/Exhausted) and frees the agent. Only the call's agent or a supervisor may give it.
 */
export async function dispositionCall(
  deps: ServiceDeps,
  principal: Principal,
  tenantId: string,
  sentId: string,
  input: DispositionInput,
): Promise<CallReply> {
  const { callId, campaignId } = await callOfCaller(deps, principal, tenantId, sentId);
  return deps.campaigns.run(
    { tenantId, campaignId, missing: "call" },
    {
      type: "call.disposition",
      callId,
      disposition: input.disposition,
      callbackAt: input.callback_at ?? null,
      notes: input.notes?.trim() || null,
      by: callerOf(principal),
    },
  );
}

/**
 * Hangs up a call, or sends its lead on to another agent or an allowed number: the call's
 * node carries it out (see `call-controls.ts`). The call's agent or a supervisor.
 */
export async function controlCall(
  deps: ServiceDeps,
  principal: Principal,
  tenantId: string,
  sentId: string,
  control: CallControlCommand["control"],
): Promise<CallReply> {
  const { callId, campaignId } = await callOfCaller(deps, principal, tenantId, sentId);
  return deps.campaigns.run(
    { tenantId, campaignId, missing: "call" },
    { type: "call.control", callId, control, by: callerOf(principal) },
  );
}

/**
 * The call a caller names and its campaign, or 404 when the tenant it acts in (its own, or
 * the one a platform admin names) has no such call.
 */
async function callOfCaller(
  deps: ServiceDeps,
  principal: Principal,
  tenantId: string,
  sentId: string,
) {
  if (!isUuid(sentId)) throw notFound("call");
  const callId = sentId.toLowerCase();
  // The campaign is known in memory while the call is live or its agent wraps it up.
  const presence =
    principal.kind === "user" ? deps.dialer.agents.get(principal.user.id) : undefined;
  const campaignId =
    deps.campaigns.campaignOfCall(callId) ??
    (presence?.callId === callId ? presence.campaignId : null) ??
    (await findTenantCall(deps.db, { tenantId, callId }))?.campaignId;
  if (!campaignId) throw notFound("call");
  return { callId, campaignId };
}

/** Who acts on a call: a user (supervising unless an agent), or a key (always supervising). */
const callerOf = (principal: Principal) =>
  principal.kind === "user"
    ? {
        actorType: "user" as const,
        actorId: principal.user.id,
        supervising: principal.role !== "agent",
      }
    : { actorType: "api_key" as const, actorId: principal.keyId, supervising: true };

/** Groups calls by their campaigns. */
function byCampaign<T extends { campaignId: string }>(rows: T[]): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const row of rows) {
    const group = groups.get(row.campaignId) ?? [];
    group.push(row);
    groups.set(row.campaignId, group);
  }
  return groups;
}

/**
 * Fails calls whose lease ran out: claimed and never heard of, or on a node that stopped
 * sending heartbeats. Their leads are retried. Run on a timer, and by tests with a clock.
 * Each owner sweeps its own campaigns' calls; a campaign without one is taken by a sweep of
 * orphans, and restored with its calls, first.
 */
export async function sweepExpiredCalls(deps: ServiceDeps): Promise<number> {
  const now = deps.clock.now();
  const expired = await failedCalls(deps.db, {
    now: new Date(now),
    offlineBefore: new Date(now - NODE_OFFLINE_AFTER_MS),
  });
  let failed = 0;
  const rows = expired.map(({ call }) => call);
  for (const [campaignId, calls] of byCampaign(rows)) {
    if (!deps.campaigns.leases.holds(campaignId)) continue;
    failed += await deps.campaigns.run(
      { tenantId: (calls[0] as (typeof calls)[number]).tenantId, campaignId },
      { type: "calls.expire", callIds: calls.map((call) => call.id) },
    );
  }
  return failed;
}

/**
 * Fails at once the calls this node holds by the service's account but not by its own
 * heartbeat (`active_call_ids`), once they are old enough that the claim's reply must have
 * reached it (decided by each campaign). Their leads are retried as after any failed attempt.
 */
export async function reconcileNodeCalls(
  deps: ServiceDeps,
  node: NodePrincipal,
  activeCallIds: readonly string[],
): Promise<number> {
  const held = new Set(activeCallIds.map((id) => id.toLowerCase()));
  const live = deps.campaigns.leases.shared
    ? await liveCallsOnNode(deps.db, node.nodeId)
    : deps.campaigns.liveCallsOnNode(node.nodeId);
  const missing = live.filter(({ callId }) => !held.has(callId));
  let failed = 0;
  for (const campaignId of byCampaign(missing).keys()) {
    failed += await deps.campaigns.run(
      { tenantId: node.tenantId, campaignId },
      { type: "node.reconcile", nodeId: node.nodeId, heldCallIds: [...held] },
    );
  }
  return failed;
}

/** The screen pop of an agent's current call, from its campaign's template; null without one. */
export async function currentScreenPop(
  deps: ServiceDeps,
  tenantId: string,
  current: Awaited<ReturnType<typeof currentCallOf>>,
): Promise<string | null> {
  const { call, lead } = current;
  if (!call || !lead) return null;
  const campaignId = call.campaign_id;
  const template =
    deps.campaigns.peek(campaignId)?.campaign.screenPopUrl ??
    (await findTenantCampaign(deps.db, { tenantId, campaignId }))?.screenPopUrl;
  return template ? screenPopUrl(template, { call, lead }) : null;
}

/** The states in which an agent has a call of its own. */
const WITH_CALL = new Set<AgentPresence["state"]>(["reserved", "on_call", "wrap_up"]);

/**
 * The call an agent is reserved for, on, or wrapping up, with its lead, shaped as in the
 * `call.connected` message; both null in any other state. A call in flight is read from its
 * campaign's live state; one in wrap-up has ended and is read from the database.
 */
export async function currentCallOf(deps: ServiceDeps, agent: AgentPresence | undefined) {
  const none = { call: null, lead: null };
  if (!agent?.callId || !agent.campaignId || !WITH_CALL.has(agent.state)) return none;
  const live = deps.campaigns.peek(agent.campaignId)?.dialing?.calls.get(agent.callId);
  if (live && live.tenantId === agent.tenantId) return { call: callView(live), lead: live.lead };
  const row = await findTenantCall(deps.db, { tenantId: agent.tenantId, callId: agent.callId });
  const lead = row && (await findLead(deps.db, { tenantId: agent.tenantId, leadId: row.leadId }));
  if (!row || !lead) return none;
  const { id, phone, timezone, fields, attempts } = lead;
  return { call: callView(row), lead: { id, phone, timezone, fields, attempts } };
}
