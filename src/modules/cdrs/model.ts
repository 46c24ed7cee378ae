import { Type } from "@sinclair/typebox";
import { type Static, t } from "elysia";
import type { CdrRow, NamedCdrRow } from "../../../db/queries/calls.ts";
import { CALL_OUTCOMES } from "../../../db/schema/calls.ts";
import { CallTransferSchema } from "../../dialer/model.ts";
import { PageQuery } from "../../pagination.ts";
import { TenantQuery, Timestamp } from "../users/model.ts";

const OutcomeSchema = t.Union(CALL_OUTCOMES.map((outcome) => t.Literal(outcome)));
const nullable = <T extends Parameters<typeof t.Union>[0][number]>(schema: T) =>
  t.Union([schema, t.Null()]);

export const CdrQuery = t.Object({
  ...PageQuery,
  ...TenantQuery,
  from: t.Optional(t.String({ description: "RFC 3339; started_at at or after it" })),
  to: t.Optional(t.String({ description: "RFC 3339; started_at before it" })),
  campaign_id: t.Optional(t.String({ format: "uuid" })),
  lead_id: t.Optional(t.String({ format: "uuid" })),
  outcome: t.Optional(OutcomeSchema),
  agent_id: t.Optional(t.String({ format: "uuid" })),
});

/** What the node heard and played on the call, as a CDR and the compliance evidence show it. */
export const HeardOnCallSchema = {
  amd: nullable(
    t.Object(
      {
        result: t.String({ description: "human, machine, fax or unknown" }),
        confidence: t.Number(),
        ms: Type.Integer({ description: "milliseconds from the answer to the verdict" }),
        sampled: t.Boolean({
          description: "a machine verdict put through to an agent to estimate false positives",
        }),
      },
      { description: "answering-machine detection's verdict" },
    ),
  ),
  message: nullable(
    t.Object(
      {
        kind: t.String({ description: "abandon, voicemail or opt_out" }),
        played: t.Boolean(),
        completed: t.Boolean({ description: "played to its end" }),
        started_at: nullable(Timestamp),
        reason: nullable(t.String({ description: "why it was not played, or was cut off" })),
      },
      { description: "the recorded message the node played" },
    ),
  ),
  opted_out: t.Boolean({ description: "the lead pressed the opt-out key" }),
};

export const CdrSchema = t.Object({
  id: t.String({ format: "uuid" }),
  call_id: t.String({ format: "uuid" }),
  campaign_id: t.String({ format: "uuid" }),
  campaign_name: nullable(t.String({ description: "the campaign's name" })),
  agent_email: nullable(t.String({ description: "the e-mail of the agent who took the call" })),
  lead_list_id: t.String({ format: "uuid" }),
  lead_id: t.String({ format: "uuid" }),
  edge_node_id: nullable(t.String({ format: "uuid" })),
  agent_id: nullable(t.String({ format: "uuid" })),
  phone: t.String(),
  caller_id: t.String(),
  attempt: Type.Integer(),
  outcome: OutcomeSchema,
  hangup_cause: nullable(t.String()),
  disposition: nullable(t.String()),
  disposition_outcome: nullable(
    t.String({
      description:
        "what the disposition's code did to the lead: done, retry, callback, do_not_call",
    }),
  ),
  disposition_automatic: t.Boolean({
    description: "the service recorded the campaign's default disposition when the wrap-up ran out",
  }),
  notes: nullable(t.String({ description: "the agent's notes, saved with the disposition" })),
  started_at: Timestamp,
  answered_at: nullable(Timestamp),
  ended_at: nullable(Timestamp),
  ring_seconds: Type.Integer(),
  talk_seconds: Type.Integer(),
  bridge_ms: nullable(
    Type.Integer({
      description: "milliseconds from the answer to the agent's audio, as the node reported",
    }),
  ),
  profile: nullable(
    t.Object(
      { name: t.String(), version: t.String() },
      { description: "the regulatory profile and version the call was placed under" },
    ),
  ),
  zone: nullable(
    t.Object(
      { value: t.String(), source: t.String({ description: "column, number or default" }) },
      { description: "the lead's time zone when the call was placed, and where it came from" },
    ),
  ),
  governor_held: t.Boolean({
    description: "the abandon-rate governor held the campaign to calls with a reserved agent",
  }),
  ...HeardOnCallSchema,
  transfer: nullable(CallTransferSchema),
  created_at: Timestamp,
});
export type CdrView = Static<typeof CdrSchema>;

export const cdrView = (row: CdrRow & Partial<NamedCdrRow>): CdrView => ({
  id: row.id,
  call_id: row.callId,
  campaign_id: row.campaignId,
  campaign_name: row.campaignName ?? null,
  agent_email: row.agentEmail ?? null,
  lead_list_id: row.leadListId,
  lead_id: row.leadId,
  edge_node_id: row.edgeNodeId,
  agent_id: row.agentId,
  phone: row.phone,
  caller_id: row.callerId,
  attempt: row.attempt,
  outcome: row.outcome,
  hangup_cause: row.hangupCause,
  disposition: row.disposition,
  disposition_outcome: row.dispositionOutcome,
  disposition_automatic: row.dispositionAutomatic,
  notes: row.notes,
  started_at: row.startedAt.toISOString(),
  answered_at: row.answeredAt?.toISOString() ?? null,
  ended_at: row.endedAt?.toISOString() ?? null,
  ring_seconds: row.ringSeconds,
  talk_seconds: row.talkSeconds,
  bridge_ms: row.bridgeMs,
  ...placedUnder(row),
  ...heardOnCall(row),
  transfer: row.media?.transfer ?? null,
  created_at: row.createdAt.toISOString(),
});

/** What the node heard and played, as a CDR and a call record show it. */
export const heardOnCall = (row: Pick<CdrRow, "media">) => ({
  amd: row.media?.amd ?? null,
  message: row.media?.message ?? null,
  opted_out: row.media?.opted_out ?? false,
});

/** The rules a call was placed under, as a CDR and a call record show them. */
export const placedUnder = (
  row: Pick<CdrRow, "profile" | "profileVersion" | "zone" | "zoneSource" | "governorHeld">,
) => ({
  profile:
    row.profile && row.profileVersion ? { name: row.profile, version: row.profileVersion } : null,
  zone: row.zone && row.zoneSource ? { value: row.zone, source: row.zoneSource } : null,
  governor_held: row.governorHeld,
});

/** A CDR as one CSV row: nested values in columns of their own. */
/** The media facts' CSV columns, on CDRs and on the compliance evidence. */
export const MEDIA_CSV_COLUMNS = [
  "amd_result",
  "amd_confidence",
  "amd_ms",
  "amd_sampled",
  "message_kind",
  "message_played",
  "message_completed",
  "message_started_at",
  "message_reason",
] as const;

export const mediaCsvFields = (view: Pick<CdrView, "amd" | "message">) => ({
  amd_result: view.amd?.result,
  amd_confidence: view.amd?.confidence,
  amd_ms: view.amd?.ms,
  amd_sampled: view.amd?.sampled,
  message_kind: view.message?.kind,
  message_played: view.message?.played,
  message_completed: view.message?.completed,
  message_started_at: view.message?.started_at,
  message_reason: view.message?.reason,
});

const NESTED = new Set(["profile", "zone", "amd", "message", "transfer"]);

export const CDR_CSV_COLUMNS = [
  ...Object.keys(CdrSchema.properties).filter((key) => !NESTED.has(key)),
  "profile",
  "profile_version",
  "zone",
  "zone_source",
  ...MEDIA_CSV_COLUMNS,
  "transfer_to_agent_id",
  "transfer_to_phone",
  "transfer_status",
] as const;

export function cdrCsvRow(view: CdrView): string[] {
  const flat: Record<string, unknown> = {
    ...view,
    profile: view.profile?.name,
    profile_version: view.profile?.version,
    zone: view.zone?.value,
    zone_source: view.zone?.source,
    ...mediaCsvFields(view),
    transfer_to_agent_id: view.transfer?.to_agent_id,
    transfer_to_phone: view.transfer?.to_phone,
    transfer_status: view.transfer?.status,
  };
  return CDR_CSV_COLUMNS.map((column) => String(flat[column] ?? ""));
}
