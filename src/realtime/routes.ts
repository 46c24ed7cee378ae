import { Value } from "@sinclair/typebox/value";
import type { Server, ServerWebSocket } from "bun";
import { Elysia, t } from "elysia";
import { listTenantCampaigns } from "../../db/queries/campaigns.ts";
import type { ServiceDeps } from "../deps.ts";
import { agentView, type DISPOSITIONS, dispositionCall, setAgentState } from "../dialer/service.ts";
import { ApiError, badRequest, forbidden, unauthenticated } from "../errors.ts";
import type { UserPrincipal } from "../identity/principal.ts";
import { API_KEY_PREFIX, NODE_KEY_PREFIX } from "../identity/secrets.ts";
import { resolveTenant } from "../identity/tenant-scope.ts";
import { UNSTORABLE_TEXT, unstorableTextPaths } from "../lib/storable-text.ts";
import { campaignView } from "../modules/campaigns/model.ts";
import { campaignRecordOf } from "../modules/campaigns/store.ts";
import { authenticate, authorize } from "../plugins/auth.ts";
import { requestIdOf } from "../plugins/request-id.ts";
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
  allowedOrigins: readonly string[],
  request: Request,
  query: { token?: string | undefined; tenant_id?: string | undefined },
  permission: "realtime.supervisor" | "realtime.agent",
): Promise<SocketSession> {
  const origin = request.headers.get("origin");
  if (allowedOrigins.length && origin && !allowedOrigins.includes(origin))
    throw forbidden("origin not allowed");
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

/** What a route does with its sockets; one object per route, shared by all its sockets. */
interface SocketHandlers {
  open(ws: Socket): void | Promise<void>;
  message(ws: Socket, raw: string | Buffer): void | Promise<void>;
  close(ws: Socket): void;
}

/** A socket's own state. */
interface SocketState {
  session: SocketSession;
  expiry?: ReturnType<typeof setTimeout>;
}

type SocketData = SocketHandlers & SocketState;
type Socket = ServerWebSocket<SocketData>;

/**
 * The data of a new socket: its state over its route's handlers, reached through the prototype.
 * Bun's server calls Elysia's dispatcher, which calls `ws.data.open`, `ws.data.message` and
 * `ws.data.close`. Elysia's own `.ws()` builds a dozen closures and keeps the whole upgrade
 * context for every socket, and wraps the socket again on every event; a socket here costs
 * one small object and its expiry timer.
 */
const socketData = (handlers: SocketHandlers, session: SocketSession): SocketData =>
  Object.assign(Object.create(handlers) as SocketHandlers, { session });

/**
 * The upgrade route of one kind of socket: admitted first (a refusal is an ordinary error in
 * the envelope), then upgraded with its data.
 */
function upgradeRoute(
  deps: ServiceDeps,
  permission: typeof SUPERVISOR | typeof AGENT,
  handlers: SocketHandlers,
) {
  const allowedOrigins = (deps.config.WS_ALLOWED_ORIGINS ?? "")
    .split(",")
    .map((origin) => origin.trim())
    .filter(Boolean);
  return async (context: {
    request: Request;
    query: { token?: string; tenant_id?: string };
    server: Server<SocketData> | null;
  }) => {
    const session = await admit(deps, allowedOrigins, context.request, context.query, permission);
    const upgraded = context.server?.upgrade(context.request, {
      headers: { "x-request-id": requestIdOf(context.request) },
      data: socketData(handlers, session),
    });
    if (!upgraded) throw badRequest("expected a WebSocket upgrade");
    return undefined;
  };
}

const send = (ws: Socket, message: Record<string, unknown>) => ws.send(JSON.stringify(message));
const errorMessage = (message: string, code = "invalid_request") => ({
  type: "error",
  code,
  message,
});

/** Closes a socket when its token expires. */
function closeAtExpiry(ws: Socket, now: number) {
  const left = Math.min(MAX_TIMER_MS, Math.max(0, ws.data.session.principal.tokenExpiresAt - now));
  ws.data.expiry = setTimeout(() => ws.close(4001, "token expired"), left);
}

/** A frame's JSON value, or undefined when it is not JSON text. */
function decodeFrame(raw: string | Buffer): unknown {
  try {
    return JSON.parse(typeof raw === "string" ? raw : raw.toString("utf8"));
  } catch {
    return undefined;
  }
}

/** Checks a client message; a bad one gets an error reply, never a silent close. */
function parse<T>(
  ws: Socket,
  schema: Parameters<typeof Value.Check>[0],
  raw: string | Buffer,
): T | undefined {
  const message = decodeFrame(raw);
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
  const unstorable = unstorableTextPaths(message);
  if (unstorable.length > 0) {
    send(ws, errorMessage(`invalid message: ${unstorable.join(", ")} ${UNSTORABLE_TEXT}`));
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

  const supervisor: SocketHandlers = {
    async open(ws) {
      const { tenantId } = ws.data.session;
      ws.subscribe(campaignsTopic(tenantId));
      ws.subscribe(agentsTopic(tenantId));
      closeAtExpiry(ws, deps.clock.now());
      // A snapshot first, so that a reconnecting client never needs the REST API to catch up.
      try {
        ws.send(await snapshots.of(tenantId));
      } catch (error) {
        // Nothing awaits this handler: a failure is handled here or it would end the process.
        deps.logger.error("supervisor snapshot failed", { error });
        ws.close(1011, "snapshot unavailable");
      }
    },
    message(ws, raw) {
      const message = parse<{ type: "subscribe"; campaign_ids?: string[] }>(
        ws,
        SupervisorMessageSchema,
        raw,
      );
      if (!message) return;
      const { tenantId } = ws.data.session;
      const narrowed = message.campaign_ids;
      // Narrowing swaps the tenant-wide campaign topic for one topic per campaign.
      if (narrowed?.length) {
        ws.unsubscribe(campaignsTopic(tenantId));
        for (const id of narrowed) ws.subscribe(campaignTopic(id));
      } else {
        ws.subscribe(campaignsTopic(tenantId));
      }
      send(ws, { type: "subscribed", campaign_ids: narrowed ?? null });
    },
    close(ws) {
      clearTimeout(ws.data.expiry);
    },
  };

  const agentSocket: SocketHandlers = {
    open(ws) {
      const userId = ws.data.session.principal.user.id;
      ws.subscribe(agentTopic(userId));
      openSockets.set(userId, (openSockets.get(userId) ?? 0) + 1);
      clearTimeout(graceTimers.get(userId));
      graceTimers.delete(userId);
      closeAtExpiry(ws, deps.clock.now());
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
      const { principal } = ws.data.session;
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
      clearTimeout(ws.data.expiry);
      const { principal } = ws.data.session;
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
  };

  return new Elysia({ name: "realtime", detail: { tags: ["realtime"] } })
    .get("/ws/supervisor", upgradeRoute(deps, SUPERVISOR, supervisor), {
      query: Query,
      detail: socketDetail(SUPERVISOR),
    })
    .get("/ws/agent", upgradeRoute(deps, AGENT, agentSocket), {
      query: Query,
      detail: socketDetail(AGENT),
    });
}
