import { Elysia, t } from "elysia";
import type { ServiceDeps } from "../../deps.ts";
import { AGENT_STATES } from "../../dialer/agents.ts";
import {
  controlCall,
  currentCallOf,
  currentScreenPop,
  dispositionCall,
} from "../../dialer/calls.ts";
import { currentPreview, dialByHand, dialPreview, skipPreview } from "../../dialer/dials.ts";
import { leadEligibility } from "../../dialer/eligibility.ts";
import {
  AgentSchema,
  agentView,
  CallViewSchema,
  DISPOSITION_CODE_PATTERN,
  EligibilitySchema,
  LeadSummarySchema,
  offlineAgentView,
  PreviewSchema,
} from "../../dialer/model.ts";
import { ok, okAll, okList } from "../../envelope.ts";
import { forbidden, unprocessable } from "../../errors.ts";
import { documented, documentedList } from "../../openapi-bodies.ts";
import { PageQuery, parsePage } from "../../pagination.ts";
import type { AuthGuard } from "../../plugins/auth.ts";
import { jsonBody } from "../../plugins/json-body.ts";
import { E164 } from "../campaigns/model.ts";
import { NotReadyReasonSchema } from "../tenants/model.ts";
import { IgnoredTenantQuery, TenantQuery } from "../users/model.ts";
import { AgentBoardSchema, agentBoard } from "./board.ts";
import { AttemptSchema, CallbackSchema, ownCallbacks, ownLeadHistory } from "./desk.ts";
import { AgentFiguresSchema, agentFigures, FiguresQuery } from "./figures.ts";
import { notReadyReasons, setAgentState, superviseAgent, transferTargets } from "./service.ts";

export const AgentStateBody = t.Object(
  {
    state: t.Union([t.Literal("ready"), t.Literal("paused"), t.Literal("offline")]),
    campaign_id: t.Optional(t.String({ description: "required for ready" })),
    reason: t.Optional(
      t.String({
        maxLength: 64,
        description:
          "paused only: one of the workspace's not-ready reasons (GET /agents/not-ready-reasons)",
      }),
    ),
  },
  { additionalProperties: false },
);

export const SuperviseBody = t.Object(
  {
    state: t.Union([t.Literal("paused"), t.Literal("offline")]),
    reason: t.Optional(
      t.String({ maxLength: 64, description: "with paused: one of the workspace's reasons" }),
    ),
  },
  { additionalProperties: false },
);

export const SkipBody = t.Object(
  {
    reason: t.String({
      minLength: 1,
      maxLength: 200,
      pattern: "\\S",
      description: "why the lead is passed on",
    }),
  },
  { additionalProperties: false },
);

export const ManualDialBody = t.Object(
  {
    phone: E164,
    timezone: t.Optional(
      t.String({
        maxLength: 64,
        description: "the IANA zone the number's calling hours are judged in; its own by default",
      }),
    ),
  },
  { additionalProperties: false },
);

export const TransferBody = t.Object(
  {
    agent_id: t.Optional(
      t.String({ format: "uuid", description: "another ready agent of the call's campaign" }),
    ),
    phone: t.Optional(E164),
  },
  { additionalProperties: false, description: "exactly one of agent_id and phone" },
);

export const DispositionBody = t.Object(
  {
    disposition: t.String({
      pattern: DISPOSITION_CODE_PATTERN,
      description:
        "one of the call's campaign's disposition_codes (completed, callback, do_not_call, no_contact, answering_machine, wrong_number by default)",
    }),
    callback_at: t.Optional(t.String({ description: "RFC 3339; required for callback" })),
    notes: t.Optional(
      t.String({ maxLength: 2000, description: "the agent's notes on the call, kept on its CDR" }),
    ),
  },
  { additionalProperties: false },
);

/** Agents set their own state; supervisors see everyone's. */
/** A supervisor's action on the workspace's agents and calls: a platform admin names one. */
const TenantOnly = t.Object(TenantQuery);
/** The caller's own desk: no parameter (a platform admin's console sends its workspace). */
const SelfQuery = t.Object(IgnoredTenantQuery);

export const agentsModule = (deps: ServiceDeps, auth: AuthGuard) =>
  new Elysia({ prefix: "/api/v1", detail: { tags: ["agents and calls"] } })
    .use(auth)
    .post(
      "/agents/me/state",
      async ({ principal, body }) => ok(await setAgentState(deps, principal, body)),
      {
        auth: "agents.self",
        query: SelfQuery,
        ...jsonBody(AgentStateBody),
        detail: {
          summary: "Become ready for a campaign, pause, or go offline",
          ...documented({ agent: AgentSchema }),
          description: `Agent states: ${AGENT_STATES.join(", ")}.`,
        },
      },
    )
    .get(
      "/agents/me",
      async ({ principal, tenantId }) => {
        if (principal.kind !== "user") throw forbidden("API keys are not agents");
        const agent = deps.dialer.agents.get(principal.user.id);
        const current = await currentCallOf(deps, agent);
        return ok({
          agent: agent
            ? agentView(agent)
            : offlineAgentView(principal.user.id, principal.user.email),
          call: current.call,
          lead: current.lead,
          screen_pop_url: await currentScreenPop(deps, tenantId, current),
          preview: await currentPreview(deps, agent),
        });
      },
      {
        auth: "agents.self",
        query: SelfQuery,
        detail: {
          summary: "The caller's agent state, with the call it is reserved for, on or wrapping up",
          description:
            "`call` and `lead` are shaped as in the agent socket's `call.connected` message, " +
            "while the agent is `reserved`, `on_call` or `wrap_up`; null otherwise. " +
            "`screen_pop_url`: the campaign's screen pop with the call's values, where it has one.",
          ...documented({
            agent: AgentSchema,
            call: t.Union([CallViewSchema, t.Null()]),
            lead: t.Union([LeadSummarySchema, t.Null()]),
            screen_pop_url: t.Union([t.String(), t.Null()]),
            preview: t.Union([PreviewSchema, t.Null()]),
          }),
        },
      },
    )
    .get(
      "/agents/me/preview",
      async ({ principal, tenantId }) => {
        if (principal.kind !== "user") throw forbidden("API keys are not agents");
        const preview = await currentPreview(deps, deps.dialer.agents.get(principal.user.id));
        if (!preview) return ok({ preview: null, eligibility: null });
        const eligibility = await leadEligibility(
          deps,
          tenantId,
          preview.campaign_id,
          preview.lead.id,
        );
        return ok({ preview, eligibility });
      },
      {
        auth: "agents.self",
        query: SelfQuery,
        detail: {
          summary: "The lead offered to the caller in preview, with whether it may be dialled now",
          description:
            "In a `preview` campaign a ready agent is offered a lead (the `preview.offered` message) and is `reserved` for it; nothing is dialled until `POST /agents/me/preview/dial`. Its earlier calls are at `GET /agents/me/history`. Both null with no offer.",
          ...documented({
            preview: t.Union([PreviewSchema, t.Null()]),
            eligibility: t.Union([EligibilitySchema, t.Null()]),
          }),
        },
      },
    )
    .post(
      "/agents/me/preview/dial",
      async ({ principal }) => ok(await dialPreview(deps, principal)),
      {
        auth: "agents.self",
        query: SelfQuery,
        detail: {
          summary: "Dial the lead offered in preview",
          description:
            "The call is placed by an online edge node (a `dial` command) and reserved for the caller. 409 when no lead is offered (a second dial of the same offer included), when no node is online, or when the lead can no longer be dialled; 422 (`phone`) outside the calling hours.",
          ...documented({ call: CallViewSchema }),
        },
      },
    )
    .post(
      "/agents/me/preview/skip",
      async ({ principal, body, meta }) =>
        ok(await skipPreview(deps, principal, body, meta.requestId)),
      {
        auth: "agents.self",
        query: SelfQuery,
        ...jsonBody(SkipBody),
        detail: {
          summary: "Pass on the lead offered in preview, saying why",
          description:
            "The lead goes back to the campaign's hopper and the caller is ready for the next; the skip is in the audit log (`lead.skipped`). An offer left for the campaign's `preview_timeout_seconds` is skipped by the service. 409 with no offer.",
          ...documented({ skipped: t.Boolean() }),
        },
      },
    )
    .get(
      "/agents/me/transfer-targets",
      async ({ principal, tenantId }) => {
        if (principal.kind !== "user") throw forbidden("API keys are not agents");
        return ok(await transferTargets(deps, tenantId, principal.user.id));
      },
      {
        auth: "agents.self",
        query: SelfQuery,
        detail: {
          summary:
            "Where the caller may transfer a call: the campaign's other ready agents, and the workspace's numbers",
          ...documented({
            agents: t.Array(t.Object({ user_id: t.String({ format: "uuid" }), email: t.String() })),
            numbers: t.Array(t.String()),
          }),
        },
      },
    )
    .post(
      "/agents/me/dial",
      async ({ principal, body }) => ok(await dialByHand(deps, principal, body)),
      {
        auth: "agents.self",
        query: SelfQuery,
        ...jsonBody(ManualDialBody),
        detail: {
          summary: "Dial a number by hand, in the caller's campaign",
          description:
            "Between calls (`ready` or `paused`; a paused agent is paused again after the call). The number is checked against the do-not-call list and the campaign's rules first: 422 (`phone`) with the reasons when it may not be called now, and nothing is stored. Else it becomes a lead of the campaign's list `Manual dials` and is placed like a preview call, reserved for the caller, with its CDR as any call's.",
          ...documented({ call: CallViewSchema }),
        },
      },
    )
    .get(
      "/agents/me/figures",
      async ({ principal, tenantId, query }) => {
        if (principal.kind !== "user") throw forbidden("API keys are not agents");
        const [figures] = await agentFigures(deps, tenantId, [principal.user.id], query.time_zone);
        return ok({ figures });
      },
      {
        auth: "agents.self",
        query: FiguresQuery,
        detail: {
          summary:
            "The caller's own figures for today: calls, talk, wrap-up and time in each state",
          ...documented({ figures: AgentFiguresSchema }),
        },
      },
    )
    .get(
      "/agents/me/history",
      async ({ principal }) => {
        const items = await ownLeadHistory(deps, principal);
        return okAll(items);
      },
      {
        auth: "agents.self",
        query: SelfQuery,
        detail: {
          summary:
            "The earlier calls of the caller's own lead (reserved, on the call or in wrap-up)",
          description:
            "Newest first, at most 20, with each call's outcome, disposition, agent and notes; empty while the agent has no lead.",
          ...documentedList(AttemptSchema),
        },
      },
    )
    .get(
      "/agents/me/callbacks",
      async ({ principal }) => {
        const items = await ownCallbacks(deps, principal);
        return okAll(items);
      },
      {
        auth: "agents.self",
        query: SelfQuery,
        detail: {
          summary: "The callbacks the caller set that are still to be made, soonest first",
          ...documentedList(CallbackSchema),
        },
      },
    )
    .get(
      "/agents/not-ready-reasons",
      async ({ tenantId }) => {
        const reasons = await notReadyReasons(deps, tenantId);
        return okAll(reasons);
      },
      {
        auth: "agents.self",
        query: SelfQuery,
        detail: {
          summary: "Why an agent may pause: the workspace's not-ready reasons, in order",
          description:
            "Admins set them with `PATCH /tenants/{id}` (`not_ready_reasons`). A paused agent whose campaign gives a breath after each call shows the reason `after_call`.",
          ...documentedList(NotReadyReasonSchema),
        },
      },
    )
    .get(
      "/agents/board",
      async ({ tenantId, query }) => ok(await agentBoard(deps, tenantId, query.time_zone)),
      {
        auth: "agents.read",
        query: t.Object({ ...FiguresQuery.properties, ...TenantQuery }),
        detail: {
          summary:
            "The agents signed in, with their calls and their figures for the day, and the counts by state and by not-ready reason (supervisors)",
          ...documented(AgentBoardSchema.properties),
        },
      },
    )
    .get(
      "/agents",
      ({ tenantId, query }) => {
        const page = parsePage(query);
        const agents = deps.dialer.agents.inTenant(tenantId).sort((a, b) => b.since - a.since);
        return okList(
          agents.slice(page.offset, page.offset + page.limit).map(agentView),
          agents.length,
          page,
        );
      },
      {
        auth: "agents.read",
        query: t.Object({ ...PageQuery, ...TenantQuery }),
        detail: {
          summary: "Agents signed in to the tenant and their states",
          ...documentedList(AgentSchema),
        },
      },
    )
    .post(
      "/agents/:user_id/state",
      async ({ principal, tenantId, params, body, meta }) =>
        ok(await superviseAgent(deps, principal, tenantId, params.user_id, body, meta.requestId)),
      {
        auth: "agents.supervise",
        params: t.Object({ user_id: t.String() }),
        query: TenantOnly,
        ...jsonBody(SuperviseBody),
        detail: {
          summary: "Pause or sign out an agent of the workspace (supervisors)",
          description:
            "Under the agent's own rules: a pause during a call or its wrap-up is a pause after the call (the disposition is still asked for); a sign-out of an agent with a call is 409, and so is either action on an agent not signed in. Audited (`agent.paused`, `agent.signed_out`); the agent's socket gets `agent.supervised`, naming who did it.",
          ...documented({ agent: AgentSchema }),
        },
      },
    )
    .post(
      "/calls/:call_id/disposition",
      async ({ principal, tenantId, params, body }) =>
        ok(await dispositionCall(deps, principal, tenantId, params.call_id, body)),
      {
        auth: "calls.disposition",
        params: t.Object({ call_id: t.String() }),
        query: TenantOnly,
        ...jsonBody(DispositionBody),
        detail: {
          summary: "Record the outcome of a connected call (the call's agent or a supervisor)",
          ...documented({ call: CallViewSchema }),
        },
      },
    )
    .post(
      "/calls/:call_id/hangup",
      async ({ principal, tenantId, params }) =>
        ok(await controlCall(deps, principal, tenantId, params.call_id, { kind: "hangup" })),
      {
        auth: "calls.control",
        params: t.Object({ call_id: t.String() }),
        query: TenantOnly,
        detail: {
          summary: "Hang up a call (the call's agent or a supervisor)",
          description:
            "The call's edge node hangs up both legs (a call still ringing is cancelled) and reports the end as for any call: the agent then wraps it up. 409 when the call is over.",
          ...documented({ call: CallViewSchema }),
        },
      },
    )
    .post(
      "/calls/:call_id/transfer",
      async ({ principal, tenantId, params, body }) => {
        const agentId = body.agent_id ?? null;
        const phone = body.phone ?? null;
        if ((agentId === null) === (phone === null))
          throw unprocessable("agent_id", "name either agent_id or phone, not both");
        return ok(
          await controlCall(deps, principal, tenantId, params.call_id, {
            kind: "transfer",
            agentId,
            phone,
          }),
        );
      },
      {
        auth: "calls.control",
        params: t.Object({ call_id: t.String() }),
        query: TenantOnly,
        ...jsonBody(TransferBody),
        detail: {
          summary: "Send a connected call's lead to another agent or an allowed number (blind)",
          description:
            "To another `ready` agent of the campaign who has a `phone_uri`, or to one of the workspace's `transfer_numbers`. The node calls the new party, moves the lead's media to it and hangs up the agent's leg; `data.call.transfer` is `pending` until then, and the call's `call.event` pushes (`transferred`, `transfer_failed`) tell how it went. Sent to an agent, the call becomes theirs (they disposition it) and the first agent is free; sent to a number, the first agent wraps the call up. 422 names the field of an unknown agent or a number not allowed; 409 when the call is not connected or a transfer is under way.",
          ...documented({ call: CallViewSchema }),
        },
      },
    );
