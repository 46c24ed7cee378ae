import { Type } from "@sinclair/typebox";
import { type Static, t } from "elysia";
import type { NodeRow } from "../../../db/queries/access.ts";
import { MESSAGE_KINDS } from "../../../db/schema/campaigns.ts";
import { AMD_RESULTS, CALL_EVENT_TYPES, DialJobSchema } from "../../dialer/model.ts";
import { Timestamp } from "../users/model.ts";

/** A node that has not sent a heartbeat for this long is offline. */
export const NODE_OFFLINE_AFTER_MS = 30_000;

export const CreateEdgeNodeBody = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: 200, pattern: "\\S" }),
    max_concurrent_calls: Type.Integer({ minimum: 1, maximum: 10_000 }),
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
    active_calls: Type.Integer({ minimum: 0, maximum: 100_000 }),
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
    max: Type.Integer({ minimum: 1, maximum: 100 }),
    wait_ms: t.Optional(Type.Integer({ minimum: 0, maximum: 30_000 })),
    ...IgnoredIdentity,
  },
  { additionalProperties: false },
);

export const CallEventBody = t.Object(
  {
    type: t.Union(CALL_EVENT_TYPES.map((type) => t.Literal(type))),
    at: t.String({
      description:
        "RFC 3339 time of the event at the node (for `message_played`, when the message started)",
    }),
    detecting: t.Optional(
      t.Boolean({
        description:
          "On `answered`: the node listens for a machine (the job's `amd`); the reply says `detect` and the agent is chosen on the `amd` verdict",
      }),
    ),
    result: t.Optional(
      t.Union(
        AMD_RESULTS.map((result) => t.Literal(result)),
        {
          description: "On `amd` (required): what answered",
        },
      ),
    ),
    confidence: t.Optional(t.Number({ minimum: 0, maximum: 1, description: "On `amd`" })),
    ms: t.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 600_000,
        description: "On `amd`: milliseconds of audio from the answer to the verdict",
      }),
    ),
    kind: t.Optional(
      t.Union(
        MESSAGE_KINDS.map((kind) => t.Literal(kind)),
        {
          description: "On `message_played` (required): which message",
        },
      ),
    ),
    played: t.Optional(
      t.Boolean({ description: "On `message_played`: false when it could not be played" }),
    ),
    completed: t.Optional(
      t.Boolean({ description: "On `message_played`: whether it played to its end" }),
    ),
    reason: t.Optional(
      t.String({
        maxLength: 200,
        description:
          "On `message_played`: why it was not played, or was cut off; on `transfer_failed`: why the new leg did not come up",
      }),
    ),
    digit: t.Optional(
      t.String({
        pattern: "^[0-9*#A-D]$",
        description:
          "On `opt_out`: the key pressed; a key other than the job's `opt_out_digit` is refused (422)",
      }),
    ),
    hangup_cause: t.Optional(
      t.String({ maxLength: 64, description: "Q.850 cause name, e.g. NO_ANSWER" }),
    ),
    node_bridge_ms: t.Optional(
      Type.Integer({
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
  max_concurrent_calls: Type.Integer(),
  active_calls: Type.Integer(),
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
  action: t.Optional(t.Union([t.Literal("bridge"), t.Literal("hangup"), t.Literal("detect")])),
  agent_uri: t.Optional(t.Union([t.String({ maxLength: 512 }), t.Null()])),
  message: t.Optional(
    t.Union([
      t.Object({
        kind: t.Union([t.Literal("abandon"), t.Literal("voicemail")]),
        version: Type.Integer({ minimum: 1 }),
      }),
      t.Null(),
    ]),
  ),
});
export type CallReplyView = Static<typeof CallReplySchema>;

const CommandUuid = t.String({ format: "uuid" });

/** A command for the node: its id (acknowledged once carried out), its call, what to do. */
export const NodeCommandSchema = t.Union([
  t.Object(
    { id: CommandUuid, type: t.Literal("hangup"), call_id: CommandUuid },
    { description: "hang up the call: both legs, as at the end of a conversation" },
  ),
  t.Object(
    {
      id: CommandUuid,
      type: t.Literal("transfer"),
      call_id: CommandUuid,
      to: t.Object({
        agent_id: t.Union([CommandUuid, t.Null()]),
        agent_uri: t.Union([t.String(), t.Null()], {
          description: "the receiving agent's phone (`phone_uri`)",
        }),
        phone: t.Union([t.String(), t.Null()], {
          description: "an E.164 number the workspace allows, reached through the trunk",
        }),
      }),
    },
    {
      description:
        "send the connected lead to `to` (blind: the new leg is called, the lead's media moved to it, then the agent's leg hung up); report `transferred` or `transfer_failed`",
    },
  ),
  t.Object(
    { id: CommandUuid, type: t.Literal("dial"), call_id: CommandUuid, job: DialJobSchema },
    {
      description:
        "place this call now, as a claimed job: an agent's preview `dial` or a number dialled by hand",
    },
  ),
]);
export type NodeCommandView = Static<typeof NodeCommandSchema>;

export const CommandPollBody = t.Object(
  {
    ack: t.Optional(
      t.Array(CommandUuid, {
        maxItems: 100,
        description: "the commands carried out (or found moot) since the last poll",
      }),
    ),
    wait_ms: t.Optional(Type.Integer({ minimum: 0, maximum: 30_000 })),
    ...IgnoredIdentity,
  },
  { additionalProperties: false },
);
