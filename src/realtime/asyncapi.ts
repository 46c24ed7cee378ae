import { Elysia, t } from "elysia";
import {
  AgentSchema,
  CallViewSchema,
  DISPOSITION_CODE_PATTERN,
  LeadSummarySchema,
  PreviewSchema,
} from "../dialer/model.ts";
import { AlertSchema } from "../modules/alerts/service.ts";
import {
  CampaignSchema,
  CampaignStatsSchema,
  CampaignStatusSchema,
} from "../modules/campaigns/model.ts";

export { AgentSchema };

const CallSchema = CallViewSchema;
const LeadSchema = LeadSummarySchema;

/** Every message the sockets send or accept, as TypeBox schemas (the sockets validate with them). */
export const SERVER_MESSAGES = {
  snapshot: t.Object({
    type: t.Literal("snapshot"),
    campaigns: t.Array(CampaignSchema),
    agents: t.Array(AgentSchema),
  }),
  "campaign.status": t.Object({
    type: t.Literal("campaign.status"),
    campaign_id: t.String({ format: "uuid" }),
    status: CampaignStatusSchema,
    from: CampaignStatusSchema,
    by: t.Optional(
      t.Object(
        {
          actor_type: t.String({ description: "user, api_key or system" }),
          actor_id: t.Union([t.String(), t.Null()]),
          email: t.Union([t.String(), t.Null()], { description: "the user's, when a user did it" }),
        },
        {
          description:
            "on the agent socket: who changed the status of the agent's campaign (agents hear of their own campaign only)",
        },
      ),
    ),
  }),
  alert: t.Object(
    { type: t.Literal("alert"), alert: AlertSchema },
    { description: "an alert raised, or closed (`cleared_at` set): see GET /api/v1/alerts" },
  ),
  "campaign.updated": t.Object(
    { type: t.Literal("campaign.updated"), campaign: CampaignSchema },
    { description: "a campaign's settings changed (its pacing, say): the campaign as it now is" },
  ),
  "campaign.stats": t.Object({
    type: t.Literal("campaign.stats"),
    campaign_id: t.String({ format: "uuid" }),
    stats: CampaignStatsSchema,
  }),
  "agent.state": t.Object({
    type: t.Literal("agent.state"),
    agent: AgentSchema,
    call: t.Optional(
      t.Union([CallSchema, t.Null()], {
        description:
          "on the agent socket's first message only: the call the agent is reserved for, on or wrapping up, as on GET /api/v1/agents/me",
      }),
    ),
    lead: t.Optional(
      t.Union([LeadSchema, t.Null()], { description: "with `call`: the call's lead" }),
    ),
    preview: t.Optional(
      t.Union([PreviewSchema, t.Null()], {
        description: "on the agent socket's first message only: the lead offered in preview",
      }),
    ),
  }),
  "agent.supervised": t.Object(
    {
      type: t.Literal("agent.supervised"),
      state: t.Union([t.Literal("paused"), t.Literal("offline")]),
      reason: t.Union([t.String(), t.Null()]),
      by: t.Object({ user_id: t.String({ format: "uuid" }), email: t.String() }),
      at: t.String({ format: "date-time" }),
    },
    {
      description:
        "a supervisor paused or signed out the agent (`agent.state` follows with the state itself)",
    },
  ),
  "preview.offered": t.Object(
    { type: t.Literal("preview.offered"), preview: PreviewSchema },
    {
      description:
        "a lead offered in preview: nothing is dialled until the agent dials it (`POST /api/v1/agents/me/preview/dial`) or skips it",
    },
  ),
  "call.transfer": t.Object(
    { type: t.Literal("call.transfer"), call: CallSchema, lead: t.Optional(LeadSchema) },
    {
      description:
        "a transfer of the agent's call was asked for, failed (`call.transfer.status`), or sent the lead to a number; a transfer to another agent reaches that agent as `call.connected`",
    },
  ),
  "call.event": t.Object({
    type: t.Literal("call.event"),
    event: t.String({
      description:
        "claimed, ringing, answered, machine, ended, message_played, opt_out, hangup_requested, transfer_requested, transferred or transfer_failed",
    }),
    call: CallSchema,
  }),
  "call.offered": t.Object({ type: t.Literal("call.offered"), call: CallSchema, lead: LeadSchema }),
  "call.connected": t.Object({
    type: t.Literal("call.connected"),
    call: CallSchema,
    lead: LeadSchema,
    screen_pop_url: t.Optional(
      t.String({
        description:
          "the campaign's screen pop with this call's values in it, for the desktop to open",
      }),
    ),
  }),
  "call.ended": t.Object({ type: t.Literal("call.ended"), call: CallSchema }),
  subscribed: t.Object({
    type: t.Literal("subscribed"),
    campaign_ids: t.Union([t.Array(t.String()), t.Null()]),
  }),
  ack: t.Object({ type: t.Literal("ack"), for: t.String() }, { additionalProperties: true }),
  error: t.Object({
    type: t.Literal("error"),
    code: t.String({
      description:
        "the API's error code: invalid_request, forbidden, not_found, conflict, invalid_transition, unavailable, outcome_unknown, …",
    }),
    message: t.String(),
    campaign_ids: t.Optional(t.Array(t.String(), { description: "the ids a subscribe left out" })),
    field_errors: t.Optional(
      t.Array(t.Object({ field: t.String(), message: t.String() }), {
        description:
          "of an invalid message: each field that is not as it must be, as the API says it",
      }),
    ),
  }),
};

/** The most campaigns one supervisor socket follows by name; a `subscribe` replaces the last. */
export const MAX_FOLLOWED_CAMPAIGNS = 500;

export const SupervisorMessageSchema = t.Object(
  {
    type: t.Literal("subscribe"),
    campaign_ids: t.Optional(
      // Not only UUIDs: one that is no campaign of the tenant is left out, named in `not_found`.
      t.Array(t.String({ maxLength: 64 }), { maxItems: MAX_FOLLOWED_CAMPAIGNS }),
    ),
  },
  { additionalProperties: false },
);

export const AgentMessageSchema = t.Union([
  t.Object({ type: t.Literal("ready"), campaign_id: t.String() }, { additionalProperties: false }),
  t.Object(
    {
      type: t.Literal("pause"),
      campaign_id: t.Optional(t.String()),
      reason: t.Optional(t.String({ maxLength: 64 })),
    },
    {
      additionalProperties: false,
      description:
        "during a call or its wrap-up: pause once the call is dispositioned; `reason`: one of the workspace's not-ready reasons",
    },
  ),
  t.Object(
    {
      type: t.Literal("disposition"),
      call_id: t.String(),
      disposition: t.String({
        pattern: DISPOSITION_CODE_PATTERN,
        description: "one of the call's campaign's disposition_codes",
      }),
      callback_at: t.Optional(t.String()),
      notes: t.Optional(t.String({ maxLength: 2000 })),
    },
    { additionalProperties: false },
  ),
]);

const message = (name: string, payload: unknown) => ({ name, payload });

/** The AsyncAPI 3.0 document of both sockets, built from the schemas above. */
export function asyncApiDocument() {
  const serverMessages = Object.fromEntries(
    Object.entries(SERVER_MESSAGES).map(([name, schema]) => [
      name.replace(".", "_"),
      message(name, schema),
    ]),
  );
  const ref = (name: string) => ({ $ref: `#/components/messages/${name.replace(".", "_")}` });
  const supervisorOut = [
    "snapshot",
    "campaign.status",
    "campaign.updated",
    "alert",
    "campaign.stats",
    "agent.state",
    "call.event",
    "subscribed",
    "error",
  ];
  const agentOut = [
    "agent.state",
    "campaign.status",
    "agent.supervised",
    "preview.offered",
    "call.offered",
    "call.connected",
    "call.transfer",
    "call.ended",
    "ack",
    "error",
  ];
  return {
    asyncapi: "3.0.0",
    info: {
      title: "Dialer engine realtime API",
      version: "1.0.0",
      description:
        "Connect with `?token=<user token>`. Frames over 64 KiB close the socket (1009); a client that " +
        "stops reading is closed at its backpressure limit; the socket closes when the token expires (4001), " +
        "when its user is disabled (4003) and when its user's role changes (4004).",
    },
    channels: {
      supervisor: {
        address: "/ws/supervisor",
        messages: {
          ...Object.fromEntries(supervisorOut.map((name) => [name.replace(".", "_"), ref(name)])),
          subscribe: { $ref: "#/components/messages/subscribe" },
        },
      },
      agent: {
        address: "/ws/agent",
        messages: {
          ...Object.fromEntries(agentOut.map((name) => [name.replace(".", "_"), ref(name)])),
          agent_command: { $ref: "#/components/messages/agent_command" },
        },
      },
    },
    operations: {
      supervisorReceives: {
        action: "send",
        channel: { $ref: "#/channels/supervisor" },
        messages: supervisorOut.map((name) => ({
          $ref: `#/channels/supervisor/messages/${name.replace(".", "_")}`,
        })),
      },
      supervisorSubscribes: {
        action: "receive",
        channel: { $ref: "#/channels/supervisor" },
        messages: [{ $ref: "#/channels/supervisor/messages/subscribe" }],
      },
      agentReceives: {
        action: "send",
        channel: { $ref: "#/channels/agent" },
        messages: agentOut.map((name) => ({
          $ref: `#/channels/agent/messages/${name.replace(".", "_")}`,
        })),
      },
      agentCommands: {
        action: "receive",
        channel: { $ref: "#/channels/agent" },
        messages: [{ $ref: "#/channels/agent/messages/agent_command" }],
      },
    },
    components: {
      messages: {
        ...serverMessages,
        subscribe: message("subscribe", SupervisorMessageSchema),
        agent_command: message("agent command", AgentMessageSchema),
      },
    },
  };
}

export const asyncApiModule = new Elysia({ name: "asyncapi" }).get(
  "/api/v1/asyncapi.json",
  () => asyncApiDocument(),
  {
    detail: { hide: true, ["x-permission" as string]: "public" },
  },
);
