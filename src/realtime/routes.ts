import { Value } from "@sinclair/typebox/value";
import type { Server, ServerWebSocket } from "bun";
import { Elysia, type Static, type TSchema, t } from "elysia";
import type { UserAccess } from "../../actors/tenant.machine.ts";
import { listTenantCampaigns, tenantCampaignIds } from "../../db/queries/campaigns.ts";
import type { ServiceDeps } from "../deps.ts";
import { currentCallOf, dispositionCall } from "../dialer/calls.ts";
import { currentPreview } from "../dialer/dials.ts";
import { agentView, offlineAgentView } from "../dialer/model.ts";
import { expireGraces, signOutAgent } from "../dialer/presence.ts";
import {
  ApiError,
  badRequest,
  type FieldError,
  forbidden,
  INVALID_BODY,
  unauthenticated,
} from "../errors.ts";
import type { UserPrincipal } from "../identity/principal.ts";
import { API_KEY_PREFIX, NODE_KEY_PREFIX } from "../identity/secrets.ts";
import { isUuid, resolveTenant } from "../identity/tenant-scope.ts";
import { UNSTORABLE_TEXT, unstorableTextPaths } from "../lib/storable-text.ts";
import { setAgentState } from "../modules/agents/service.ts";
import { campaignView } from "../modules/campaigns/model.ts";
import { campaignRecordOf } from "../modules/campaigns/store.ts";
import { authenticate, authorize } from "../plugins/auth.ts";
import { databaseError } from "../plugins/errors.ts";
import { requestIdOf } from "../plugins/request-id.ts";
import { sentenceOf } from "../plugins/schema-sentences.ts";
import { AgentMessageSchema, MAX_FOLLOWED_CAMPAIGNS, SupervisorMessageSchema } from "./asyncapi.ts";
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

/** Close codes beyond the standard ones; docs/API.md and the AsyncAPI document list them. */
export const CLOSE = {
  tokenExpired: { code: 4001, reason: "token expired" },
  accountDisabled: { code: 4003, reason: "account disabled" },
  roleChanged: { code: 4004, reason: "role changed" },
} as const;
type CloseReason = (typeof CLOSE)[keyof typeof CLOSE];
/** The standard close of a server going away: reconnect. */
const GOING_AWAY = 1001;

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
export interface SocketHandlers {
  open(ws: Socket): void | Promise<void>;
  message(ws: Socket, raw: string | Buffer): void | Promise<void>;
  close(ws: Socket): void;
  pong?(ws: Socket): void;
}

/** A socket's own state. */
interface SocketState {
  session: SocketSession;
  expiry?: ReturnType<typeof setTimeout>;
  /** When the client was last heard from (a message or a pong), and the check of it. */
  heardAt?: number;
  liveness?: ReturnType<typeof setInterval>;
  /** The campaigns a supervisor narrowed to, each checked to be of the socket's tenant. */
  followed?: string[];
  /** The socket's messages run one after another, in the order they came. */
  inbox?: Promise<void>;
}

type SocketData = SocketHandlers & SocketState;
export type Socket = ServerWebSocket<SocketData>;

/**
 * The data of a new socket: its state over its route's handlers, reached through the prototype.
 * Bun's server calls Elysia's dispatcher, which calls `ws.data.open`, `ws.data.message` and
 * `ws.data.close`. Elysia's own `.ws()` builds a dozen closures and keeps the whole upgrade
 * context for every socket, and wraps the socket again on every event; a socket here costs
 * one small object and its expiry timer.
 */
const socketData = (handlers: SocketHandlers, session: SocketSession): SocketData =>
  Object.assign(Object.create(handlers) as SocketHandlers, { session });

/** The session an upgrade was admitted with, kept on its request from admission to upgrade. */
const ADMITTED = Symbol("admitted");
type Admitted = Request & { [ADMITTED]?: SocketSession };

/**
 * The upgrade route of one kind of socket. It is admitted in the transform phase, before the
 * query is validated, so that credentials are judged first (401, 403), as on every route; a
 * refusal is an ordinary error in the envelope. The handler then upgrades with its data.
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
  return {
    async transform(context: { request: Request; query: Record<string, string | undefined> }) {
      (context.request as Admitted)[ADMITTED] = await admit(
        deps,
        allowedOrigins,
        context.request,
        context.query,
        permission,
      );
    },
    handler(context: { request: Request; server: Server<SocketData> | null }) {
      const session = (context.request as Admitted)[ADMITTED] as SocketSession;
      const upgraded = context.server?.upgrade(context.request, {
        headers: { "x-request-id": requestIdOf(context.request) },
        data: socketData(handlers, session),
      });
      if (!upgraded) throw badRequest("expected a WebSocket upgrade");
      return undefined;
    },
  };
}

const send = (ws: Socket, message: Record<string, unknown>) => ws.send(JSON.stringify(message));
const INVALID_MESSAGE = "invalid message";
const errorMessage = (message: string, code = "invalid_request") => ({
  type: "error",
  code,
  message,
});

/** A socket silent `silenceMs` is pinged; silent twice as long, it is dropped as dead. */
const LIVENESS = { silenceMs: 30_000, checkMs: 10_000 };

/**
 * The route's handlers, with the client's liveness watched. Bun's own idle timeout counts what
 * the server sends too, so a socket the server keeps busy was never pinged, and a client that
 * had died (or stopped answering) stayed open until its token expired.
 */
export function watchedForLife(handlers: SocketHandlers, limits = LIVENESS): SocketHandlers {
  const heard = (ws: Socket) => {
    ws.data.heardAt = performance.now();
  };
  return {
    open(ws) {
      heard(ws);
      ws.data.liveness = setInterval(() => {
        const silent = performance.now() - (ws.data.heardAt ?? 0);
        if (silent >= 2 * limits.silenceMs) ws.terminate();
        else if (silent >= limits.silenceMs) ws.ping();
      }, limits.checkMs);
      return handlers.open(ws);
    },
    message(ws, raw) {
      heard(ws);
      return handlers.message(ws, raw);
    },
    pong: heard,
    close(ws) {
      clearInterval(ws.data.liveness);
      handlers.close(ws);
    },
  };
}

/** Closes a socket when its token expires. */
function closeAtExpiry(ws: Socket, now: number) {
  const left = Math.min(MAX_TIMER_MS, Math.max(0, ws.data.session.principal.tokenExpiresAt - now));
  ws.data.expiry = setTimeout(
    () => ws.close(CLOSE.tokenExpired.code, CLOSE.tokenExpired.reason),
    left,
  );
}

/** Why a socket's user may no longer hold it: disabled (or gone), or given another role. */
function revocationOf(
  session: SocketSession,
  user: UserAccess | undefined,
): CloseReason | undefined {
  if (!user || user.status === "disabled") return CLOSE.accountDisabled;
  if (user.role !== session.principal.role) return CLOSE.roleChanged;
  return undefined;
}

/** A frame's JSON value, or undefined when it is not JSON text (a binary frame is not). */
function decodeFrame(raw: string | Buffer): unknown {
  if (typeof raw !== "string") return undefined;
  try {
    return JSON.parse(raw);
  } catch {
    return undefined;
  }
}

/** A refusal from the service, as the socket says it: field by field, as an HTTP body's would. */
const refusalMessage = (error: ApiError) => ({
  ...errorMessage(error.message === INVALID_BODY ? INVALID_MESSAGE : error.message, error.code),
  ...(error.fieldErrors?.length ? { field_errors: error.fieldErrors } : {}),
});

/**
 * What is wrong with a client message, as the API's `field_errors` say it: a type that is
 * none of the messages', or each field of the message its type names that is not as it must be.
 */
function messageErrors(schema: TSchema, message: object): FieldError[] {
  const kinds: TSchema[] = schema.anyOf ?? [schema];
  const typeOf = (kind: TSchema) => kind.properties?.type?.const as string | undefined;
  const sent = (message as { type?: unknown }).type;
  const kind = kinds.find((candidate) => typeOf(candidate) === sent);
  if (!kind) return [{ field: "type", message: `must be one of ${kinds.map(typeOf).join(", ")}` }];
  const byField = new Map<string, string>();
  for (const issue of Value.Errors(kind, message)) {
    const field = issue.path.split("/").filter(Boolean).join(".") || "message";
    if (!byField.has(field)) byField.set(field, sentenceOf(issue));
  }
  return [...byField].map(([field, text]) => ({ field, message: text }));
}

/** Checks a client message; a bad one gets an error reply, never a silent close. */
function parse<T>(ws: Socket, schema: TSchema, raw: string | Buffer): T | undefined {
  const message = decodeFrame(raw);
  if (typeof message !== "object" || message === null || Array.isArray(message)) {
    send(ws, errorMessage("messages are JSON objects, sent as text"));
    return undefined;
  }
  if (!Value.Check(schema, message)) {
    send(ws, { ...errorMessage(INVALID_MESSAGE), field_errors: messageErrors(schema, message) });
    return undefined;
  }
  const unstorable = unstorableTextPaths(message);
  if (unstorable.length > 0) {
    send(ws, {
      ...errorMessage(INVALID_MESSAGE),
      field_errors: unstorable.map((field) => ({ field, message: UNSTORABLE_TEXT })),
    });
    return undefined;
  }
  return message as T;
}

export function realtimeModule(deps: ServiceDeps) {
  const openSockets = new Map<string, number>();
  const graceTimers = new Map<string, ReturnType<typeof setTimeout>>();
  /** Every open socket by its user, so that a change to the user reaches them at once. */
  const socketsOfUser = new Map<string, Set<Socket>>();
  const supervisorSockets = new Set<Socket>();
  // Campaigns are read from the database, never from actors: on a process that does not run a
  // campaign, an actor loaded once may be behind the process that does.
  const snapshots = new SnapshotBatcher(async (tenantId) => {
    const { items } = await listTenantCampaigns(deps.db, {
      tenantId,
      page: { limit: 500, offset: 0 },
    });
    return JSON.stringify({
      type: "snapshot",
      campaigns: items.map((row) => campaignView(campaignRecordOf(row))),
      agents: deps.dialer.agents.inTenant(tenantId).map(agentView),
    });
  });

  const track = (ws: Socket) => {
    const userId = ws.data.session.principal.user.id;
    const sockets = socketsOfUser.get(userId) ?? new Set<Socket>();
    sockets.add(ws);
    socketsOfUser.set(userId, sockets);
  };
  const untrack = (ws: Socket) => {
    const userId = ws.data.session.principal.user.id;
    const sockets = socketsOfUser.get(userId);
    sockets?.delete(ws);
    if (sockets?.size === 0) socketsOfUser.delete(userId);
  };

  /**
   * The socket's principal as the tenant's actor holds it now, or undefined once the socket is
   * closed because its user was disabled or given another role since the upgrade.
   */
  async function livePrincipal(ws: Socket): Promise<UserPrincipal | undefined> {
    const { principal } = ws.data.session;
    const user = await deps.tenants.user(principal.tenantId, principal.user.id);
    const revoked = revocationOf(ws.data.session, user);
    if (revoked || !user) {
      ws.close(revoked?.code ?? CLOSE.accountDisabled.code, revoked?.reason);
      return undefined;
    }
    return { ...principal, user };
  }

  /**
   * Runs a socket's message after the ones before it, refused when the user lost the socket
   * meanwhile; a failure is answered on the socket, never left to end the process.
   */
  /** A failure as the API answers it: the database's as over HTTP, anything else unforeseen. */
  function socketRefusal(error: unknown): ApiError {
    if (error instanceof ApiError) return error;
    const failure = deps.availability.report(error);
    if (failure) {
      deps.logger.warn("socket message met the database away", { failure, error });
      return databaseError(failure, "POST");
    }
    deps.logger.error("socket message failed", { error });
    return new ApiError(500, "internal_error", "internal error");
  }

  function receive(ws: Socket, handle: (principal: UserPrincipal) => Promise<void>) {
    ws.data.inbox = (ws.data.inbox ?? Promise.resolve()).then(async () => {
      try {
        const principal = await livePrincipal(ws);
        if (principal) await handle(principal);
      } catch (error) {
        send(ws, refusalMessage(socketRefusal(error)));
      }
    });
  }

  /** Follows the named campaigns of the socket's tenant alone, in place of those followed before. */
  async function follow(ws: Socket, requested: string[] | undefined) {
    const { tenantId } = ws.data.session;
    for (const id of ws.data.followed ?? []) ws.unsubscribe(campaignTopic(tenantId, id));
    ws.data.followed = undefined;
    if (!requested?.length) {
      ws.subscribe(campaignsTopic(tenantId));
      send(ws, { type: "subscribed", campaign_ids: null });
      return;
    }
    ws.unsubscribe(campaignsTopic(tenantId));
    const wanted = [...new Set(requested.map((id) => id.toLowerCase()))].slice(
      0,
      MAX_FOLLOWED_CAMPAIGNS,
    );
    const known = new Set(
      await tenantCampaignIds(deps.db, { tenantId, ids: wanted.filter(isUuid) }),
    );
    const followed = wanted.filter((id) => known.has(id));
    const unknown = wanted.filter((id) => !known.has(id));
    for (const id of followed) ws.subscribe(campaignTopic(tenantId, id));
    ws.data.followed = followed;
    if (unknown.length) {
      send(ws, { ...errorMessage("campaign not found", "not_found"), campaign_ids: unknown });
    }
    send(ws, { type: "subscribed", campaign_ids: followed });
  }

  /**
   * Closes the open sockets of a user who was disabled or given another role. A disabled agent
   * is signed out at once rather than after the grace period: no call may be reserved for them.
   */
  function userAccessChanged(userId: string, access: UserAccess) {
    for (const ws of socketsOfUser.get(userId) ?? []) {
      const revoked = revocationOf(ws.data.session, access);
      if (revoked) ws.close(revoked.code, revoked.reason);
    }
    if (access.status === "disabled") signOut(userId);
  }

  function signOut(userId: string) {
    signOutAgent(deps, userId).catch((error) =>
      deps.logger.warn("could not sign out an agent", { error }),
    );
  }

  deps.tenants.onUserAccessChanged(({ userId, after }) => userAccessChanged(userId, after));
  // The process stops: an agent keeps its state through the grace period, reconnecting elsewhere.
  deps.realtime.onClose(() => {
    for (const sockets of socketsOfUser.values())
      for (const ws of sockets) ws.close(GOING_AWAY, "server stopping");
  });
  deps.availability.onRecovered(() => void resendSnapshots());
  deps.realtime.onPushesMissed((supervisorsOf) => void resendSnapshots(supervisorsOf));

  /**
   * After a database outage, supervisors get a fresh snapshot: changes they missed while
   * pushes could not be computed are in it. Agents get their state again. With a tenant, its
   * supervisors alone.
   */
  async function resendSnapshots(supervisorsOf?: string) {
    for (const ws of supervisorSockets) {
      if (supervisorsOf !== undefined && ws.data.session.tenantId !== supervisorsOf) continue;
      try {
        ws.send(await snapshots.of(ws.data.session.tenantId));
      } catch (error) {
        deps.logger.warn("supervisor snapshot after an outage failed", { error });
      }
    }
    if (supervisorsOf !== undefined) return;
    for (const sockets of socketsOfUser.values()) {
      for (const ws of sockets) {
        if (supervisorSockets.has(ws)) continue;
        const agent = deps.dialer.agents.get(ws.data.session.principal.user.id);
        if (agent) send(ws, { type: "agent.state", agent: agentView(agent) });
      }
    }
  }

  const supervisor: SocketHandlers = {
    async open(ws) {
      const { tenantId } = ws.data.session;
      track(ws);
      supervisorSockets.add(ws);
      deps.realtime.supervisorSocket(tenantId, 1);
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
      receive(ws, () => follow(ws, message.campaign_ids));
    },
    close(ws) {
      clearTimeout(ws.data.expiry);
      untrack(ws);
      if (supervisorSockets.delete(ws))
        deps.realtime.supervisorSocket(ws.data.session.tenantId, -1);
    },
  };

  /**
   * The agent's state on connect, with its own call and lead as `GET /agents/me` gives them.
   * A call in wrap-up is read from the database: should the agent change meanwhile, that
   * change has been pushed already, so the board is read again rather than sending a state
   * older than the push.
   */
  async function greetAgent(ws: Socket) {
    const { principal } = ws.data.session;
    const userId = principal.user.id;
    const offline = offlineAgentView(userId, principal.user.email);
    let current: Awaited<ReturnType<typeof currentCallOf>> = { call: null, lead: null };
    for (let attempt = 0; attempt < 3; attempt++) {
      const agent = deps.dialer.agents.get(userId);
      try {
        current = await currentCallOf(deps, agent);
      } catch (error) {
        deps.logger.warn("the agent's call could not be read for its socket", { error });
        current = { call: null, lead: null };
      }
      const preview = await currentPreview(deps, agent);
      const now = deps.dialer.agents.get(userId);
      if (now !== agent) continue;
      send(ws, { type: "agent.state", agent: now ? agentView(now) : offline, ...current, preview });
      return;
    }
    const agent = deps.dialer.agents.get(userId);
    send(ws, { type: "agent.state", agent: agent ? agentView(agent) : offline });
  }

  const agentSocket: SocketHandlers = {
    open(ws) {
      const { principal } = ws.data.session;
      const userId = principal.user.id;
      track(ws);
      ws.subscribe(agentTopic(principal.tenantId, userId));
      const open = openSockets.get(userId) ?? 0;
      openSockets.set(userId, open + 1);
      clearTimeout(graceTimers.get(userId));
      graceTimers.delete(userId);
      if (open === 0) deps.dialer.agents.hold(userId);
      closeAtExpiry(ws, deps.clock.now());
      void greetAgent(ws);
    },
    message(ws, raw) {
      const message = parse<Static<typeof AgentMessageSchema>>(ws, AgentMessageSchema, raw);
      if (!message) return;
      receive(ws, async (principal) => {
        if (message.type === "disposition") {
          const result = await dispositionCall(
            deps,
            principal,
            principal.tenantId,
            message.call_id,
            message,
          );
          send(ws, { type: "ack", for: "disposition", call: result.call });
          return;
        }
        await setAgentState(
          deps,
          principal,
          message.type === "ready"
            ? { state: "ready", campaign_id: message.campaign_id }
            : { state: "paused", campaign_id: message.campaign_id, reason: message.reason },
        );
        send(ws, { type: "ack", for: message.type });
      });
    },
    close(ws) {
      clearTimeout(ws.data.expiry);
      untrack(ws);
      const userId = ws.data.session.principal.user.id;
      const left = (openSockets.get(userId) ?? 1) - 1;
      if (left > 0) {
        openSockets.set(userId, left);
        return;
      }
      openSockets.delete(userId);
      // The agent keeps its state for a grace period; then it is offline and a reserved call is
      // released. The deadline is also in the agent's row: should this process end first, the
      // sweep of whichever process runs it signs the agent out.
      const deadline = deps.dialer.agents.release(userId, deps.clock.now());
      graceTimers.set(
        userId,
        setTimeout(() => {
          graceTimers.delete(userId);
          if (openSockets.has(userId)) return;
          expireGraces(deps, { userId, deadline }).catch((error) =>
            deps.logger.warn("could not sign out an agent", { error }),
          );
        }, deps.config.AGENT_DISCONNECT_GRACE_SECONDS * 1000),
      );
    },
  };

  const supervisorRoute = upgradeRoute(deps, SUPERVISOR, watchedForLife(supervisor));
  const agentRoute = upgradeRoute(deps, AGENT, watchedForLife(agentSocket));
  return new Elysia({ name: "realtime", detail: { tags: ["realtime"] } })
    .get("/ws/supervisor", supervisorRoute.handler, {
      query: Query,
      transform: supervisorRoute.transform,
      detail: socketDetail(SUPERVISOR),
    })
    .get("/ws/agent", agentRoute.handler, {
      query: Query,
      transform: agentRoute.transform,
      detail: socketDetail(AGENT),
    });
}
