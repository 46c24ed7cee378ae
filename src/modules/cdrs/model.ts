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
  created_at: row.createdAt.toISOString(),
});
