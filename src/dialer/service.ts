import type { Executor } from "../../db/client.ts";
import { findTenantNode } from "../../db/queries/access.ts";
import { addDnc } from "../../db/queries/calls.ts";
import type { CampaignRow } from "../../db/queries/campaigns.ts";
import { findTenantCampaign } from "../../db/queries/campaigns.ts";
import {
  type CallRow,
  countCallsInFlight,
  countUnbridgedCalls,
  expiredCalls,
  findLead,
  findNodeCall,
  findTenantCall,
  insertCalls,
  insertCdr,
  runningCampaigns,
  setCdrDisposition,
  setLeadState,
  takeDialableLeads,
  updateCall,
} from "../../db/queries/dialer.ts";
import type { ServiceDeps } from "../deps.ts";
import { badRequest, conflict, forbidden, INVALID_BODY, notFound } from "../errors.ts";
import type { NodePrincipal, Principal } from "../identity/principal.ts";
import { isUuid } from "../identity/tenant-scope.ts";
import { completeCampaignIfDone } from "../modules/campaigns/service.ts";
import { NODE_OFFLINE_AFTER_MS } from "../modules/edge-nodes/model.ts";
import type { AgentPresence } from "./agents.ts";
import { outcomeOf } from "./outcome.ts";
import { currentRatio } from "./pacing.ts";

/** How long a node lets a call ring before giving up. */
export const RING_TIMEOUT_SECONDS = 30;
/** A claimed call with no event for ring time plus this grace has failed. */
const LEASE_GRACE_SECONDS = 30;
const CLAIM_POLL_MS = 200;

export interface DialJob {
  call_id: string;
  campaign_id: string;
  lead_id: string;
  phone: string;
  caller_id: string;
  timeout_seconds: number;
  agent_id: string | null;
}

const leaseFrom = (at: number) =>
  new Date(at + (RING_TIMEOUT_SECONDS + LEASE_GRACE_SECONDS) * 1000);

/** How many new calls a campaign may place now, by its dial mode and its ready agents. */
async function allowance(deps: ServiceDeps, campaign: CampaignRow): Promise<number> {
  const ready = deps.dialer.agents.inCampaign(campaign.id, "ready").length;
  if (ready === 0) return 0;
  if (campaign.dialMode === "preview") return ready;
  const { ratio } = await currentRatio(deps.db, campaign);
  const waiting = await countUnbridgedCalls(deps.db, campaign.id);
  return Math.max(0, Math.floor(ready * ratio + 1e-9) - waiting);
}

/** Spreads `slots` over campaigns one at a time, starting after the last one served. */
function shareFairly(
  wants: { campaign: CampaignRow; allowed: number }[],
  slots: number,
  start: number,
) {
  const shares = new Map<string, number>();
  let remaining = slots;
  let progress = true;
  while (remaining > 0 && progress) {
    progress = false;
    for (let i = 0; i < wants.length && remaining > 0; i++) {
      const want = wants[(start + i) % wants.length] as { campaign: CampaignRow; allowed: number };
      const given = shares.get(want.campaign.id) ?? 0;
      if (given < want.allowed) {
        shares.set(want.campaign.id, given + 1);
        remaining--;
        progress = true;
      }
    }
  }
  return shares;
}

async function claimOnce(deps: ServiceDeps, node: NodePrincipal, max: number): Promise<DialJob[]> {
  const nodeRow = await findTenantNode(deps.db, node.tenantId, node.nodeId);
  if (!nodeRow || nodeRow.revokedAt) return [];
  const capacity = Math.min(
    max,
    nodeRow.maxConcurrentCalls - (await countCallsInFlight(deps.db, { nodeId: node.nodeId })),
  );
  if (capacity <= 0) return [];
  const wants: { campaign: CampaignRow; allowed: number }[] = [];
  for (const campaign of await runningCampaigns(deps.db, node.tenantId)) {
    const allowed = await allowance(deps, campaign);
    if (allowed > 0) wants.push({ campaign, allowed });
  }
  if (wants.length === 0) return [];
  const cursor = deps.dialer.cursors.get(node.tenantId) ?? 0;
  deps.dialer.cursors.set(node.tenantId, cursor + 1);
  const shares = shareFairly(wants, capacity, cursor % wants.length);

  const now = deps.clock.now();
  const jobs: DialJob[] = [];
  for (const { campaign } of wants) {
    const share = shares.get(campaign.id) ?? 0;
    if (share === 0) continue;
    const reserved: AgentPresence[] = [];
    const rows = await deps.db.transaction(async (tx) => {
      const leads = await takeDialableLeads(tx, {
        campaignId: campaign.id,
        now: new Date(now),
        windowStart: campaign.callingWindowStart,
        windowEnd: campaign.callingWindowEnd,
        maxAttempts: campaign.maxAttempts,
        limit: share,
      });
      const callRows = leads.map((lead) => {
        // Preview: each call belongs to one ready agent from the start.
        const agent =
          campaign.dialMode === "preview"
            ? deps.dialer.agents.longestReady(campaign.id)
            : undefined;
        const callId = Bun.randomUUIDv7();
        if (agent)
          reserved.push(deps.dialer.agents.set({ ...agent, state: "reserved", callId }, now));
        return {
          id: callId,
          tenantId: campaign.tenantId,
          campaignId: campaign.id,
          leadListId: lead.lead_list_id,
          leadId: lead.id,
          edgeNodeId: node.nodeId,
          agentId: agent?.userId ?? null,
          phone: lead.phone,
          callerId: lead.caller_id ?? campaign.callerId ?? "",
          attempt: lead.attempts,
          timeoutSeconds: RING_TIMEOUT_SECONDS,
          status: "claimed" as const,
          bridged: false,
          machine: false,
          leaseExpiresAt: leaseFrom(now),
          claimedAt: new Date(now),
          updatedAt: new Date(now),
        };
      });
      await insertCalls(tx, callRows);
      return callRows;
    });
    for (const row of rows) {
      await announce(deps, row as CallRow, "claimed", row.agentId ? "call.offered" : undefined);
      jobs.push({
        call_id: row.id,
        campaign_id: row.campaignId,
        lead_id: row.leadId,
        phone: row.phone,
        caller_id: row.callerId,
        timeout_seconds: row.timeoutSeconds,
        agent_id: row.agentId,
      });
    }
  }
  return jobs;
}

/**
 * Hands a node up to `max` dial jobs from its tenant's running campaigns, within the node's
 * capacity and each campaign's pacing, spread fairly; waits up to `waitMs` for some.
 */
export async function claimJobs(
  deps: ServiceDeps,
  node: NodePrincipal,
  max: number,
  waitMs: number,
) {
  const deadline = performance.now() + waitMs;
  for (;;) {
    const jobs = await deps.dialer.gate.run(node.tenantId, () => claimOnce(deps, node, max));
    const left = deadline - performance.now();
    if (jobs.length > 0 || left <= 0) return { jobs };
    await Bun.sleep(Math.min(CLAIM_POLL_MS, left));
  }
}

export const CALL_EVENT_TYPES = ["ringing", "answered", "machine", "ended"] as const;
export type CallEventType = (typeof CALL_EVENT_TYPES)[number];

export function callView(call: CallRow, action?: "hangup" | "bridge") {
  return {
    id: call.id,
    campaign_id: call.campaignId,
    lead_id: call.leadId,
    edge_node_id: call.edgeNodeId,
    agent_id: call.agentId,
    phone: call.phone,
    caller_id: call.callerId,
    attempt: call.attempt,
    status: call.status,
    outcome: call.outcome,
    hangup_cause: call.hangupCause,
    disposition: call.disposition,
    claimed_at: call.claimedAt.toISOString(),
    answered_at: call.answeredAt?.toISOString() ?? null,
    ended_at: call.endedAt?.toISOString() ?? null,
    ...(action ? { action } : {}),
  };
}

/** Tells supervisors of a call's change, and its agent when the change is theirs. */
async function announce(
  deps: ServiceDeps,
  call: CallRow,
  event: string,
  agentMessage?: "call.offered" | "call.connected" | "call.ended",
) {
  const view = callView(call);
  deps.realtime.toCampaign(call.tenantId, call.campaignId, {
    type: "call.event",
    event,
    call: view,
  });
  deps.realtime.statsChanged(call.tenantId, call.campaignId);
  if (!agentMessage || !call.agentId) return;
  const lead = agentMessage === "call.ended" ? undefined : await findLead(deps.db, call.leadId);
  deps.realtime.toAgent(call.agentId, {
    type: agentMessage,
    call: view,
    ...(lead
      ? {
          lead: {
            id: lead.id,
            phone: lead.phone,
            timezone: lead.timezone,
            fields: lead.fields,
            attempts: lead.attempts,
          },
        }
      : {}),
  });
}

/** After a call without a conversation: try again later, or give up when attempts run out. */
async function retryOrExhaust(
  tx: Executor,
  call: CallRow,
  campaign: CampaignRow,
  outcome: string,
  at: number,
) {
  const lead = await findLead(tx, call.leadId);
  if (!lead) return;
  const exhausted = lead.attempts >= campaign.maxAttempts;
  await setLeadState(tx, lead.id, {
    state: exhausted ? "Exhausted" : "Retry",
    nextAttemptAt: exhausted ? null : new Date(at + campaign.retryDelaySeconds * 1000),
    lastOutcome: outcome,
    updatedAt: new Date(at),
  });
}

const seconds = (from: Date | null, to: Date | null) =>
  from && to ? Math.max(0, Math.round((to.getTime() - from.getTime()) / 1000)) : 0;

/** Ends a call: its outcome, its CDR, its lead's next state, its agent's next state. */
async function finishCall(
  deps: ServiceDeps,
  call: CallRow,
  hangupCause: string | null,
  at: number,
) {
  const campaign = await findTenantCampaign(deps.db, call.tenantId, call.campaignId);
  if (!campaign) return call;
  const outcome = outcomeOf(
    { bridged: call.bridged, answered: call.answeredAt !== null, machine: call.machine },
    hangupCause,
  );
  const ended = await deps.db.transaction(async (tx) => {
    const row = await updateCall(tx, call.id, {
      status: "ended",
      outcome,
      hangupCause,
      endedAt: new Date(at),
      updatedAt: new Date(at),
    });
    await insertCdr(tx, {
      id: Bun.randomUUIDv7(),
      tenantId: row.tenantId,
      callId: row.id,
      campaignId: row.campaignId,
      leadListId: row.leadListId,
      leadId: row.leadId,
      edgeNodeId: row.edgeNodeId,
      agentId: row.bridged ? row.agentId : null,
      phone: row.phone,
      callerId: row.callerId,
      attempt: row.attempt,
      outcome,
      hangupCause,
      disposition: row.disposition,
      startedAt: row.claimedAt,
      answeredAt: row.answeredAt,
      endedAt: row.endedAt,
      ringSeconds: seconds(row.claimedAt, row.answeredAt ?? row.endedAt),
      talkSeconds: seconds(row.answeredAt, row.endedAt),
      createdAt: new Date(at),
    });
    // A bridged call's lead waits for the agent's disposition (unless it already came).
    if (!row.bridged) await retryOrExhaust(tx, row, campaign, outcome, at);
    return row;
  });
  const agent = ended.agentId ? deps.dialer.agents.get(ended.agentId) : undefined;
  if (agent && agent.callId === ended.id) {
    const next = ended.bridged && !ended.disposition ? "wrap_up" : "ready";
    deps.dialer.agents.set(
      { ...agent, state: next, callId: next === "wrap_up" ? ended.id : null },
      at,
    );
  }
  await announce(deps, ended, "ended", "call.ended");
  await completeCampaignIfDone(deps, ended.tenantId, ended.campaignId);
  return ended;
}

/**
 * Applies one event a node reports for one of its calls. Events are idempotent (a repeat is
 * acknowledged, not applied) and may arrive out of order: nothing follows `ended`, and an
 * earlier stage arriving late changes nothing.
 */
export async function applyCallEvent(
  deps: ServiceDeps,
  node: NodePrincipal,
  callId: string,
  event: { type: CallEventType; at: string; hangup_cause?: string | undefined },
) {
  const reported = Date.parse(event.at);
  if (Number.isNaN(reported))
    throw badRequest(INVALID_BODY, [{ field: "at", message: "must be an RFC 3339 timestamp" }]);
  if (!isUuid(callId)) throw notFound("call");
  return deps.dialer.gate.run(`call:${callId}`, async () => {
    const call = await findNodeCall(deps.db, node.nodeId, callId);
    if (!call) throw notFound("call");
    if (call.status === "ended") return { call: callView(call) };
    const at = new Date(reported);
    switch (event.type) {
      case "ringing": {
        if (call.status !== "claimed") return { call: callView(call) };
        const row = await updateCall(deps.db, call.id, {
          status: "ringing",
          ringingAt: at,
          leaseExpiresAt: leaseFrom(reported),
          updatedAt: at,
        });
        await announce(deps, row, "ringing");
        return { call: callView(row) };
      }
      case "answered": {
        if (call.status === "answered")
          return { call: callView(call, call.bridged ? "bridge" : "hangup") };
        return answer(deps, call, at);
      }
      case "machine": {
        if (call.machine) return { call: callView(call) };
        const row = await updateCall(deps.db, call.id, { machine: true, updatedAt: at });
        await announce(deps, row, "machine");
        return { call: callView(row) };
      }
      case "ended":
        return {
          call: callView(await finishCall(deps, call, event.hangup_cause ?? null, reported)),
        };
    }
  });
}

/** An answered call goes to its reserved agent, else the longest-ready one; with none, it is abandoned. */
async function answer(deps: ServiceDeps, call: CallRow, at: Date) {
  const now = at.getTime();
  const reserved = call.agentId ? deps.dialer.agents.get(call.agentId) : undefined;
  const agent =
    reserved && reserved.callId === call.id
      ? reserved
      : deps.dialer.agents.longestReady(call.campaignId);
  // Long calls are judged by the node's heartbeat, not by the ring lease.
  const lease = new Date(now + 24 * 3600 * 1000);
  if (!agent) {
    const row = await updateCall(deps.db, call.id, {
      status: "answered",
      answeredAt: at,
      leaseExpiresAt: lease,
      updatedAt: at,
    });
    await announce(deps, row, "answered");
    return { call: callView(row, "hangup") };
  }
  const row = await deps.db.transaction(async (tx) => {
    const updated = await updateCall(tx, call.id, {
      status: "answered",
      answeredAt: at,
      agentId: agent.userId,
      bridged: true,
      leaseExpiresAt: lease,
      updatedAt: at,
    });
    await setLeadState(tx, call.leadId, {
      state: "Connected",
      lastOutcome: "answered",
      updatedAt: at,
    });
    return updated;
  });
  deps.dialer.agents.set({ ...agent, state: "on_call", callId: call.id }, now);
  await announce(deps, row, "answered", "call.connected");
  return { call: callView(row, "bridge") };
}

export const DISPOSITIONS = ["completed", "callback", "do_not_call", "no_contact"] as const;
export type Disposition = (typeof DISPOSITIONS)[number];

/**
 * The agent's verdict on a connected call moves its lead (Completed, Callback, DoNotCall, or
 * Retry/Exhausted) and frees the agent. Only the call's agent or a supervisor may give it.
 */
export async function dispositionCall(
  deps: ServiceDeps,
  principal: Principal,
  callId: string,
  input: { disposition: Disposition; callback_at?: string | undefined },
) {
  if (!isUuid(callId)) throw notFound("call");
  return deps.dialer.gate.run(`call:${callId}`, async () => {
    const call = await findTenantCall(deps.db, principal.tenantId, callId);
    if (!call) throw notFound("call");
    const supervising = principal.kind === "api_key" || principal.role !== "agent";
    if (!supervising && (principal.kind !== "user" || call.agentId !== principal.user.id)) {
      throw forbidden("only the call's agent or a supervisor may disposition it");
    }
    if (!call.bridged) throw conflict("only a call connected to an agent takes a disposition");
    if (call.disposition) throw conflict("the call already has a disposition");
    const now = deps.clock.now();
    let callbackAt: Date | undefined;
    if (input.disposition === "callback") {
      callbackAt = input.callback_at ? new Date(input.callback_at) : undefined;
      if (!callbackAt || Number.isNaN(callbackAt.getTime()) || callbackAt.getTime() <= now) {
        throw badRequest(INVALID_BODY, [
          { field: "callback_at", message: "a future RFC 3339 time is required for a callback" },
        ]);
      }
    }
    const campaign = await findTenantCampaign(deps.db, call.tenantId, call.campaignId);
    if (!campaign) throw notFound("campaign");
    const at = new Date(now);
    const row = await deps.db.transaction(async (tx) => {
      const updated = await updateCall(tx, call.id, {
        disposition: input.disposition,
        updatedAt: at,
      });
      await setCdrDisposition(tx, call.id, input.disposition);
      switch (input.disposition) {
        case "completed":
          await setLeadState(tx, call.leadId, {
            state: "Completed",
            nextAttemptAt: null,
            lastOutcome: "completed",
            updatedAt: at,
          });
          break;
        case "callback":
          await setLeadState(tx, call.leadId, {
            state: "Callback",
            nextAttemptAt: callbackAt,
            lastOutcome: "callback",
            updatedAt: at,
          });
          break;
        case "do_not_call":
          await setLeadState(tx, call.leadId, {
            state: "DoNotCall",
            nextAttemptAt: null,
            lastOutcome: "do_not_call",
            updatedAt: at,
          });
          await addDnc(tx, {
            tenantId: call.tenantId,
            phone: call.phone,
            source: "disposition",
            createdBy: call.agentId,
            createdAt: at,
          });
          break;
        case "no_contact":
          await retryOrExhaust(tx, call, campaign, "no_contact", now);
          break;
      }
      return updated;
    });
    const agent = call.agentId ? deps.dialer.agents.get(call.agentId) : undefined;
    if (agent && agent.callId === call.id && agent.state === "wrap_up") {
      deps.dialer.agents.set({ ...agent, state: "ready", callId: null }, now);
    }
    await completeCampaignIfDone(deps, call.tenantId, call.campaignId);
    return { call: callView(row) };
  });
}

/**
 * Fails calls whose lease ran out: claimed and never heard of, or on a node that stopped
 * sending heartbeats. Their leads are retried. Run on a timer, and by tests with a clock.
 */
export async function sweepExpiredCalls(deps: ServiceDeps) {
  const now = deps.clock.now();
  let failed = 0;
  for (const call of await expiredCalls(deps.db, new Date(now))) {
    if (call.status !== "claimed") {
      const node = await findTenantNode(deps.db, call.tenantId, call.edgeNodeId);
      const heard = node?.lastHeartbeatAt?.getTime() ?? 0;
      if (node && !node.revokedAt && now - heard < NODE_OFFLINE_AFTER_MS) continue;
    }
    await deps.dialer.gate.run(`call:${call.id}`, async () => {
      await finishCall(deps, call, "LEASE_EXPIRED", now);
      failed++;
    });
  }
  return failed;
}

export type AgentStateInput = {
  state: "ready" | "paused" | "offline";
  campaign_id?: string | undefined;
};

/** An agent's own state change: ready for a campaign, paused, or offline. */
export async function setAgentState(
  deps: ServiceDeps,
  principal: Principal,
  input: AgentStateInput,
) {
  if (principal.kind !== "user") throw forbidden("API keys are not agents");
  const now = deps.clock.now();
  const current = deps.dialer.agents.get(principal.user.id);
  if (current?.state === "on_call") throw conflict("the agent is on a call");
  if (current?.state === "wrap_up" && input.state === "ready") {
    throw conflict("the agent is in wrap-up: disposition the call first");
  }
  let campaignId: string | null = null;
  if (input.state === "ready") {
    if (!input.campaign_id)
      throw badRequest(INVALID_BODY, [{ field: "campaign_id", message: "required to be ready" }]);
    const campaign = isUuid(input.campaign_id)
      ? await findTenantCampaign(deps.db, principal.tenantId, input.campaign_id)
      : undefined;
    if (!campaign) throw notFound("campaign");
    campaignId = campaign.id;
  } else {
    campaignId = input.campaign_id ?? current?.campaignId ?? null;
  }
  // A call reserved for an agent who leaves is released to be answered by another.
  const agent = deps.dialer.agents.set(
    {
      userId: principal.user.id,
      tenantId: principal.tenantId,
      state: input.state,
      campaignId,
      callId: current?.state === "wrap_up" ? current.callId : null,
    },
    now,
  );
  if (current?.state === "reserved" && current.callId) {
    await updateCall(deps.db, current.callId, { agentId: null, updatedAt: new Date(now) });
  }
  return { agent: agentView(agent) };
}

export const agentView = (agent: AgentPresence) => ({
  user_id: agent.userId,
  state: agent.state,
  campaign_id: agent.campaignId,
  call_id: agent.callId,
  since: new Date(agent.since).toISOString(),
});
