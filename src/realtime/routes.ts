import { Value } from "@sinclair/typebox/value";
import { Elysia, t } from "elysia";
import { listTenantCampaigns } from "../../db/queries/campaigns.ts";
import type { ServiceDeps } from "../deps.ts";
import { agentView, type DISPOSITIONS, dispositionCall, setAgentState } from "../dialer/service.ts";
import { ApiError, forbidden, unauthenticated } from "../errors.ts";
import type { UserPrincipal } from "../identity/principal.ts";
import { API_KEY_PREFIX, NODE_KEY_PREFIX } from "../identity/secrets.ts";
import { resolveTenant } from "../identity/tenant-scope.ts";
import { campaignView } from "../modules/campaigns/model.ts";
import { campaignRecordOf } from "../modules/campaigns/store.ts";
import { authenticate, authorize } from "../plugins/auth.ts";
import { AgentMessageSchema, SupervisorMessageSchema } from "./asyncapi.ts";
import { agentsTopic, agentTopic, campaignsTopic, campaignTopic } from "./hub.ts";
import { SnapshotBatcher } from "./snapshots.ts";

/** Limits every socket gets: Bun closes a larger frame with 1009 and a stalled reader at its limit. */
export const SOCKET_LIMITS = {
  maxPayloadLength: 64 * 1024,
  backpressureLimit: 1024 * 1024,
  closeOnBackpressureLimit: true,
  idleTimeout: 60,
  sendPings: true,
} as const;

const MAX_TIMER_MS = 2_147_000_000;

interface SocketSession {
  principal: UserPrincipal;
  tenantId: string;
}

const sessions = new WeakMap<Request, SocketSession>();

const SUPERVISOR = "realtime.supervisor";
const AGENT = "realtime.agent";
/** Sockets stay out of the OpenAPI document (AsyncAPI describes them) but name their permission. */
const socketDetail = (permission: string) => ({
  hide: true,
  ["x-permission" as string]: permission,
});

const Query = t.Object({ token: t.Optional(t.String()), tenant_id: t.Optional(t.String()) });

/**
 * Checks an upgrade before it happens: the `Origin` allowlist, a user token from `?token=`
 * (API keys and node keys are refused), and the route's role.
 */
async function admit(
  deps: ServiceDeps,
  request: Request,
  query: { token?: string | undefined; tenant_id?: string | undefined },
  permission: "realtime.supervisor" | "realtime.agent",
): Promise<SocketSession> {
  const allowed = deps.config.WS_ALLOWED_ORIGINS?.split(",")
    .map((origin) => origin.trim())
    .filter(Boolean);
  const origin = request.headers.get("origin");
  if (allowed?.length && origin && !allowed.includes(origin)) throw forbidden("origin not allowed");
  const token = query.token;
  if (!token) throw unauthenticated("missing token");
  if (token.startsWith(API_KEY_PREFIX) || token.startsWith(NODE_KEY_PREFIX)) {
    throw forbidden("sockets take a user token");
  }
  const principal = await authenticate(deps, token);
  if (principal.kind !== "user") throw forbidden("sockets take a user token");
  authorize(principal, permission);
  return { principal, tenantId: await resolveTenant(deps, principal, query.tenant_id) };
}

type Socket = {
  data: { request: Request };
  send(data: string): unknown;
  subscribe(topic: string): void;
  unsubscribe(topic: string): void;
  close(code?: number, reason?: string): void;
};

const sessionOf = (ws: Socket) => sessions.get(ws.data.request) as SocketSession;
const send = (ws: Socket, message: Record<string, unknown>) => ws.send(JSON.stringify(message));
const errorMessage = (message: string, code = "invalid_request") => ({
  type: "error",
  code,
  message,
});

/** Closes a socket when its token expires. */
function closeAtExpiry(ws: Socket, session: SocketSession, now: number) {
  const left = Math.min(MAX_TIMER_MS, Math.max(0, session.principal.tokenExpiresAt - now));
  const timer = setTimeout(() => ws.close(4001, "token expired"), left);
  timers.set(ws.data.request, timer);
}
const timers = new WeakMap<Request, ReturnType<typeof setTimeout>>();
const clearExpiry = (ws: Socket) => clearTimeout(timers.get(ws.data.request));

/**
 * Checks a client message; a bad one gets an error reply, never a silent close. Elysia has
 * already decoded the frame: JSON text starting with `{`, `[` or `"` is parsed, and text that
 * looks like a number, `true`, `false` or `null` becomes that value. So a JSON object frame
 * (starting with `{`, as the protocol asks) arrives as an object, and a string here is not
 * JSON or is a decoded JSON string: parsing it again would run `"{\"type\":\"pause\"}"`.
 */
function parse<T>(
  ws: Socket,
  schema: Parameters<typeof Value.Check>[0],
  message: unknown,
): T | undefined {
  if (typeof message !== "object" || message === null || Array.isArray(message)) {
    send(ws, errorMessage("messages are JSON objects"));
    return undefined;
  }
  if (!Value.Check(schema, message)) {
    const first = Value.Errors(schema, message).First();
    send(
      ws,
      errorMessage(`invalid message${first ? `: ${first.path || "/"} ${first.message}` : ""}`),
    );
    return undefined;
  }
  return message as T;
}

export function realtimeModule(deps: ServiceDeps) {
  const openSockets = new Map<string, number>();
  const graceTimers = new Map<string, ReturnType<typeof setTimeout>>();
  const snapshots = new SnapshotBatcher(async (tenantId) => {
    const { items } = await listTenantCampaigns(deps.db, tenantId, {}, { limit: 500, offset: 0 });
    return JSON.stringify({
      type: "snapshot",
      campaigns: items.map((row) => campaignView(campaignRecordOf(row))),
      agents: deps.dialer.agents.inTenant(tenantId).map(agentView),
    });
  });

  return new Elysia({ name: "realtime", detail: { tags: ["realtime"] } })
    .ws("/ws/supervisor", {
      query: Query,
      async beforeHandle({ request, query }) {
        sessions.set(request, await admit(deps, request, query, SUPERVISOR));
      },
      async open(ws) {
        const session = sessionOf(ws);
        ws.subscribe(campaignsTopic(session.tenantId));
        ws.subscribe(agentsTopic(session.tenantId));
        closeAtExpiry(ws, session, deps.clock.now());
        // A snapshot first, so that a reconnecting client never needs the REST API to catch up.
        ws.send(await snapshots.of(session.tenantId));
      },
      message(ws, raw) {
        const message = parse<{ type: "subscribe"; campaign_ids?: string[] }>(
          ws,
          SupervisorMessageSchema,
          raw,
        );
        if (!message) return;
        const session = sessionOf(ws);
        const narrowed = message.campaign_ids;
        // Narrowing swaps the tenant-wide campaign topic for one topic per campaign.
        if (narrowed?.length) {
          ws.unsubscribe(campaignsTopic(session.tenantId));
          for (const id of narrowed) ws.subscribe(campaignTopic(id));
        } else {
          ws.subscribe(campaignsTopic(session.tenantId));
        }
        send(ws, { type: "subscribed", campaign_ids: narrowed ?? null });
      },
      close(ws) {
        clearExpiry(ws);
      },
      detail: socketDetail(SUPERVISOR),
    })
    .ws("/ws/agent", {
      query: Query,
      async beforeHandle({ request, query }) {
        sessions.set(request, await admit(deps, request, query, AGENT));
      },
      open(ws) {
        const session = sessionOf(ws);
        const userId = session.principal.user.id;
        ws.subscribe(agentTopic(userId));
        openSockets.set(userId, (openSockets.get(userId) ?? 0) + 1);
        clearTimeout(graceTimers.get(userId));
        graceTimers.delete(userId);
        closeAtExpiry(ws, session, deps.clock.now());
        const agent = deps.dialer.agents.get(userId);
        send(ws, {
          type: "agent.state",
          agent: agent
            ? agentView(agent)
            : { user_id: userId, state: "offline", campaign_id: null, call_id: null, since: null },
        });
      },
      async message(ws, raw) {
        const message = parse<
          | { type: "ready"; campaign_id: string }
          | { type: "pause" }
          | {
              type: "disposition";
              call_id: string;
              disposition: (typeof DISPOSITIONS)[number];
              callback_at?: string;
            }
        >(ws, AgentMessageSchema, raw);
        if (!message) return;
        const { principal } = sessionOf(ws);
        try {
          if (message.type === "disposition") {
            const result = await dispositionCall(deps, principal, message.call_id, message);
            send(ws, { type: "ack", for: "disposition", call: result.call });
          } else {
            const input =
              message.type === "ready"
                ? { state: "ready" as const, campaign_id: message.campaign_id }
                : { state: "paused" as const };
            await setAgentState(deps, principal, input);
            send(ws, { type: "ack", for: message.type });
          }
        } catch (error) {
          if (error instanceof ApiError) send(ws, errorMessage(error.message, error.code));
          else {
            deps.logger.error("agent socket message failed", { error });
            send(ws, errorMessage("internal error", "internal_error"));
          }
        }
      },
      close(ws) {
        clearExpiry(ws);
        const { principal } = sessionOf(ws);
        const userId = principal.user.id;
        const left = (openSockets.get(userId) ?? 1) - 1;
        if (left > 0) {
          openSockets.set(userId, left);
          return;
        }
        openSockets.delete(userId);
        // The agent keeps its state for a grace period; then it is offline and a reserved call is released.
        graceTimers.set(
          userId,
          setTimeout(() => {
            graceTimers.delete(userId);
            if (openSockets.has(userId)) return;
            const agent = deps.dialer.agents.get(userId);
            if (!agent || agent.state === "on_call" || agent.state === "wrap_up") return;
            setAgentState(deps, principal, { state: "offline" }).catch((error) =>
              deps.logger.warn("could not sign out a disconnected agent", { error }),
            );
          }, deps.config.AGENT_DISCONNECT_GRACE_SECONDS * 1000),
        );
      },
      detail: socketDetail(AGENT),
    });
}
