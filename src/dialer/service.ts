import type { CampaignActor } from "../../actors/campaign.machine.ts";
import {
  type DialingState,
  HOPPER_SIZE,
  hopperRefill,
  type LiveCall,
} from "../../actors/dialing.ts";
import type { CampaignPipeline } from "../../actors/ports.ts";
import { findTenantCampaign } from "../../db/queries/campaigns.ts";
import {
  bridgeCall,
  type CallRow,
  claimLeads,
  countLiveCallsOnNode,
  endCall,
  failedCalls,
  findClaimedCalls,
  findLead,
  findNodeCall,
  findTenantCall,
  liveCallsOnNode,
  nodeCallCampaign,
  readHopper,
  runningCampaignIds,
  saveLiveCall,
  settleDisposition,
} from "../../db/queries/dialer.ts";
import { findPresence } from "../../db/queries/presence.ts";
import { onOwner, ownedCommand } from "../cluster/owner.ts";
import type { ServiceDeps } from "../deps.ts";
import { badRequest, conflict, forbidden, INVALID_BODY, notFound } from "../errors.ts";
import { auditActorOf, type NodePrincipal, type Principal } from "../identity/principal.ts";
import { isUuid } from "../identity/tenant-scope.ts";
import { assertIdempotencyKey } from "../lib/idempotency-key.ts";
import { completeCampaignIfDone } from "../modules/campaigns/service.ts";
import { NODE_OFFLINE_AFTER_MS } from "../modules/edge-nodes/model.ts";
import type { AgentPresence } from "./agents.ts";
import {
  type CallCommand,
  type CallEffect,
  type CallFacts,
  type CallReplies,
  type CallWrite,
  callStep,
  type Disposition,
} from "./call-commands.ts";
import { CLAIM_REPLAY_MS, type DialJob, jobOf } from "./claim-replies.ts";
import { paceCampaign } from "./pacing.ts";

const CLAIM_POLL_MS = 200;

/** The fence every write of a campaign's dialing carries (see db/fence.ts). */
const fenceOf = (deps: ServiceDeps, campaignId: string) =>
  deps.campaigns.leases.fenceOf(campaignId);

/**
 * How many new calls a running campaign may place now, by its dial mode (`paceCampaign`).
 * The decision is kept as the campaign's last, for the simulator's chart. `agents` are the
 * campaign's agents, when the caller has just listed them.
 */
function allowance(
  deps: ServiceDeps,
  actor: CampaignActor,
  agents = deps.dialer.agents.inCampaign(actor.getSnapshot().context.campaign.id),
): number {
  const { campaign, dialing } = actor.getSnapshot().context;
  if (campaign.status !== "running" || !dialing) return 0;
  const now = deps.clock.now();
  const pacing = paceCampaign(campaign, dialing, agents, now, deps.dialer.pacer);
  deps.dialer.paced.set(campaign.id, { ...pacing, at: now });
  return pacing.calls;
}

/** Spreads `slots` over campaigns one at a time, starting after the last one served. */
function shareFairly(
  wants: { campaignId: string; allowed: number }[],
  slots: number,
  start: number,
) {
  const shares = new Map<string, number>();
  let remaining = slots;
  let progress = true;
  while (remaining > 0 && progress) {
    progress = false;
    for (let i = 0; i < wants.length && remaining > 0; i++) {
      const want = wants[(start + i) % wants.length] as { campaignId: string; allowed: number };
      const given = shares.get(want.campaignId) ?? 0;
      if (given < want.allowed) {
        shares.set(want.campaignId, given + 1);
        remaining--;
        progress = true;
      }
    }
  }
  return shares;
}

/**
 * Places up to `share` calls of one campaign on a node, inside the campaign's queue: as many as
 * its pacing allows now, from the actor's hopper (refilled from the database first when empty
 * or stale); the claim's step (call-commands.ts) decides the calls, which join the actor's
 * state once the database has marked their leads `Dialing`.
 */
async function placeCalls(
  deps: ServiceDeps,
  node: NodePrincipal,
  actor: CampaignActor,
  share: number,
  claimKey: string | undefined,
): Promise<DialJob[]> {
  const campaign = actor.getSnapshot().context.campaign;
  const now = deps.clock.now();
  const allowed = Math.min(share, allowance(deps, actor));
  if (allowed <= 0) return [];
  const refill = hopperRefill(actor.getSnapshot().context.dialing as DialingState, now);
  if (refill) {
    const leads = await readHopper(deps.db, {
      campaignId: campaign.id,
      now: new Date(now),
      windowStart: campaign.callingWindowStart,
      windowEnd: campaign.callingWindowEnd,
      maxAttempts: campaign.maxAttempts,
      limit: HOPPER_SIZE,
      fresh: refill === "all",
    });
    deps.campaigns.dispatch(actor, {
      type: "dialing.hopperFilled",
      leads,
      at: now,
      dueOnly: refill === "due",
    });
  }
  return runCall(deps, actor, {
    type: "calls.place",
    count: allowed,
    node: {
      nodeId: node.nodeId,
      // Alone, this process knows every call on the node; with others, only the database
      // does. A process that has just started holds no lease yet, but its relay said hello.
      capacity:
        deps.campaigns.leases.shared &&
        (!deps.campaigns.leases.alone() || deps.realtime.othersHeard())
          ? node.maxConcurrentCalls
          : undefined,
    },
    claimKey,
    agents: deps.dialer.agents,
    newId: () => Bun.randomUUIDv7(),
  });
}

async function claimOnce(
  deps: ServiceDeps,
  node: NodePrincipal,
  max: number,
  claimKey: string | undefined,
): Promise<DialJob[]> {
  // Alone on a shared database (at the last look, a second ago at most), this process runs
  // every campaign: its own count of the node's calls and its running campaigns are whole.
  const leases = deps.campaigns.leases;
  if (leases.shared && !leases.alone()) return claimAcrossOwners(deps, node, max, claimKey);
  const capacity = Math.min(max, node.maxConcurrentCalls - deps.campaigns.callsOnNode(node.nodeId));
  if (capacity <= 0) return [];
  // What each campaign may take, read from its live actor without waiting for its queue; the
  // placement below checks again inside the queue.
  const wants: { campaignId: string; allowed: number }[] = [];
  for (const campaignId of deps.campaigns.runningCampaigns(node.tenantId)) {
    if (!worked(deps, campaignId)) continue;
    const live = deps.campaigns.dialingActor(node.tenantId, campaignId);
    let allowed = 0;
    if (live) allowed = allowance(deps, live);
    else {
      const loaded = await deps.campaigns.withDialing(node.tenantId, campaignId, async (actor) =>
        allowance(deps, actor),
      );
      if (loaded.found) allowed = loaded.value;
    }
    if (allowed > 0) wants.push({ campaignId, allowed });
  }
  // Campaigns place their calls side by side: each in its own queue.
  const placed = await Promise.all(
    sharesOf(deps, node, wants, capacity).map(({ campaignId, share }) =>
      placeHere(deps, node, campaignId, share, claimKey ?? null),
    ),
  );
  return placed.flat();
}

/** Pacing decides who may dial; this only skips campaigns nobody is working on. */
const worked = (deps: ServiceDeps, campaignId: string) =>
  deps.dialer.agents.inCampaign(campaignId).some((agent) => agent.state !== "paused");

/** The node's capacity spread over the campaigns that want calls, starting after the last one served. */
function sharesOf(
  deps: ServiceDeps,
  node: NodePrincipal,
  wants: { campaignId: string; allowed: number }[],
  capacity: number,
) {
  if (wants.length === 0) return [];
  const cursor = deps.dialer.cursors.get(node.tenantId) ?? 0;
  deps.dialer.cursors.set(node.tenantId, cursor + 1);
  const shares = shareFairly(wants, capacity, cursor % wants.length);
  return wants
    .map(({ campaignId }) => ({ campaignId, share: shares.get(campaignId) ?? 0 }))
    .filter(({ share }) => share > 0);
}

/**
 * A claim where campaigns are owned by several processes: the node's load and the running
 * campaigns come from the database, campaigns owned here are paced as above, and each other
 * campaign is offered a share of the capacity on its owner, which places at most what its
 * pacing allows.
 */
async function claimAcrossOwners(
  deps: ServiceDeps,
  node: NodePrincipal,
  max: number,
  claimKey: string | undefined,
): Promise<DialJob[]> {
  const capacity = Math.min(
    max,
    node.maxConcurrentCalls - (await countLiveCallsOnNode(deps.db, node.nodeId)),
  );
  if (capacity <= 0) return [];
  const wants: { campaignId: string; allowed: number }[] = [];
  for (const campaignId of await runningCampaignIds(deps.db, node.tenantId)) {
    if (!worked(deps, campaignId)) continue;
    const live = deps.campaigns.dialingActor(node.tenantId, campaignId);
    const allowed = live ? allowance(deps, live) : capacity;
    if (allowed > 0) wants.push({ campaignId, allowed });
  }
  const placed = await Promise.all(
    sharesOf(deps, node, wants, capacity).map(({ campaignId, share }) =>
      onOwner(
        deps,
        { tenantId: node.tenantId, campaignId, missing: () => notFound("campaign") },
        placeCommand,
        [node, campaignId, share, claimKey ?? null],
      ).catch((error: unknown) => {
        // One campaign's trouble (its owner unreachable) leaves the others' calls placed.
        deps.logger.warn("a campaign's share of a claim was not placed", {
          campaign_id: campaignId,
          error,
        });
        return [] as DialJob[];
      }),
    ),
  );
  return placed.flat();
}

/** Places up to `share` calls of a campaign owned here, within its pacing. */
async function placeHere(
  deps: ServiceDeps,
  node: NodePrincipal,
  campaignId: string,
  share: number,
  claimKey: string | null,
): Promise<DialJob[]> {
  const outcome = await deps.campaigns.withDialing(node.tenantId, campaignId, (actor) =>
    placeCalls(deps, node, actor, share, claimKey ?? undefined),
  );
  return outcome.found ? outcome.value : [];
}

const placeCommand = ownedCommand("dialer.place", placeHere);

/**
 * Hands a node up to `max` dial jobs from its tenant's running campaigns, within the node's
 * capacity and each campaign's pacing, spread fairly; waits up to `waitMs` for some. With a
 * `claimKey`, a claim repeated within a minute gets the jobs the first one placed.
 */
export async function claimJobs(
  deps: ServiceDeps,
  node: NodePrincipal,
  input: { max: number; waitMs: number; claimKey?: string | undefined },
) {
  const { claimKey } = input;
  assertIdempotencyKey(claimKey);
  const deadline = performance.now() + input.waitMs;
  for (;;) {
    // One claim per node at a time keeps its capacity exact and a repeated key behind the first.
    const jobs = await deps.dialer.gate.run(node.nodeId, async () => {
      const replayed = claimKey ? await replayedClaim(deps, node, claimKey) : undefined;
      if (replayed) return replayed;
      const placed = await claimOnce(deps, node, input.max, claimKey);
      if (claimKey)
        deps.dialer.claimReplies.remember(node.nodeId, claimKey, placed, deps.clock.now());
      return placed;
    });
    const left = deadline - performance.now();
    if (jobs.length > 0 || left <= 0) return { jobs };
    await Bun.sleep(Math.min(CLAIM_POLL_MS, left));
  }
}

/** The jobs of an earlier claim with this key: from memory, or from the calls it placed. */
async function replayedClaim(deps: ServiceDeps, node: NodePrincipal, claimKey: string) {
  const now = deps.clock.now();
  const remembered = deps.dialer.claimReplies.get(node.nodeId, claimKey, now);
  if (remembered) return remembered;
  // Another process may have served the first claim; alone, only one from before a restart.
  if (!deps.campaigns.leases.shared && !deps.dialer.claimReplies.mayPredate(now)) return undefined;
  const rows = await findClaimedCalls(deps.db, {
    nodeId: node.nodeId,
    claimKey,
    since: new Date(now - CLAIM_REPLAY_MS),
  });
  if (rows.length === 0) return undefined;
  const jobs = rows.map(jobOf);
  deps.dialer.claimReplies.remember(node.nodeId, claimKey, jobs, now);
  return jobs;
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

/**
 * Tells supervisors of a call's change, and its agent when the change is theirs. Built from
 * the actor's state alone: a push never reads the database.
 */
function announce(
  deps: ServiceDeps,
  call: CallRow | LiveCall,
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
  const lead = agentMessage !== "call.ended" && "lead" in call ? call.lead : undefined;
  deps.realtime.toAgent(call.tenantId, call.agentId, {
    type: agentMessage,
    call: view,
    ...(lead ? { lead } : {}),
  });
}

/**
 * A call's changes as they run here: the pure step (call-commands.ts), the port that writes
 * the call (and its end, its CDR and its lead's next attempt), and the agent's next state and
 * the pushes once the campaign's actor has adopted the change.
 */
const callPipeline = <C extends CallCommand>(
  deps: ServiceDeps,
): CampaignPipeline<C, CallWrite, CallFacts, CallReplies[C["type"]], CallEffect> => ({
  step: callStep,
  commit: async (writes) => {
    const facts: CallFacts = {};
    for (const write of writes) {
      if (write.type === "claim") {
        const fence = fenceOf(deps, write.claim.campaignId);
        facts.marked = await claimLeads(deps.rawDb, { ...write.claim, fence });
      } else if (write.type === "settle") {
        const fence = fenceOf(deps, write.settle.call.campaignId);
        facts.leadAfter = await settleDisposition(deps.rawDb, { ...write.settle, fence });
      } else if (write.type === "save")
        await saveLiveCall(deps.rawDb, write.row, fenceOf(deps, write.row.campaignId));
      else if (write.type === "bridge")
        await bridgeCall(deps.rawDb, write.row, fenceOf(deps, write.row.campaignId));
      else {
        facts.leadAfter = await endCall(deps.rawDb, {
          ...write,
          cdrId: Bun.randomUUIDv7(),
          fence: fenceOf(deps, write.ended.campaignId),
        });
      }
    }
    return facts;
  },
  apply: (effects) => {
    const agents = deps.dialer.agents;
    for (const effect of effects) {
      if (effect.type === "agent") agents.set(effect.agent, effect.at);
      else if (effect.type === "agentLeaves") {
        const agent = agents.get(effect.userId);
        if (agent?.callId !== effect.callId) continue;
        const callId = effect.state === "wrap_up" ? effect.callId : null;
        agents.set({ ...agent, state: effect.state, callId }, effect.at);
      } else if (effect.type === "agentWrappedUp") {
        const agent = agents.get(effect.userId);
        if (agent?.callId !== effect.callId || agent.state !== "wrap_up") continue;
        agents.set({ ...agent, state: "ready", callId: null }, effect.at);
      } else if (effect.type === "statsChanged")
        deps.realtime.statsChanged(effect.tenantId, effect.campaignId);
      else announce(deps, effect.call, effect.event, effect.agentMessage);
    }
  },
});

/** Runs a call command through the campaign's pipeline, in the queue its caller holds. */
const runCall = <C extends CallCommand>(deps: ServiceDeps, actor: CampaignActor, command: C) =>
  deps.campaigns.executeOn(actor, command, callPipeline<C>(deps));

/** Ends a call in flight the service gave up on: its node went silent or lost it. */
const endCallHere = (
  deps: ServiceDeps,
  actor: CampaignActor,
  call: LiveCall,
  cause: string,
  at: number,
) => runCall(deps, actor, { type: "call.end", callId: call.id, hangupCause: cause, at });

/**
 * Runs a change to one call of a campaign: in the call's own order (one change per call at a
 * time), against the campaign's live dialing state, which is loaded first through the
 * campaign's queue if it is not yet. Afterwards the campaign completes if it is done.
 */
async function onCall<T>(
  deps: ServiceDeps,
  target: { tenantId: string; campaignId: string; callId: string },
  change: (actor: CampaignActor, dialing: DialingState) => Promise<T>,
): Promise<{ found: true; value: T } | { found: false }> {
  const outcome = await deps.dialer.gate.run(`call:${target.callId}`, async () => {
    const actor = deps.campaigns.dialingActor(target.tenantId, target.campaignId);
    if (!actor) return deps.campaigns.withDialing(target.tenantId, target.campaignId, change);
    try {
      return {
        found: true as const,
        value: await change(actor, actor.getSnapshot().context.dialing as DialingState),
      };
    } catch (error) {
      deps.campaigns.forgetIfUncertain(target.campaignId, actor, error);
      throw error;
    }
  });
  if (outcome.found) await completeCampaignIfDone(deps, target.tenantId, target.campaignId);
  return outcome;
}

export interface CallEventInput {
  type: CallEventType;
  at: string;
  hangup_cause?: string | undefined;
  node_bridge_ms?: number | undefined;
}

/**
 * Applies one event a node reports for one of its calls. Events are idempotent (a repeat is
 * acknowledged, not applied) and may arrive out of order: nothing follows `ended`, and an
 * earlier stage arriving late changes nothing. Events of a campaign's calls run in its queue,
 * against the call the actor holds; only a call it no longer holds is read from the database.
 */
export async function applyCallEvent(
  deps: ServiceDeps,
  node: NodePrincipal,
  callId: string,
  event: CallEventInput,
) {
  const reported = Date.parse(event.at);
  if (Number.isNaN(reported))
    throw badRequest(INVALID_BODY, [{ field: "at", message: "must be an RFC 3339 timestamp" }]);
  if (!isUuid(callId)) throw notFound("call");
  let campaignId = deps.campaigns.campaignOfCall(callId);
  if (!campaignId) {
    const found = await nodeCallCampaign(deps.rawDb, node.nodeId, callId);
    if (!found) throw notFound("call");
    if (found.ended) {
      const row = await findNodeCall(deps.db, node.nodeId, callId);
      if (row) return { call: callView(row) };
    }
    campaignId = found.campaignId;
  }
  return onOwner(
    deps,
    { tenantId: node.tenantId, campaignId, missing: () => notFound("call") },
    callEventCommand,
    [node, campaignId, callId, event],
  );
}

/** A node's event for a call of a campaign owned here. */
async function callEventHere(
  deps: ServiceDeps,
  node: NodePrincipal,
  campaignId: string,
  callId: string,
  event: CallEventInput,
) {
  const outcome = await onCall(
    deps,
    { tenantId: node.tenantId, campaignId, callId },
    async (actor, dialing) => {
      const call = dialing.calls[callId];
      if (!call || call.edgeNodeId !== node.nodeId) {
        // Ended since (a repeat), or not this node's call.
        const row = await findNodeCall(deps.db, node.nodeId, callId);
        if (!row) throw notFound("call");
        return { call: callView(row) };
      }
      return applyToLiveCall(deps, actor, call, event, Date.parse(event.at));
    },
  );
  if (!outcome.found) throw notFound("call");
  return outcome.value;
}

const callEventCommand = ownedCommand("call.event", callEventHere);

async function applyToLiveCall(
  deps: ServiceDeps,
  actor: CampaignActor,
  call: LiveCall,
  event: CallEventInput,
  reported: number,
) {
  const command: CallCommand =
    event.type === "ended"
      ? {
          type: "call.end",
          callId: call.id,
          hangupCause: event.hangup_cause ?? null,
          bridgeMs: event.node_bridge_ms,
          at: reported,
        }
      : {
          type: "call.event",
          callId: call.id,
          event: event.type,
          at: reported,
          agents: deps.dialer.agents,
        };
  const { call: row, answer } = await runCall(deps, actor, command);
  if (answer === "bridge") return bridgeReply(deps, row);
  if (answer === "hangup") return { call: { ...callView(row, "hangup"), agent_uri: null } };
  return { call: callView(row) };
}

/** The reply to an answer that goes to an agent: the agent and the phone to bridge to. */
async function bridgeReply(deps: ServiceDeps, row: CallRow) {
  const agent = row.agentId ? await deps.tenants.user(row.tenantId, row.agentId) : undefined;
  return { call: { ...callView(row, "bridge"), agent_uri: agent?.phoneUri ?? null } };
}

export { DISPOSITIONS, type Disposition } from "./call-commands.ts";

export type DispositionInput = { disposition: Disposition; callback_at?: string | undefined };

/**
 * The agent's verdict on a connected call moves its lead (Completed, Callback, DoNotCall, or
 * Retry/Exhausted) and frees the agent. Only the call's agent or a supervisor may give it.
 */
export async function dispositionCall(
  deps: ServiceDeps,
  principal: Principal,
  callId: string,
  input: DispositionInput,
) {
  if (!isUuid(callId)) throw notFound("call");
  // The campaign is known in memory while the call is live or its agent wraps it up.
  const presence =
    principal.kind === "user" ? deps.dialer.agents.get(principal.user.id) : undefined;
  const campaignId =
    deps.campaigns.campaignOfCall(callId) ??
    (presence?.callId === callId ? presence.campaignId : null) ??
    (await findTenantCall(deps.db, principal.tenantId, callId))?.campaignId;
  if (!campaignId) throw notFound("call");
  return onOwner(
    deps,
    { tenantId: principal.tenantId, campaignId, missing: () => notFound("call") },
    dispositionCommand,
    [principal, campaignId, callId, input],
  );
}

/** A disposition of a call of a campaign owned here. */
async function dispositionHere(
  deps: ServiceDeps,
  principal: Principal,
  campaignId: string,
  callId: string,
  input: DispositionInput,
) {
  const outcome = await onCall(
    deps,
    { tenantId: principal.tenantId, campaignId, callId },
    async (actor) => {
      const call = await findTenantCall(deps.db, principal.tenantId, callId);
      if (!call) throw notFound("call");
      const { call: row } = await runCall(deps, actor, {
        type: "call.disposition",
        call,
        disposition: input.disposition,
        callbackAt: input.callback_at,
        by: {
          actor: auditActorOf(principal),
          supervising: principal.kind === "api_key" || principal.role !== "agent",
        },
        agents: deps.dialer.agents,
      });
      return { call: callView(row) };
    },
  );
  if (!outcome.found) throw notFound("call");
  return outcome.value;
}

const dispositionCommand = ownedCommand("call.disposition", dispositionHere);

/**
 * Fails calls whose lease ran out: claimed and never heard of, or on a node that stopped
 * sending heartbeats. Their leads are retried. Run on a timer, and by tests with a clock.
 */
export async function sweepExpiredCalls(deps: ServiceDeps) {
  const now = deps.clock.now();
  let failed = 0;
  const expired = await failedCalls(deps.db, new Date(now), new Date(now - NODE_OFFLINE_AFTER_MS));
  for (const { call: row } of expired) {
    // Each owner sweeps its own campaigns' calls; a campaign without one is taken by a sweep
    // of orphans, and restored with its calls, first.
    if (!deps.campaigns.leases.holds(row.campaignId)) continue;
    const target = { tenantId: row.tenantId, campaignId: row.campaignId, callId: row.id };
    await onCall(deps, target, async (actor, dialing) => {
      const call = dialing.calls[row.id];
      if (!call) return;
      await endCallHere(deps, actor, call, "LEASE_EXPIRED", now);
      failed++;
    });
  }
  return failed;
}

/** A call claimed this long ago that its node's heartbeat does not list is lost. */
export const NODE_LOST_AFTER_MS = 10_000;

/**
 * Fails at once the calls this node holds by the service's account but not by its own
 * heartbeat (`active_call_ids`), once they are old enough that the claim's reply must have
 * reached it: the node never learned of them (a lost reply) or lost them (a restart). Their
 * leads are retried as after any failed attempt.
 */
export async function reconcileNodeCalls(
  deps: ServiceDeps,
  node: NodePrincipal,
  activeCallIds: readonly string[],
) {
  const now = deps.clock.now();
  const held = new Set(activeCallIds.map((id) => id.toLowerCase()));
  let failed = 0;
  const live = deps.campaigns.leases.shared
    ? await liveCallsOnNode(deps.db, node.nodeId)
    : deps.campaigns.liveCallsOnNode(node.nodeId);
  for (const { callId, campaignId } of live) {
    if (held.has(callId)) continue;
    const lost = await onOwner(
      deps,
      { tenantId: node.tenantId, campaignId, missing: () => notFound("campaign") },
      nodeLostCommand,
      [node, campaignId, callId, now],
    );
    if (lost) failed++;
  }
  return failed;
}

/** Fails a call of a campaign owned here that its node no longer holds; true if it did. */
async function nodeLostHere(
  deps: ServiceDeps,
  node: NodePrincipal,
  campaignId: string,
  callId: string,
  now: number,
) {
  let lost = false;
  const target = { tenantId: node.tenantId, campaignId, callId };
  await onCall(deps, target, async (actor, dialing) => {
    const call = dialing.calls[callId];
    if (!call || call.edgeNodeId !== node.nodeId) return;
    if (now - call.claimedAt.getTime() <= NODE_LOST_AFTER_MS) return;
    await endCallHere(deps, actor, call, "NODE_LOST", now);
    lost = true;
  });
  return lost;
}

const nodeLostCommand = ownedCommand("call.nodeLost", nodeLostHere);

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
  // The owner of the agent's campaign (the one it leaves, else the one it joins) decides:
  // it is the one process that reserves the agent for calls, so no change can cross another.
  const current = deps.dialer.agents.get(principal.user.id);
  const named =
    input.campaign_id !== undefined && isUuid(input.campaign_id) ? input.campaign_id : null;
  const campaignId = current?.campaignId ?? named;
  if (!campaignId || !deps.campaigns.leases.shared) return agentStateHere(deps, principal, input);
  const reply = await onOwner(
    deps,
    { tenantId: principal.tenantId, campaignId, missing: () => notFound("campaign") },
    agentStateCommand,
    [principal, input],
  );
  // Committed by the owner: this process's board takes the row now, not at the feed's notice,
  // so that the agent's next request here sees its change.
  const row = await findPresence(deps.rawDb, principal.user.id);
  if (row) deps.dialer.agents.adopt(row);
  return reply;
}

async function agentStateHere(deps: ServiceDeps, principal: Principal, input: AgentStateInput) {
  if (principal.kind !== "user") throw forbidden("API keys are not agents");
  const now = deps.clock.now();
  const current = deps.dialer.agents.get(principal.user.id);
  if (current?.state === "on_call") throw conflict("the agent is on a call");
  if (current?.state === "wrap_up" && input.state === "ready") {
    throw conflict("the agent is in wrap-up: disposition the call first");
  }
  if (input.state === "ready" && !input.campaign_id)
    throw badRequest(INVALID_BODY, [{ field: "campaign_id", message: "required to be ready" }]);
  // Whatever the state, a named campaign must be one of the agent's tenant: the board never
  // holds an entry for a campaign that does not exist or that another tenant owns.
  const campaignId =
    input.campaign_id === undefined
      ? (current?.campaignId ?? null)
      : await tenantCampaignId(deps, principal.tenantId, input.campaign_id);
  // A call reserved for an agent who leaves is released to be answered by another.
  const agent = deps.dialer.agents.set(
    {
      userId: principal.user.id,
      tenantId: principal.tenantId,
      email: principal.user.email,
      state: input.state,
      campaignId,
      callId: current?.state === "wrap_up" ? current.callId : null,
    },
    now,
  );
  if (current?.state === "reserved" && current.callId && current.campaignId) {
    await releaseReservation(deps, principal.tenantId, current.campaignId, current.callId, now);
  }
  // The reply follows the commit of the agent's row, which the board writes behind.
  await deps.dialer.agents.persisted(principal.user.id);
  return { agent: agentView(agent) };
}

const agentStateCommand = ownedCommand("agent.state", agentStateHere);

/** The id of a campaign of the tenant; any other value, malformed ones included, is 404. */
async function tenantCampaignId(deps: ServiceDeps, tenantId: string, campaignId: string) {
  const campaign = isUuid(campaignId)
    ? await findTenantCampaign(deps.db, tenantId, campaignId)
    : undefined;
  if (!campaign) throw notFound("campaign");
  return campaign.id;
}

export const agentView = (agent: AgentPresence) => ({
  user_id: agent.userId,
  email: agent.email ?? null,
  state: agent.state,
  campaign_id: agent.campaignId,
  call_id: agent.callId,
  since: new Date(agent.since).toISOString(),
});

/** The states in which an agent has a call of its own. */
const WITH_CALL = new Set<AgentPresence["state"]>(["reserved", "on_call", "wrap_up"]);

/**
 * The call an agent is reserved for, on, or wrapping up, with its lead, shaped as in the
 * `call.connected` message; both null in any other state. A call in flight is read from its
 * campaign's actor; one in wrap-up has ended and is read from the database.
 */
export async function currentCallOf(deps: ServiceDeps, agent: AgentPresence | undefined) {
  const none = { call: null, lead: null };
  if (!agent?.callId || !agent.campaignId || !WITH_CALL.has(agent.state)) return none;
  const live = deps.campaigns.dialingActor(agent.tenantId, agent.campaignId)?.getSnapshot().context
    .dialing?.calls[agent.callId];
  if (live) return { call: callView(live), lead: live.lead };
  const row = await findTenantCall(deps.db, agent.tenantId, agent.callId);
  const lead = row && (await findLead(deps.db, row.leadId));
  if (!row || !lead) return none;
  const { id, phone, timezone, fields, attempts } = lead;
  return { call: callView(row), lead: { id, phone, timezone, fields, attempts } };
}

/** A preview call reserved for an agent who left goes to whoever is free when it is answered. */
async function releaseReservation(
  deps: ServiceDeps,
  tenantId: string,
  campaignId: string,
  callId: string,
  now: number,
) {
  await onCall(deps, { tenantId, campaignId, callId }, async (actor, dialing) => {
    if (dialing.calls[callId])
      await runCall(deps, actor, { type: "call.release", callId, at: now });
  });
}
