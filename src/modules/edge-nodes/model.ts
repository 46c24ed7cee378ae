import { type Static, t } from "elysia";
import type { NodeRow } from "../../../db/queries/access.ts";
import { DialJobSchema } from "../../dialer/model.ts";
import { Timestamp } from "../users/model.ts";

/** A node that has not sent a heartbeat for this long is offline. */
export const NODE_OFFLINE_AFTER_MS = 30_000;

export const CreateEdgeNodeBody = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: 200, pattern: "\\S" }),
    max_concurrent_calls: t.Integer({ minimum: 1, maximum: 10_000 }),
  },
  { additionalProperties: false },
);
export type CreateEdgeNodeInput = Static<typeof CreateEdgeNodeBody>;

/** Identity fields a node may send out of habit; they are ignored, the key decides. */
const IgnoredIdentity = {
  tenant_id: t.Optional(t.Unknown({ description: "ignored: the node key decides the tenant" })),
  node_id: t.Optional(t.Unknown({ description: "ignored: the node key decides the node" })),
};

export const HeartbeatBody = t.Object(
  {
    active_calls: t.Integer({ minimum: 0, maximum: 100_000 }),
    active_call_ids: t.Optional(
      t.Array(t.String({ format: "uuid" }), {
        maxItems: 10_000,
        description:
          "The calls the node holds. A live call of this node claimed more than 10 s ago that is " +
          "not listed fails at once with hangup_cause NODE_LOST.",
      }),
    ),
    ...IgnoredIdentity,
  },
  { additionalProperties: false },
);

export const ClaimBody = t.Object(
  {
    max: t.Integer({ minimum: 1, maximum: 100 }),
    wait_ms: t.Optional(t.Integer({ minimum: 0, maximum: 30_000 })),
    ...IgnoredIdentity,
  },
  { additionalProperties: false },
);

export const CallEventBody = t.Object(
  {
    type: t.Union([
      t.Literal("ringing"),
      t.Literal("answered"),
      t.Literal("machine"),
      t.Literal("ended"),
    ]),
    at: t.String({ description: "RFC 3339 time of the event at the node" }),
    hangup_cause: t.Optional(
      t.String({ maxLength: 64, description: "Q.850 cause name, e.g. NO_ANSWER" }),
    ),
    node_bridge_ms: t.Optional(
      t.Integer({
        minimum: 0,
        maximum: 86_400_000,
        description:
          "On `ended` of an answered call: milliseconds from the answer until the agent's audio was bridged, as the node measured it (over 2,000 counts the call as abandoned in the compliance ledger).",
      }),
    ),
    ...IgnoredIdentity,
  },
  { additionalProperties: false },
);

export const EdgeNodeSchema = t.Object({
  id: t.String({ format: "uuid" }),
  tenant_id: t.String({ format: "uuid" }),
  name: t.String(),
  prefix: t.String(),
  max_concurrent_calls: t.Integer(),
  active_calls: t.Integer(),
  online: t.Boolean({
    description: `a heartbeat within the last ${NODE_OFFLINE_AFTER_MS / 1000} s`,
  }),
  last_heartbeat_at: t.Union([Timestamp, t.Null()]),
  created_at: Timestamp,
  updated_at: Timestamp,
  revoked_at: t.Union([Timestamp, t.Null()]),
});
export type EdgeNodeView = Static<typeof EdgeNodeSchema>;

export const edgeNodeView = (row: NodeRow, now: number): EdgeNodeView => ({
  id: row.id,
  tenant_id: row.tenantId,
  name: row.name,
  prefix: row.prefix,
  max_concurrent_calls: row.maxConcurrentCalls,
  active_calls: row.activeCalls,
  online:
    row.revokedAt === null &&
    row.lastHeartbeatAt !== null &&
    now - row.lastHeartbeatAt.getTime() < NODE_OFFLINE_AFTER_MS,
  last_heartbeat_at: row.lastHeartbeatAt?.toISOString() ?? null,
  created_at: row.createdAt.toISOString(),
  updated_at: row.updatedAt.toISOString(),
  revoked_at: row.revokedAt?.toISOString() ?? null,
});

export { DialJobSchema };
export type DialJobView = Static<typeof DialJobSchema>;

/** `data` of the claim's reply. */
export const ClaimReplySchema = t.Object({ jobs: t.Array(DialJobSchema, { maxItems: 100 }) });

/** `data.call` of the reply to a call event, as far as a node reads it. */
export const CallReplySchema = t.Object({
  id: t.String({ format: "uuid" }),
  status: t.String(),
  agent_id: t.Union([t.String({ format: "uuid" }), t.Null()]),
  action: t.Optional(t.Union([t.Literal("bridge"), t.Literal("hangup")])),
  agent_uri: t.Optional(t.Union([t.String({ maxLength: 512 }), t.Null()])),
});
export type CallReplyView = Static<typeof CallReplySchema>;
