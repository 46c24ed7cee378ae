import type {
  CampaignEvent,
  CampaignRecord,
  CampaignSnapshot,
} from "../../actors/campaign.machine.ts";
import type {
  AgentsAtHand,
  CallEventCommand,
  CallReply,
  CampaignEffect,
  CommandInputs,
  CommitFacts,
  Decision,
  DispositionCommand,
  ExpireCommand,
  LeadNext,
  ReconcileCommand,
} from "../../actors/commands.ts";
import {
  callsInFlight,
  type LeadMove,
  type LiveCall,
  previewDialing,
} from "../../actors/dialing.ts";
import { LiveCalls } from "../../actors/live-calls.ts";
import type { CallRow } from "../../db/queries/dialer.ts";
import type { CallMedia } from "../../db/schema/columns.ts";
import {
  badRequest,
  conflict,
  forbidden,
  INVALID_BODY,
  notFound,
  unprocessable,
} from "../errors.ts";
import { parseInstant } from "../lib/instants.ts";
import { completion } from "../modules/campaigns/decide.ts";
import { messageVersionOf } from "../modules/messages/decide.ts";
import { freedFromTransfer, transferReported } from "./call-controls.ts";
import type { VerdictEntry } from "./ledger.ts";
import { callView, MACHINE_CODE } from "./model.ts";
import { outcomeOf } from "./outcome.ts";

/**
 * A call's changes as pure steps: what a node reports (ringing, answered, a machine, the end),
 * the ends the service declares itself (a lease run out, a node that lost the call), a
 * disposition and a reservation given up. Each is decided from the campaign's dialing state,
 * the agents at hand, what the database holds of a call the actor no longer has, and the
 * time: the rows to write, what the actor adopts, the agents' next states and the pushes, the
 * reply, and the campaign's completion when the change leaves nothing to dial. Every rule of
 * a call is here: where its lead goes (Retry or Exhausted included), which agent takes an
 * answer, when a node has lost a call.
 */

/** How long a node lets a call ring before giving up. */
export const RING_TIMEOUT_SECONDS = 30;
/** A claimed call with no event for ring time plus this grace has failed. */
const LEASE_GRACE_SECONDS = 30;
/** A call claimed this long ago that its node's heartbeat does not list is lost. */
export const NODE_LOST_AFTER_MS = 10_000;

/** Until when a call stays the node's without another event from it. */
export const leaseFrom = (at: number) =>
  new Date(at + (RING_TIMEOUT_SECONDS + LEASE_GRACE_SECONDS) * 1000);

/**
 * The call's row, without the lead the actor keeps beside it. Field by field: a rest-spread
 * that leaves one property out takes JavaScriptCore's slow path, and a call's row is taken
 * several times at every event.
 */
export function rowOf(call: LiveCall): CallRow {
  return {
    id: call.id,
    tenantId: call.tenantId,
    campaignId: call.campaignId,
    leadListId: call.leadListId,
    leadId: call.leadId,
    edgeNodeId: call.edgeNodeId,
    agentId: call.agentId,
    phone: call.phone,
    callerId: call.callerId,
    attempt: call.attempt,
    timeoutSeconds: call.timeoutSeconds,
    status: call.status,
    bridged: call.bridged,
    machine: call.machine,
    outcome: call.outcome,
    hangupCause: call.hangupCause,
    disposition: call.disposition,
    dispositionAutomatic: call.dispositionAutomatic,
    dispositionOutcome: call.dispositionOutcome,
    notes: call.notes,
    leaseExpiresAt: call.leaseExpiresAt,
    claimedAt: call.claimedAt,
    ringingAt: call.ringingAt,
    answeredAt: call.answeredAt,
    endedAt: call.endedAt,
    bridgeMs: call.bridgeMs,
    claimKey: call.claimKey,
    profile: call.profile,
    profileVersion: call.profileVersion,
    zone: call.zone,
    zoneSource: call.zoneSource,
    governorHeld: call.governorHeld,
    media: call.media,
    updatedAt: call.updatedAt,
  };
}

type NodeAction = NonNullable<CallReply["call"]["action"]>;

const replyOf = (row: CallRow, action?: NodeAction, message?: PlayedMessage | null): CallReply => ({
  call: action
    ? { ...callView(row), action, ...(message !== undefined ? { message } : {}) }
    : callView(row),
});

type PlayedMessage = { kind: "abandon" | "voicemail"; version: number };

/** The campaign's message of a kind for the node to play before it hangs up, if it has one. */
function messageOf(campaign: CampaignRecord, kind: "abandon" | "voicemail"): PlayedMessage | null {
  const version = messageVersionOf(campaign, kind);
  return version === null ? null : { kind, version };
}

/** What the node does with a call it asks about again: the answer it was given. */
function actionOf(call: LiveCall): NodeAction {
  if (call.bridged) return "bridge";
  if (call.media?.detecting) return "detect";
  return "hangup";
}

/**
 * Whether a machine verdict goes to an agent anyway, to estimate detection's false
 * positives: a share of calls chosen by their id, so that a repeat decides the same.
 */
export function sampledForAgents(callId: string, percent: number): boolean {
  if (percent <= 0) return false;
  let hash = 2166136261;
  for (let i = 0; i < callId.length; i++) hash = Math.imul(hash ^ callId.charCodeAt(i), 16777619);
  return (hash >>> 0) % 10_000 < percent * 100;
}

type CallDecision = Decision<CallReply>;

/**
 * A node's event for one of its calls. A call the actor no longer holds (ended since: a
 * repeat) is answered as the database holds it; nothing follows `ended`, and an earlier
 * stage arriving late changes nothing.
 */
export function decideCallEvent(
  snapshot: CampaignSnapshot,
  sent: CallEventCommand,
  inputs: CommandInputs,
): CallDecision {
  const call = snapshot.context.dialing?.calls.get(sent.callId);
  if (!call || call.edgeNodeId !== sent.nodeId) {
    const stored = inputs.call;
    if (!stored || stored.edgeNodeId !== sent.nodeId) throw notFound("call");
    return unchanged(stored);
  }
  // No stage is dated before the one the call reached: a node's clock behind, or a time made
  // up, would otherwise give negative rings and talks, and agents' figures with them.
  const command = { ...sent, at: Math.max(sent.at, reachedAt(call)) };
  const at = new Date(command.at);
  const { campaign } = snapshot.context;
  switch (command.event) {
    case "ended":
      return withCompletion(
        snapshot,
        endOf(snapshot, call, {
          hangupCause: command.hangupCause,
          bridgeMs: command.bridgeMs,
          at: command.at,
        }),
        command.at,
      );
    case "ringing":
      if (call.status !== "claimed") return unchanged(rowOf(call));
      return changed(call, {
        ...rowOf(call),
        status: "ringing",
        ringingAt: at,
        leaseExpiresAt: leaseFrom(command.at),
        updatedAt: at,
      });
    case "machine":
      // Once the answer was decided (put through, or hung up on as abandoned), a machine heard
      // late changes nothing: the call stays what it was decided to be, and counts as such.
      if (call.machine || decidedAnswer(call)) return unchanged(rowOf(call));
      return changed(call, { ...rowOf(call), machine: true, updatedAt: at }, "machine");
    case "answered":
      if (call.status === "answered") return repeatedAnswer(campaign, call);
      if (command.detecting && campaign.amdEnabled) return detecting(call, command.at);
      return answerOf(campaign, call, inputs.agents, command.at);
    case "amd":
      return verdictOf(campaign, call, command, inputs.agents);
    case "message_played": {
      const message = command.message;
      if (!message) throw badRequest(INVALID_BODY, [{ field: "kind", message: "is required" }]);
      assertAnswered(call, "a message is played");
      const media: CallMedia = {
        ...call.media,
        message: {
          kind: message.kind,
          played: message.played,
          completed: message.played && message.completed,
          started_at: message.played ? at.toISOString() : null,
          reason: message.reason,
        },
      };
      return changed(call, { ...rowOf(call), media, updatedAt: at }, "message_played");
    }
    case "transferred":
    case "transfer_failed":
      return transferReported(snapshot, call, command, inputs);
    case "opt_out": {
      if (call.media?.opted_out) return unchanged(rowOf(call));
      assertAnswered(call, "an opt-out is heard");
      if (command.digit !== undefined && command.digit !== campaign.optOutDigit) {
        throw unprocessable("digit", `is not the campaign's opt-out key (${campaign.optOutDigit})`);
      }
      const row: CallRow = {
        ...rowOf(call),
        media: { ...call.media, opted_out: true },
        updatedAt: at,
      };
      const live = { ...row, lead: call.lead };
      return {
        writes: [{ type: "optOut", row, at }],
        adopt: () => [{ type: "dialing.callChanged", call: live }],
        effects: () => [
          { type: "announce", call: live, event: "opt_out" },
          { type: "listed", tenantId: call.tenantId, phone: call.phone },
        ],
        reply: () => replyOf(row),
      };
    }
  }
}

/** Answered, and put through or hung up on: not still listening for a machine. */
const decidedAnswer = (call: LiveCall) => call.answeredAt !== null && !call.media?.detecting;

/** Messages and their opt-out key come after an answer; before it, there was no one to hear. */
function assertAnswered(call: LiveCall, what: string): void {
  if (call.answeredAt === null) throw conflict(`${what} only after the call was answered`);
}

/** An `answered` heard again: the answer it was given, message included. */
function repeatedAnswer(campaign: CampaignRecord, call: LiveCall): CallDecision {
  const action = actionOf(call);
  const message =
    action !== "hangup" ? undefined : call.machine ? null : messageOf(campaign, "abandon");
  return { ...unchanged(rowOf(call)), reply: () => replyOf(rowOf(call), action, message) };
}

/**
 * Answered, and the node listens for a machine before anyone is put through: the call is
 * answered from now (its lease runs on), and its agent is chosen on the verdict.
 */
function detecting(call: LiveCall, now: number): CallDecision {
  const at = new Date(now);
  const row: CallRow = {
    ...rowOf(call),
    status: "answered",
    answeredAt: at,
    leaseExpiresAt: leaseFrom(now),
    media: { ...call.media, detecting: true },
    updatedAt: at,
  };
  const decision = changed(call, row, "answered");
  return { ...decision, reply: () => replyOf(row, "detect") };
}

/**
 * Detection's verdict decides what follows: a person (or no verdict) is put through as any
 * answer; a machine is hung up on, left the voicemail message after its beep, or put through,
 * as the campaign says, save a sampled share put through to estimate false positives; a fax
 * is hung up on.
 */
function verdictOf(
  campaign: CampaignRecord,
  call: LiveCall,
  command: CallEventCommand,
  agents: AgentsAtHand,
): CallDecision {
  const verdict = command.amd;
  if (!verdict) throw badRequest(INVALID_BODY, [{ field: "result", message: "is required" }]);
  if (call.media?.amd) return repeatedAnswer(campaign, call);
  if (call.status !== "answered" || !call.media?.detecting)
    throw conflict("a verdict comes after an `answered` event that said detection was on");
  const machine = verdict.result === "machine" || verdict.result === "fax";
  const sampled =
    verdict.result === "machine" && sampledForAgents(call.id, campaign.amdSamplePercent);
  const action = verdict.result === "fax" ? "hangup" : sampled ? "connect" : campaign.machineAction;
  const { detecting: _, ...media } = call.media;
  const heard: LiveCall = {
    ...call,
    media: { ...media, amd: { ...verdict, sampled } },
    updatedAt: new Date(command.at),
  };
  if (!machine || action === "connect") return answerOf(campaign, heard, agents, command.at);
  const row: CallRow = { ...rowOf(heard), machine: true };
  const decision = changed(call, row, "machine");
  const message = action === "voicemail" ? messageOf(campaign, "voicemail") : null;
  return { ...decision, reply: () => replyOf(row, "hangup", message) };
}

const unchanged = (row: CallRow): CallDecision => ({
  writes: [],
  adopt: () => [],
  effects: () => [],
  reply: () => replyOf(row),
});

/** A call's new row saved, adopted and announced as `event` (its status by default). */
function changed(call: LiveCall, row: CallRow, event: string = row.status): CallDecision {
  const live = { ...row, lead: call.lead };
  return {
    writes: [{ type: "save", row }],
    adopt: () => [{ type: "dialing.callChanged", call: live }],
    effects: () => [{ type: "announce", call: live, event }],
    reply: () => replyOf(row),
  };
}

/**
 * An answered call goes to its reserved agent, else the longest-ready one; with none, it is
 * abandoned, and the node plays the campaign's abandon message before it hangs up.
 */
function answerOf(
  campaign: CampaignRecord,
  call: LiveCall,
  agents: AgentsAtHand,
  now: number,
): CallDecision {
  const at = new Date(now);
  const reserved = call.agentId ? agents.get(call.agentId) : undefined;
  const agent =
    reserved && reserved.callId === call.id ? reserved : agents.longestReady(call.campaignId);
  // From here the call lasts as long as it lasts: it fails only if its node goes silent.
  const answered: CallRow = {
    ...rowOf(call),
    status: "answered",
    answeredAt: call.answeredAt ?? at,
    leaseExpiresAt: leaseFrom(now),
    updatedAt: at,
  };
  if (!agent) {
    const decision = changed(call, answered, "answered");
    return {
      ...decision,
      reply: () => replyOf(answered, "hangup", messageOf(campaign, "abandon")),
    };
  }
  const row: CallRow = { ...answered, agentId: agent.userId, bridged: true };
  const live: LiveCall = { ...row, lead: call.lead };
  const lead: LeadMove = { from: "Dialing", to: "Connected" };
  return {
    writes: [{ type: "bridge", row }],
    adopt: () => [{ type: "dialing.callChanged", call: live, lead }],
    effects: () => [
      { type: "agent", agent: { ...agent, state: "on_call", callId: call.id }, at: now },
      { type: "announce", call: live, event: "answered", agentMessage: "call.connected" },
    ],
    reply: () => replyOf(row, "bridge", null),
  };
}

/** The lead's state once the call's write committed: `DoNotCall` if its number was listed meanwhile. */
const leadStateAfter = (call: { leadId: string }, lead: LeadNext, facts: CommitFacts) =>
  facts.listedLeads?.has(call.leadId) ? "DoNotCall" : lead.state;

/**
 * A lead that ended listed may have been the campaign's last: its completion, decided before
 * the write, is checked again by a recount.
 */
const recountIfListed = (
  call: { leadId: string; tenantId: string; campaignId: string },
  facts: CommitFacts,
): CampaignEffect[] =>
  facts.listedLeads?.has(call.leadId)
    ? [{ type: "recount", tenantId: call.tenantId, campaignId: call.campaignId }]
    : [];

/** When the call reached the stage it is at. */
const reachedAt = (call: { claimedAt: Date; ringingAt: Date | null; answeredAt: Date | null }) =>
  Math.max(
    call.claimedAt.getTime(),
    call.ringingAt?.getTime() ?? 0,
    call.answeredAt?.getTime() ?? 0,
  );

const seconds = (from: Date | null, to: Date | null) =>
  from && to ? Math.max(0, Math.round((to.getTime() - from.getTime()) / 1000)) : 0;

/**
 * Where a lead goes after an attempt without a conversation: Retry after the campaign's delay,
 * or Exhausted once its attempts have run out. `attempts` counts the attempt just made.
 */
export function retriedOrExhausted(
  attempts: number,
  campaign: { maxAttempts: number; retryDelaySeconds: number },
  at: number,
): LeadNext {
  return attempts >= campaign.maxAttempts
    ? { state: "Exhausted", nextAttemptAt: null }
    : { state: "Retry", nextAttemptAt: new Date(at + campaign.retryDelaySeconds * 1000) };
}

/** Ends a call: its outcome, its CDR, its lead's next state, its agent's next state. */
function endOf(
  snapshot: CampaignSnapshot,
  call: LiveCall,
  end: { hangupCause: string | null; bridgeMs?: number | null | undefined; at: number },
): CallDecision {
  const { campaign } = snapshot.context;
  const { at } = end;
  const outcome = outcomeOf(
    { bridged: call.bridged, answered: call.answeredAt !== null, machine: call.machine },
    end.hangupCause,
  );
  const transfer = call.media?.transfer;
  const ended: CallRow = {
    ...rowOf(call),
    status: "ended",
    outcome,
    hangupCause: end.hangupCause,
    endedAt: new Date(at),
    updatedAt: new Date(at),
    bridgeMs: end.bridgeMs ?? call.bridgeMs,
    // A transfer the end cut short did not happen: its record says so, not pending for ever.
    ...(transfer?.status === "pending"
      ? {
          media: {
            ...call.media,
            transfer: {
              ...transfer,
              status: "failed" as const,
              at: new Date(at).toISOString(),
              reason: "the call ended before the transfer was made",
            },
          },
        }
      : {}),
  };
  // A bridged call's lead waits for the agent's disposition (unless it already came); a lead
  // who pressed the opt-out key is never called again.
  const lead = ended.bridged
    ? null
    : call.media?.opted_out
      ? ({ state: "DoNotCall", nextAttemptAt: null } as const)
      : retriedOrExhausted(call.attempt, campaign, at);
  const next = ended.bridged && !ended.disposition ? "wrap_up" : "ready";
  return {
    writes: [
      {
        type: "end",
        ended,
        ringSeconds: seconds(ended.claimedAt, ended.answeredAt ?? ended.endedAt),
        talkSeconds: seconds(ended.answeredAt, ended.endedAt),
        lead,
      },
    ],
    adopt: (facts) => [
      {
        type: "dialing.callEnded",
        callId: call.id,
        outcome,
        ...(lead ? { lead: { from: "Dialing", to: leadStateAfter(call, lead, facts) } } : {}),
        claimedAt: ended.claimedAt.getTime(),
        answeredAt: ended.answeredAt?.getTime() ?? null,
        endedAt: at,
        bridgeMs: ended.bridgeMs,
        ...(next === "wrap_up" ? { wrapUp: ended } : {}),
        ...(outcome === "machine" ? { verdict: machineVerdictOf(ended) } : {}),
      },
    ],
    effects: (facts) => [
      ...recountIfListed(call, facts),
      ...(ended.agentId
        ? [
            {
              type: "agentLeaves",
              userId: ended.agentId,
              callId: ended.id,
              state: next,
              // A breath follows a conversation, not a preview call that was never answered.
              breathMs: ended.bridged ? campaign.afterCallPauseSeconds * 1000 : 0,
              at,
            } as const,
          ]
        : []),
      // The agent a transfer the end cut short held for it (`ended` records it failed).
      ...freedFromTransfer(call, at),
      { type: "announce", call: ended, event: "ended", agentMessage: "call.ended" },
    ],
    reply: () => replyOf(ended),
  };
}

/** A machine verdict hung up on, as the ledger counts it; undefined for other machines. */
function machineVerdictOf(call: CallRow): VerdictEntry | undefined {
  const amd = call.media?.amd;
  if (amd?.result !== "machine" || amd.sampled || !call.answeredAt) return undefined;
  return { kind: "machine", callId: call.id, answeredAt: call.answeredAt.getTime() };
}

/** A sampled machine verdict an agent judged: a person unless `answering_machine`. */
function judgedSampleOf(call: CallRow): VerdictEntry | undefined {
  if (!call.media?.amd?.sampled || !call.answeredAt) return undefined;
  return {
    kind: "sample",
    callId: call.id,
    answeredAt: call.answeredAt.getTime(),
    person: call.disposition !== MACHINE_CODE,
  };
}

/** Where a disposition's outcome leaves its lead; `retry` retries it instead. */
const SETTLED_LEAD_STATES = {
  done: "Completed",
  callback: "Callback",
  do_not_call: "DoNotCall",
} as const;

/**
 * The agent's verdict on a connected call, one of its campaign's codes, moves its lead as the
 * code's outcome says (Completed, Callback, DoNotCall, or Retry/Exhausted) and frees the
 * agent. Only the call's agent or a supervisor may give it. The call is read from the
 * database (`inputs.call`): it may have ended.
 */
export function decideDisposition(
  snapshot: CampaignSnapshot,
  command: DispositionCommand,
  inputs: CommandInputs,
  now: number,
): CallDecision {
  const call = inputs.call;
  if (!call) throw notFound("call");
  const { disposition, by } = command;
  if (!by.supervising && call.agentId !== by.actorId)
    throw forbidden("only the call's agent or a supervisor may disposition it");
  if (!call.bridged) throw conflict("only a call connected to an agent takes a disposition");
  if (call.disposition) throw conflict("the call already has a disposition");
  const { campaign, dialing } = snapshot.context;
  const code = campaign.dispositionCodes.find((known) => known.code === disposition);
  if (!code) {
    const known = campaign.dispositionCodes.map((known) => known.code).join(", ");
    throw unprocessable("disposition", `not one of the campaign's disposition codes (${known})`);
  }
  let callbackAt: Date | undefined;
  if (code.outcome === "callback") {
    const at = command.callbackAt ? parseInstant(command.callbackAt) : undefined;
    callbackAt = at === undefined ? undefined : new Date(at);
    if (!callbackAt || callbackAt.getTime() <= now) {
      throw badRequest(INVALID_BODY, [
        { field: "callback_at", message: "a future RFC 3339 time is required for a callback" },
      ]);
    }
  }
  const row: CallRow = {
    ...call,
    disposition,
    dispositionOutcome: code.outcome,
    dispositionAutomatic: by.actorType === "system",
    notes: command.notes ?? null,
    updatedAt: new Date(now),
  };
  const lead: LeadNext =
    code.outcome === "retry"
      ? retriedOrExhausted(call.attempt, campaign, now)
      : { state: SETTLED_LEAD_STATES[code.outcome], nextAttemptAt: callbackAt ?? null };
  const live = dialing?.calls.get(call.id);
  const agent = call.agentId ? inputs.agents.get(call.agentId) : undefined;
  const wrapping = agent?.callId === call.id && agent.state === "wrap_up";
  const events = (facts: CommitFacts): CampaignEvent[] => [
    {
      type: "dialing.leadsMoved",
      moves: [{ from: "Connected", to: leadStateAfter(call, lead, facts) }],
    },
    { type: "dialing.dispositioned", callId: call.id, verdict: judgedSampleOf(row) },
    ...(live ? [{ type: "dialing.callChanged" as const, call: { ...row, lead: live.lead } }] : []),
    ...(wrapping && call.endedAt
      ? [{ type: "dialing.wrappedUp" as const, wrapMs: now - call.endedAt.getTime(), at: now }]
      : []),
  ];
  return withCompletion(
    snapshot,
    {
      writes: [
        {
          type: "settle",
          call: row,
          lead,
          addToDnc: code.outcome === "do_not_call",
          by: { actorType: by.actorType, actorId: by.actorId },
        },
      ],
      adopt: events,
      effects: (facts) => [
        ...recountIfListed(call, facts),
        ...(code.outcome === "do_not_call"
          ? [{ type: "listed" as const, tenantId: call.tenantId, phone: call.phone }]
          : []),
        ...(call.agentId
          ? [
              {
                type: "agentWrappedUp" as const,
                userId: call.agentId,
                callId: call.id,
                breathMs: campaign.afterCallPauseSeconds * 1000,
                at: now,
              },
            ]
          : []),
        { type: "statsChanged", tenantId: call.tenantId, campaignId: call.campaignId },
      ],
      reply: () => replyOf(row),
    },
    now,
  );
}

/** A preview call's reservation given up: whoever is free takes it when it is answered. */
export function releaseOf(call: LiveCall, now: number): Decision<void> | undefined {
  if (call.bridged || call.agentId === null) return undefined;
  const row: CallRow = { ...rowOf(call), agentId: null, updatedAt: new Date(now) };
  return {
    writes: [{ type: "save", row }],
    adopt: () => [{ type: "dialing.callChanged", call: { ...row, lead: call.lead } }],
    effects: () => [],
    reply: () => undefined,
  };
}

/** Calls whose lease ran out fail, and their leads are retried. Answers how many ended. */
export function decideExpiry(
  snapshot: CampaignSnapshot,
  command: ExpireCommand,
  now: number,
): Decision<number> {
  const calls = snapshot.context.dialing?.calls ?? LiveCalls.empty;
  const ending = command.callIds.flatMap((id) => calls.get(id) ?? []);
  return endAll(snapshot, ending, "LEASE_EXPIRED", now);
}

/**
 * Fails at once the calls this node holds by the campaign's account but not by its own
 * heartbeat, once they are old enough that the claim's reply must have reached it: the node
 * never learned of them (a lost reply) or lost them (a restart). Answers how many ended.
 */
export function decideReconcile(
  snapshot: CampaignSnapshot,
  command: ReconcileCommand,
  now: number,
): Decision<number> {
  const held = new Set(command.heldCallIds.map((id) => id.toLowerCase()));
  const lost = [...(snapshot.context.dialing?.calls ?? [])].filter(
    (call) =>
      call.edgeNodeId === command.nodeId &&
      !held.has(call.id) &&
      now - call.claimedAt.getTime() > NODE_LOST_AFTER_MS,
  );
  return endAll(snapshot, lost, "NODE_LOST", now);
}

function endAll(
  snapshot: CampaignSnapshot,
  calls: LiveCall[],
  hangupCause: string,
  now: number,
): Decision<number> {
  const ends = calls.map((call) => endOf(snapshot, call, { hangupCause, at: now }));
  return withCompletion(snapshot, { ...merged(ends), reply: () => ends.length }, now);
}

/** Several decisions as one: their writes committed together, their events adopted in order. */
export function merged<R>(decisions: Decision<R>[]): Decision<R[]> {
  return {
    writes: decisions.flatMap((decision) => decision.writes),
    adopt: (facts) => decisions.flatMap((decision) => decision.adopt(facts)),
    effects: (facts) => decisions.flatMap((decision) => decision.effects(facts)),
    reply: (facts) => decisions.map((decision) => decision.reply(facts)),
  };
}

/**
 * The decision, and the campaign's completion when its events leave every lead final and no
 * call in flight: committed with it, adopted after it.
 */
function withCompletion<R>(
  snapshot: CampaignSnapshot,
  decision: Decision<R>,
  now: number,
): Decision<R> {
  const { dialing } = snapshot.context;
  if (!dialing || decision.writes.length === 0 || snapshot.context.campaign.status !== "running")
    return decision;
  const events = decision.adopt({});
  // Calls left in flight after these events: not done, and nothing to preview.
  const ending = events.filter((event) => event.type === "dialing.callEnded").length;
  if (callsInFlight(dialing) > ending) return decision;
  const done = completion(snapshot, previewDialing(dialing, events), now);
  if (!done) return decision;
  return {
    ...decision,
    writes: [...decision.writes, done.write],
    adopt: (facts) => [...decision.adopt(facts), { ...done.event, relayed: facts.relayed }],
  };
}
