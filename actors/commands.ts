import type { CampaignSettings } from "../db/queries/campaigns.ts";
import type { CallRow, LeadNext } from "../db/queries/dialer.ts";
import type { MessageKind, MessageRow } from "../db/queries/messages.ts";
import type { NodeCommandRow } from "../db/queries/node-commands.ts";
import type { NumberLimits, ZoneSource } from "../src/compliance/lead-rules.ts";
import { AFTER_CALL_REASON, type AgentPresence } from "../src/dialer/agents.ts";
import type { DialJob } from "../src/dialer/claim-replies.ts";
import type { AgentView, CallEventType, CallView, PreviewView } from "../src/dialer/model.ts";
import type { Pacing } from "../src/dialer/pacing.ts";
import type { PacerTuning } from "../src/dialer/predictive.ts";
import type {
  CampaignStats,
  CampaignView,
  PatchCampaignInput,
} from "../src/modules/campaigns/model.ts";
import type { MessageView } from "../src/modules/messages/model.ts";
import type {
  CampaignEvent,
  CampaignRecord,
  CampaignStatus,
  StatusAction,
} from "./campaign.machine.ts";
import type { HopperLead, LeadState, LiveCall } from "./dialing.ts";
import type { IdempotencyEntry } from "./idempotency.ts";

/**
 * Every command a campaign takes, as plain data with named fields: what crosses between
 * processes to the campaign's owner, and what the campaign's pure step decides from its
 * state. `CampaignRegistry.run` is the one way in (docs/ARCHITECTURE.md, "One pipeline").
 */
export type CampaignCommand =
  | StatusCommand
  | SettingsCommand
  | MessageCommand
  | StatsCommand
  | PreviewCommand
  | ClaimCommand
  | CallEventCommand
  | DispositionCommand
  | CallControlCommand
  | DialCommand
  | SkipCommand
  | AgentStateCommand
  | RecountCommand
  | ExpireCommand
  | ReconcileCommand;

/** Who made a change, as the history and the audit log record it. */
export interface ChangeActor {
  actorType: "user" | "api_key" | "system";
  actorId: string | null;
}

/** Start, pause or stop, with the reply kept under the request's `Idempotency-Key`. */
export interface StatusCommand {
  type: "status";
  action: StatusAction;
  key: string | null;
  by: ChangeActor;
  requestId: string;
}

/** New settings, as the client sent them (API field names), based on `version`. */
export interface SettingsCommand {
  type: "settings";
  version: number;
  changes: SettingsChanges;
  by: ChangeActor;
  requestId: string;
}

/** The settings a client may change, by their API names. */
export type SettingsChanges = Omit<PatchCampaignInput, "version">;

export type { MessageKind };

/** A recorded message, checked and normalised, as it crosses to the campaign's owner. */
export interface MessageAudio {
  /** The WAV, base64: commands cross between processes as JSON. */
  base64: string;
  encoding: string;
  sampleRate: number;
  durationMs: number;
  sha256: string;
  converted: boolean;
}

/** A new recording of one of the campaign's messages, or (`audio: null`) its removal. */
export interface MessageCommand {
  type: "message";
  kind: MessageKind;
  audio: MessageAudio | null;
  by: ChangeActor;
  requestId: string;
}

/** The campaign's live numbers (a read). */
export interface StatsCommand {
  type: "stats";
}

/** The lead offered to an agent in preview now, if any (a read). */
export interface PreviewCommand {
  type: "preview";
  agentId: string;
}

/** Commands that only read the campaign as committed: answered without a write. */
export const isRead = (command: CampaignCommand): command is StatsCommand | PreviewCommand =>
  command.type === "stats" || command.type === "preview";

/**
 * Places up to `count` calls on a node, within the campaign's pacing, from its hopper (refilled
 * first when empty or stale). `capacity`: the node's, where other processes may place calls on
 * it too (the database then counts its calls); null where this process knows them all.
 */
export interface ClaimCommand {
  type: "claim";
  nodeId: string;
  capacity: number | null;
  count: number;
  claimKey: string | null;
}

/** What a node reports of one of its calls, stamped with when it happened. */
export interface CallEventCommand {
  type: "call.event";
  nodeId: string;
  callId: string;
  event: CallEventType;
  at: number;
  hangupCause: string | null;
  /** The node's answer-to-bridge time, when it reports one. */
  bridgeMs: number | null;
  /** `answered` while detection listens: no agent is chosen before its verdict. */
  detecting?: boolean | undefined;
  /** Detection's verdict (`amd`). */
  amd?: { result: "human" | "machine" | "fax" | "unknown"; confidence: number; ms: number };
  /** Why a transfer failed (`transfer_failed`). */
  reason?: string | null | undefined;
  /** The key the lead pressed (`opt_out`), when the node says. */
  digit?: string | undefined;
  /** A message played, or not (`message_played`). */
  message?: {
    kind: MessageKind;
    played: boolean;
    completed: boolean;
    reason: string | null;
  };
}

/** An agent's or a supervisor's verdict on a connected call. */
export interface DispositionCommand {
  type: "call.disposition";
  callId: string;
  /** One of the campaign's disposition codes. */
  disposition: string;
  /** As the client sent it, for a callback. */
  callbackAt: string | null;
  /** The agent's notes on the call. */
  notes?: string | null | undefined;
  /**
   * Who gives it: the call's agent, or a supervisor (or a key) for any call; `system` when
   * the agent's wrap-up ran out and the campaign's default disposition is recorded.
   */
  by:
    | { actorType: "user" | "api_key"; actorId: string; supervising: boolean }
    | { actorType: "system"; actorId: null; supervising: true };
}

/**
 * Call control on a connected call, carried out by its node: hang it up, or send the lead on
 * (a blind transfer) to another ready agent of the campaign or a number the workspace allows.
 */
export interface CallControlCommand {
  type: "call.control";
  callId: string;
  control: { kind: "hangup" } | { kind: "transfer"; agentId: string | null; phone: string | null };
  by: { actorType: "user" | "api_key"; actorId: string; supervising: boolean };
}

/** An agent dials the lead offered to it (`leadId` null) or a number of its own, made a lead. */
export interface DialCommand {
  type: "call.dial";
  agentId: string;
  leadId: string | null;
}

/** An agent passes on the lead offered to it, or (`bySystem`) its time to dial ran out. */
export interface SkipCommand {
  type: "preview.skip";
  agentId: string;
  bySystem?: boolean | undefined;
}

/** The call a dial placed; null when the lead could no longer be dialled. */
export interface DialReply {
  call: CallView | null;
}

/**
 * An agent's own state change: ready for a campaign, paused, or offline. It runs on the owner
 * of the campaign the agent leaves (else the one it joins): the one process that reserves the
 * agent for calls, so that no change can cross another.
 */
export interface AgentStateCommand {
  type: "agent.state";
  agent: { userId: string; tenantId: string; email: string };
  state: "ready" | "paused" | "offline";
  /** The campaign named in the request, if any. */
  campaignId: string | null;
  /** Why the agent pauses: one of the workspace's not-ready reasons, checked before it runs. */
  reason?: string | null | undefined;
  /** Who asks, when not the agent: the service ending an agent's breath after a call. */
  bySystem?: boolean | undefined;
  /**
   * The agent is gone (its socket's grace ran out, its account was disabled): a call being
   * placed for it is released to whoever is free, rather than kept for nobody.
   */
  gone?: boolean | undefined;
}

/** Leads arrived by import: the campaign counts its leads by state again. */
export interface RecountCommand {
  type: "leads.recount";
}

/** Calls whose lease ran out (claimed and never heard of, or on a node gone silent). */
export interface ExpireCommand {
  type: "calls.expire";
  callIds: string[];
}

/** A node's heartbeat: its calls in flight by its own account. */
export interface ReconcileCommand {
  type: "node.reconcile";
  nodeId: string;
  heldCallIds: string[];
}

/** A status reply as JSON text: serialised once, then sent, kept under its key and replayed. */
export interface StatusReply {
  status: number;
  text: string;
  replayed: boolean;
}

/** A call as it now stands; an answer also says whether the node bridges or hangs up. */
export interface CallReply {
  call: CallView & {
    action?: "bridge" | "hangup" | "detect";
    /** With `hangup`: the message the node plays first, if the campaign has one. */
    message?: { kind: "abandon" | "voicemail"; version: number } | null;
  };
}

/** What each command answers: plain data, the same whichever process ran it. */
export interface CommandReplies {
  status: StatusReply;
  settings: { campaign: CampaignView };
  message: { message: MessageView };
  stats: CampaignStats | null;
  preview: PreviewView | null;
  claim: DialJob[];
  "call.event": CallReply;
  "call.disposition": CallReply;
  "call.control": CallReply;
  "call.dial": DialReply;
  "preview.skip": { skipped: boolean };
  "agent.state": { agent: AgentView };
  "leads.recount": null;
  "calls.expire": number;
  "node.reconcile": number;
}

export type ReplyOf<C extends CampaignCommand> = CommandReplies[C["type"]];

export type { LeadNext };

/** The agents a step may read: by id, the campaign's, its longest ready, its ready by wait. */
export interface AgentsAtHand {
  get(userId: string): AgentPresence | undefined;
  inCampaign(campaignId: string): AgentPresence[];
  longestReady(campaignId: string): AgentPresence | undefined;
  readyByWait(campaignId: string, count: number): AgentPresence[];
}

/**
 * What a step reads of the world besides the campaign's own state, gathered before it runs:
 * the agents, the leads of a refill, a call the actor no longer holds, counts after an import.
 */
export interface CommandInputs {
  agents: AgentsAtHand;
  /** The predictive pacer's tuning (the defaults; the simulator tries others). */
  pacer: PacerTuning;
  /** The ids of new rows. */
  newId: () => string;
  /** A claim's refill: the leads read, and whether they are only the callbacks and retries due. */
  hopper?: { leads: HopperLead[]; dueOnly: boolean } | undefined;
  /** The call as the database holds it: a disposition's, or an event's for a call not in flight. */
  call?: CallRow | undefined;
  /** Leads by state as the database counts them, after an import. */
  leads?: Record<LeadState, number> | undefined;
  /** A transfer's target: the agent's phone, or the numbers the workspace allows. */
  transferTarget?: { phoneUri: string | null } | { numbers: readonly string[] } | undefined;
  /** A number dialled by hand, as a lead of the campaign. */
  dialLead?: HopperLead | undefined;
  /** The online node with the most room, where an agent's dial is placed. */
  dialNode?: { nodeId: string } | undefined;
  /** Whether the campaign an agent names is one of its tenant's. */
  namedCampaignKnown?: boolean | undefined;
}

/** What a step decides to write; the port commits a decision's writes, all or none. */
export type CampaignWrite =
  /** A new status, its history row and the reply under the request's key, in one statement. */
  | {
      type: "status";
      campaign: CampaignRecord;
      to: CampaignStatus;
      action: string;
      by: ChangeActor;
      requestId: string | null;
      at: Date;
      entry: IdempotencyEntry | undefined;
    }
  /** A refused change's reply, kept under its key. */
  | { type: "reply"; campaignId: string; entry: IdempotencyEntry }
  /** New settings, with their audit record; refused if the campaign is not at its version. */
  | {
      type: "settings";
      campaign: CampaignRecord;
      settings: Partial<CampaignSettings>;
      changes: SettingsChanges;
      by: ChangeActor;
      requestId: string;
      at: Date;
    }
  /** A message stored (or removed), the campaign's version of it, and the audit record. */
  | {
      type: "message";
      campaign: CampaignRecord;
      kind: MessageKind;
      audio: MessageAudio | null;
      by: ChangeActor;
      requestId: string;
      at: Date;
    }
  /** Leads marked `Dialing` with their new calls: those still callable when re-checked. */
  | { type: "claim"; claim: ClaimWrite }
  /** A command for the node that holds a call, kept until the node acknowledges it. */
  | { type: "nodeCommand"; command: NodeCommandRow; onlyIfMarked?: string | undefined }
  | { type: "save"; row: CallRow }
  /** The lead pressed the opt-out key: the call's media facts and the number on the list. */
  | { type: "optOut"; row: CallRow; at: Date }
  /** An answered call given to an agent, its lead `Connected`. */
  | { type: "bridge"; row: CallRow }
  /** An ended call, its CDR and, unless an agent took it, its lead's next state. */
  | { type: "end"; ended: CallRow; ringSeconds: number; talkSeconds: number; lead: LeadNext | null }
  /** A disposition on the call and its CDR, its lead's next state, and the number's DNC entry. */
  | {
      type: "settle";
      call: CallRow;
      lead: LeadNext;
      addToDnc: boolean;
      by: ChangeActor;
    };

/** A claim's rows: the candidates, each a lead paired with its new call. */
export interface ClaimWrite {
  tenantId: string;
  campaignId: string;
  edgeNodeId: string;
  candidates: {
    callId: string;
    leadId: string;
    leadListId: string;
    phone: string;
    callerId: string;
    agentId: string | null;
    zone: string;
    zoneSource: ZoneSource;
    /** The number's limits, checked against the workspace's calls in the same statement. */
    limits: NumberLimits;
  }[];
  /** Leads the rules keep from dialling now, each with when it may be tried again. */
  deferrals: { leadId: string; until: Date }[];
  /** The profile version the calls are placed under, and whether the governor held them. */
  profile: { name: string; version: string };
  governorHeld: boolean;
  maxAttempts: number;
  timeoutSeconds: number;
  now: Date;
  leaseExpiresAt: Date;
  claimKey: string | null;
  nodeCapacity: number | null;
}

export type { NumberLimits, ZoneSource };

/** What committing reported, for the steps whose outcome the database decides. */
export interface CommitFacts {
  /** The leads a claim marked, with their state before and their attempts after. */
  marked?: { id: string; prior: HopperLead["state"]; attempts: number }[] | undefined;
  /** The leads a claim found dialable but its node could not take (revoked, or full). */
  unplaced?: ReadonlySet<string> | undefined;
  /** Whether other processes heard of a status change in its commit. */
  relayed?: boolean | undefined;
  /** The campaign as a settings or message change wrote it. */
  campaign?: CampaignRecord | undefined;
  /** The message as its change wrote it. */
  message?: MessageRow | undefined;
  /**
   * The leads whose calls' writes ended them `DoNotCall` rather than in the state decided:
   * their numbers went on the do-not-call list while the calls were in flight.
   */
  listedLeads?: ReadonlySet<string> | undefined;
}

/** What follows outside the campaign once its actor has adopted a decision. */
export type CampaignEffect =
  | { type: "agent"; agent: NextAgent; at: number }
  /**
   * The agent leaves the call for wrap-up, or for what follows a call (`afterCall`) when it
   * needs no disposition, if it is still on it when the end has committed.
   */
  | {
      type: "agentLeaves";
      userId: string;
      callId: string;
      state: "wrap_up" | "ready";
      breathMs: number;
      at: number;
    }
  /** The agent goes on (`afterCall`), if still wrapping up the call when its disposition has committed. */
  | { type: "agentWrappedUp"; userId: string; callId: string; breathMs: number; at: number }
  /** The caller hears back only once the agent's row has committed. */
  | { type: "agentPersisted"; userId: string }
  /** The agents of the campaign hear that a user, a key or the service changed its status. */
  | {
      type: "statusToAgents";
      tenantId: string;
      campaignId: string;
      from: string;
      to: string;
      by: ChangeActor;
    }
  /** A lead offered to an agent in preview: the agent's desktop shows it. */
  | {
      type: "previewOffered";
      tenantId: string;
      agentId: string;
      lead: HopperLead;
      offeredAt: number;
      expiresAt: number;
    }
  /** New settings: supervisors see them (`campaign.updated`), and the stats they change. */
  | { type: "settingsChanged"; campaign: CampaignRecord }
  /** The campaign's numbers changed without a push of their own. */
  | { type: "statsChanged"; tenantId: string; campaignId: string }
  /** The campaign's leads are counted again, and its completion checked (`leads.recount`). */
  | { type: "recount"; tenantId: string; campaignId: string }
  /**
   * A call put its number on the do-not-call list (a disposition, the opt-out key): the
   * number's other leads still to be dialled end, in every campaign, as a listing ends them.
   */
  | { type: "listed"; tenantId: string; phone: string }
  /** A pacing decision, kept as the campaign's last (the simulator charts it). */
  | { type: "paced"; campaignId: string; pacing: Pacing; at: number }
  | {
      type: "announce";
      call: CallRow | LiveCall;
      event: string;
      agentMessage?: "call.offered" | "call.connected" | "call.ended" | "call.transfer" | undefined;
    };

/**
 * What a step decided, before anything was written: the writes to commit, the events the
 * actor adopts once they have, what follows outside the campaign, and the reply. All but the
 * writes may depend on what the commit reported (`CommitFacts`); a refusal is thrown.
 */
export interface Decision<R> {
  writes: CampaignWrite[];
  adopt(facts: CommitFacts): CampaignEvent[];
  effects(facts: CommitFacts): CampaignEffect[];
  reply(facts: CommitFacts): R;
}

/** A decision that writes, adopts and does nothing: it only answers. */
export const answer = <R>(reply: R): Decision<R> => ({
  writes: [],
  adopt: () => [],
  effects: () => [],
  reply: () => reply,
});

/** The effects that move an agent on the board. */
export type AgentEffect = Extract<
  CampaignEffect,
  { type: "agent" | "agentLeaves" | "agentWrappedUp" }
>;

export const isAgentEffect = (effect: CampaignEffect): effect is AgentEffect =>
  effect.type === "agent" || effect.type === "agentLeaves" || effect.type === "agentWrappedUp";

/**
 * An agent's next entry on the board, which starts its state at the change; with
 * `keepSince`, the agent stays where it is and keeps its `since`.
 */
export type NextAgent = Omit<AgentPresence, "since"> & {
  since?: number | undefined;
  keepSince?: boolean | undefined;
};

/**
 * An agent's next entry after an effect, or undefined when the effect no longer applies: an
 * agent leaves an ended call only if still on it, and goes on after a disposition only if
 * still wrapping that call up. `current` is the agent as the board holds it then.
 */
export function agentAfter(
  effect: AgentEffect,
  current: AgentPresence | undefined,
): NextAgent | undefined {
  if (effect.type === "agent") return effect.agent;
  if (current?.callId !== effect.callId) return undefined;
  if (effect.type === "agentLeaves" && effect.state === "wrap_up")
    return { ...current, state: "wrap_up", callId: effect.callId };
  if (effect.type === "agentWrappedUp" && current.state !== "wrap_up") return undefined;
  return afterCall(current, effect.breathMs, effect.at);
}

/**
 * Where an agent goes once its call is dispositioned (or has ended needing none): paused, if
 * it asked to be during the call; else, when the campaign gives a breath (`breathMs`), paused
 * for `after_call` until it ends; else ready.
 */
export function afterCall(agent: AgentPresence, breathMs: number, now: number): NextAgent {
  const base = { ...agent, callId: null, pauseAfterCall: false, readyAt: null };
  if (agent.pauseAfterCall) return { ...base, state: "paused", reason: agent.reason ?? null };
  if (breathMs > 0)
    return { ...base, state: "paused", reason: AFTER_CALL_REASON, readyAt: now + breathMs };
  return { ...base, state: "ready", reason: null };
}
