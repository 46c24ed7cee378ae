import { Type } from "@sinclair/typebox";
import { type Static, t } from "elysia";
import type { HopperLead } from "../../actors/dialing.ts";
import type { CallRow } from "../../db/queries/dialer.ts";
import { AGENT_STATES, type AgentPresence } from "./agents.ts";

const Uuid = t.String({ format: "uuid" });

/** What a node reports of a call. */
export const CALL_EVENT_TYPES = [
  "ringing",
  "answered",
  "machine",
  "ended",
  "amd",
  "message_played",
  "opt_out",
  "transferred",
  "transfer_failed",
] as const;

export type CallEventType = (typeof CALL_EVENT_TYPES)[number];

/** What answering-machine detection may say answered. */
export const AMD_RESULTS = ["human", "machine", "fax", "unknown"] as const;
const NullableTime = t.Union([t.String({ format: "date-time" }), t.Null()]);

/** A blind transfer of a connected call, on the call and on its CDR. */
export const CallTransferSchema = t.Object(
  {
    from_agent_id: t.Union([Uuid, t.Null()]),
    to_agent_id: t.Union([Uuid, t.Null()], { description: "the agent the lead was sent to" }),
    to_phone: t.Union([t.String(), t.Null()], {
      description: "the number the lead was sent to (one of the workspace's transfer_numbers)",
    }),
    requested_at: t.String({ format: "date-time" }),
    status: t.Union([t.Literal("pending"), t.Literal("done"), t.Literal("failed")]),
    at: NullableTime,
    reason: t.Union([t.String(), t.Null()], { description: "why a failed transfer failed" }),
  },
  { description: "a blind transfer: pending until the node reports the new leg up, or not" },
);

/** A call as the node protocol, the sockets and the agent's own view show it (`callView`). */
export const CallViewSchema = t.Object({
  id: Uuid,
  campaign_id: Uuid,
  lead_id: Uuid,
  edge_node_id: Uuid,
  agent_id: t.Union([Uuid, t.Null()]),
  phone: t.String(),
  caller_id: t.String(),
  attempt: Type.Integer(),
  status: t.String({ description: "claimed, ringing, answered or ended" }),
  outcome: t.Union([t.String(), t.Null()]),
  hangup_cause: t.Union([t.String(), t.Null()]),
  disposition: t.Union([t.String(), t.Null()]),
  disposition_outcome: t.Union([t.String(), t.Null()], {
    description: "what the disposition's code did to the lead: done, retry, callback, do_not_call",
  }),
  disposition_automatic: t.Boolean({
    description: "recorded by the service when the agent's wrap-up ran out",
  }),
  claimed_at: t.String({ format: "date-time" }),
  answered_at: NullableTime,
  ended_at: NullableTime,
  transfer: t.Optional(t.Union([CallTransferSchema, t.Null()])),
  action: t.Optional(
    t.Union([t.Literal("bridge"), t.Literal("hangup"), t.Literal("detect")], {
      description:
        "on the reply to `answered` and `amd`: bridge to `agent_id`, hang up (no agent free, or a machine), or (to `answered` with `detecting`) listen and report `amd`",
    }),
  ),
  message: t.Optional(
    t.Union(
      [
        t.Object({
          kind: t.Union([t.Literal("abandon"), t.Literal("voicemail")]),
          version: Type.Integer(),
        }),
        t.Null(),
      ],
      {
        description:
          "with `hangup`: the campaign's message to play first (the abandon message at once, the voicemail message after the beep), null when it has none",
      },
    ),
  ),
  agent_uri: t.Optional(
    t.Union([t.String(), t.Null()], {
      description: "on the reply to `answered`: the phone (`phone_uri`) of the agent to bridge to",
    }),
  ),
});

/** What an agent is shown of the lead of a call. */
export const LeadSummarySchema = t.Object({
  id: Uuid,
  phone: t.String(),
  timezone: t.String(),
  fields: t.Record(t.String(), t.String()),
  attempts: Type.Integer(),
});

/** A lead offered to an agent in preview, until it is dialled or skipped. */
export const PreviewSchema = t.Object(
  {
    campaign_id: Uuid,
    lead: LeadSummarySchema,
    offered_at: t.String({ format: "date-time" }),
    expires_at: t.String({
      format: "date-time",
      description: "when the offer is skipped by itself (the campaign's preview_timeout_seconds)",
    }),
  },
  { description: "nothing is dialled until the agent dials it" },
);
export type PreviewView = Static<typeof PreviewSchema>;

export const previewView = (
  campaignId: string,
  offer: { lead: Pick<HopperLead, "id" | "phone" | "timezone" | "fields" | "attempts"> },
  offeredAt: number,
  expiresAt: number,
): PreviewView => ({
  campaign_id: campaignId,
  lead: {
    id: offer.lead.id,
    phone: offer.lead.phone,
    timezone: offer.lead.timezone,
    fields: offer.lead.fields,
    attempts: offer.lead.attempts,
  },
  offered_at: new Date(offeredAt).toISOString(),
  expires_at: new Date(expiresAt).toISOString(),
});

/**
 * A dial job handed to an edge node: what the claim's reply documents and what a node checks
 * a reply against before it dials.
 */
export const DialJobSchema = t.Object({
  call_id: Uuid,
  campaign_id: Uuid,
  lead_id: Uuid,
  phone: t.String({ minLength: 1, maxLength: 32 }),
  caller_id: t.String({ maxLength: 32 }),
  timeout_seconds: Type.Integer({ minimum: 1, maximum: 600 }),
  agent_id: t.Union([Uuid, t.Null()], {
    description: "the agent the call is reserved for (preview, or held by the governor)",
  }),
  abandon_message_required: t.Optional(
    t.Boolean({
      description:
        "the call's regulatory profile requires a recorded message when it is answered and no agent is free (always sent; a node reads its absence, from an older service, as false)",
    }),
  ),
  messages: t.Optional(
    t.Object(
      {
        abandon: t.Union([Type.Integer(), t.Null()]),
        voicemail: t.Union([Type.Integer(), t.Null()]),
        opt_out: t.Union([Type.Integer(), t.Null()]),
      },
      {
        description:
          "the version of each of the campaign's messages (null: none), fetched once per version from `GET /api/v1/nodes/campaigns/{campaign_id}/messages/{kind}`",
      },
    ),
  ),
  opt_out_digit: t.Optional(
    t.String({ description: "the key that opts the lead out during the abandon message" }),
  ),
  amd: t.Optional(
    t.Union([t.Object({ budget_ms: Type.Integer() }), t.Null()], {
      description:
        "answering-machine detection on: send `answered` with `detecting: true`, then `amd` within the budget",
    }),
  ),
});

export const EligibilitySchema = t.Object({
  lead_id: Uuid,
  dialable: t.Boolean({ description: "the next claim may dial it now" }),
  reasons: t.Array(
    t.Object({
      code: t.String({
        description:
          "outside_window, legal_hours, state_rule, sunday, holiday, attempt_cap, cooldown, do_not_call, abandon_budget, max_attempts, not_due, campaign_not_running, lead_final, call_in_progress",
      }),
      message: t.String(),
      until: t.Union([t.String({ format: "date-time" }), t.Null()], {
        description: "when this reason stops holding by itself; null when it does not",
      }),
    }),
  ),
  next_eligible_at: t.Union([t.String({ format: "date-time" }), t.Null()], {
    description: "the first instant every rule allows a call; null when none will by itself",
  }),
  zone: t.Object({
    value: t.String(),
    source: t.String({ description: "column, number or default" }),
  }),
  profile: t.Object({ name: t.String(), version: t.String() }),
});
export type EligibilityView = Static<typeof EligibilitySchema>;

export type CallView = Static<typeof CallViewSchema>;

/** A call as the node protocol, the sockets and the agent's own view show it. */
export const callView = (call: CallRow): CallView => ({
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
  disposition_outcome: call.dispositionOutcome,
  disposition_automatic: call.dispositionAutomatic,
  claimed_at: call.claimedAt.toISOString(),
  answered_at: call.answeredAt?.toISOString() ?? null,
  ended_at: call.endedAt?.toISOString() ?? null,
  ...(call.media?.transfer ? { transfer: call.media.transfer } : {}),
});

export const AgentSchema = t.Object({
  user_id: t.String({ format: "uuid" }),
  email: t.Union([t.String(), t.Null()]),
  state: t.Union(AGENT_STATES.map((state) => t.Literal(state))),
  campaign_id: t.Union([t.String({ format: "uuid" }), t.Null()]),
  call_id: t.Union([t.String({ format: "uuid" }), t.Null()]),
  since: t.Union([t.String({ format: "date-time" }), t.Null()]),
  reason: t.Union([t.String(), t.Null()], {
    description:
      "why a paused agent is not ready (a workspace's not-ready reason, or after_call for the campaign's breath after a call); with pause_after_call, the reason asked for",
  }),
  pause_after_call: t.Boolean({
    description:
      "the agent asked to pause during its call or wrap-up: paused once the call is dispositioned",
  }),
  ready_at: t.Union([t.String({ format: "date-time" }), t.Null()], {
    description: "when the agent's breath after a call ends and it is ready again by itself",
  }),
});

export type AgentView = Static<typeof AgentSchema>;

/** An agent as the board holds it, as the API and the sockets show it. */
export const agentView = (agent: AgentPresence): AgentView => ({
  user_id: agent.userId,
  email: agent.email ?? null,
  state: agent.state,
  campaign_id: agent.campaignId,
  call_id: agent.callId,
  since: new Date(agent.since).toISOString(),
  reason: agent.reason ?? null,
  pause_after_call: agent.pauseAfterCall ?? false,
  ready_at: agent.readyAt ? new Date(agent.readyAt).toISOString() : null,
});

/** An agent the board does not hold: signed out. */
export const offlineAgentView = (userId: string, email: string): AgentView => ({
  user_id: userId,
  email,
  state: "offline",
  campaign_id: null,
  call_id: null,
  since: null,
  reason: null,
  pause_after_call: false,
  ready_at: null,
});

/**
 * What a disposition does to its lead: `done` (Completed), `retry` (Retry, or Exhausted when
 * its attempts are spent), `callback` (Callback at the time the agent gives), `do_not_call`
 * (DoNotCall, and the number on the workspace's list).
 */
export const DISPOSITION_OUTCOMES = ["done", "retry", "callback", "do_not_call"] as const;
export type DispositionOutcome = (typeof DISPOSITION_OUTCOMES)[number];

/** The name a disposition code is sent and recorded by. */
export const DISPOSITION_CODE_PATTERN = "^[a-z][a-z0-9_]{0,31}$";

/** One of a campaign's disposition codes: what the agent picks at the end of a call. */
export const DispositionCodeSchema = t.Object(
  {
    code: t.String({ pattern: DISPOSITION_CODE_PATTERN }),
    label: t.String({ minLength: 1, maxLength: 60 }),
    hotkey: t.Union([t.String({ pattern: "^[0-9a-z]$" }), t.Null()], {
      description: "a key the agent desktop takes for it in wrap-up (not r, p or a)",
    }),
    outcome: t.Union(
      DISPOSITION_OUTCOMES.map((outcome) => t.Literal(outcome)),
      { description: "what it does to the lead" },
    ),
  },
  { additionalProperties: false },
);
export type DispositionCode = Static<typeof DispositionCodeSchema>;

/**
 * The code whose dispositions judge a sampled machine verdict: a call put through to an agent
 * and dispositioned with it was a machine, any other code a person.
 */
export const MACHINE_CODE = "answering_machine";
