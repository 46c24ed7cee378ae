import { type Static, t } from "elysia";
import type { CdrRow } from "../../../db/queries/calls.ts";
import { CALL_OUTCOMES } from "../../../db/schema/calls.ts";
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
});

export const CdrSchema = t.Object({
  id: t.String({ format: "uuid" }),
  call_id: t.String({ format: "uuid" }),
  campaign_id: t.String({ format: "uuid" }),
  lead_list_id: t.String({ format: "uuid" }),
  lead_id: t.String({ format: "uuid" }),
  edge_node_id: nullable(t.String({ format: "uuid" })),
  agent_id: nullable(t.String({ format: "uuid" })),
  phone: t.String(),
  caller_id: t.String(),
  attempt: t.Integer(),
  outcome: OutcomeSchema,
  hangup_cause: nullable(t.String()),
  disposition: nullable(t.String()),
  started_at: Timestamp,
  answered_at: nullable(Timestamp),
  ended_at: nullable(Timestamp),
  ring_seconds: t.Integer(),
  talk_seconds: t.Integer(),
  bridge_ms: nullable(
    t.Integer({
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
  created_at: Timestamp,
});
export type CdrView = Static<typeof CdrSchema>;

export const cdrView = (row: CdrRow): CdrView => ({
  id: row.id,
  call_id: row.callId,
  campaign_id: row.campaignId,
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
  started_at: row.startedAt.toISOString(),
  answered_at: row.answeredAt?.toISOString() ?? null,
  ended_at: row.endedAt?.toISOString() ?? null,
  ring_seconds: row.ringSeconds,
  talk_seconds: row.talkSeconds,
  bridge_ms: row.bridgeMs,
  ...placedUnder(row),
  created_at: row.createdAt.toISOString(),
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
export const CDR_CSV_COLUMNS = [
  ...Object.keys(CdrSchema.properties).filter((key) => key !== "profile" && key !== "zone"),
  "profile",
  "profile_version",
  "zone",
  "zone_source",
] as const;

export function cdrCsvRow(view: CdrView): string[] {
  const flat: Record<string, unknown> = {
    ...view,
    profile: view.profile?.name,
    profile_version: view.profile?.version,
    zone: view.zone?.value,
    zone_source: view.zone?.source,
  };
  return CDR_CSV_COLUMNS.map((column) => String(flat[column] ?? ""));
}
