import { type Backoff, DEFAULT_BACKOFF, reconnectDelay } from "./backoff.ts";
import type { channels } from "./generated/asyncapi.ts";

export type Channel = keyof channels;
/** A message the server sends on a channel's socket. */
export type ServerMessage<C extends Channel> = channels[C]["server"];
/** A message a client may send on a channel's socket. */
export type ClientMessage<C extends Channel> = channels[C]["client"];
export type ServerMessageType<C extends Channel> = ServerMessage<C>["type"];
/** The server's message of one `type`, e.g. `MessageOf<"supervisor", "campaign.status">`. */
export type MessageOf<C extends Channel, Type extends ServerMessageType<C>> = Extract<
  ServerMessage<C>,
  { type: Type }
>;

/** Typed against the generated addresses: a socket the server moves fails to compile here. */
const ADDRESSES: { [C in Channel]: channels[C]["address"] } = {
  supervisor: "/ws/supervisor",
  agent: "/ws/agent",
};

export interface SocketOptions {
  /** Where the server is, e.g. `http://127.0.0.1:3000` (`https:` gives `wss:`). */
  baseUrl: string;
  /**
   * A user's token (sockets refuse API keys). A function is asked again before every
   * connection, so that it can sign in anew once a token expired.
   */
  token: string | (() => string | Promise<string>);
  /** Platform admins: the workspace whose messages the socket carries. */
  tenantId?: string;
  /** The waits between reconnections, or `false` never to reconnect. */
  reconnect?: Partial<Backoff> | false;
}

export interface SocketClose {
  code: number;
  reason: string;
  /** False once the socket is done: `close()` was called, or the server refused the token. */
  reconnecting: boolean;
}

/** The server's own close codes (docs/API.md, Realtime). */
const CLOSE_TOKEN_EXPIRED = 4001;
const CLOSE_ACCOUNT_DISABLED = 4003;
const CLOSE_ROLE_CHANGED = 4004;

type Handler<Argument> = (argument: Argument) => void;

/**
 * A handler's exception is rethrown on its own, so that it stops neither the socket nor the
 * handlers after it.
 */
function deliver<Argument>(handler: Handler<Argument>, argument: Argument): void {
  try {
    handler(argument);
  } catch (error) {
    queueMicrotask(() => {
      throw error;
    });
  }
}

/**
 * One of the server's sockets, kept open: it reconnects with back-off whenever it drops
 * (a server stopping closes with 1001 and expects that), until `close()`. Messages are
 * dispatched by `type` to the handlers given to `on`.
 *
 * A refused upgrade (a bad token is 401 before the upgrade) looks to a WebSocket like a network
 * failure, so it is retried as one; `close()` ends that. A token the server later refuses
 * (4001 expired, 4004 role changed) ends the socket unless `token` is a function that can give
 * a new one; a disabled account (4003) always ends it.
 */
export class RealtimeSocket<C extends Channel> {
  readonly #channel: C;
  readonly #options: SocketOptions;
  readonly #backoff: Backoff | undefined;
  readonly #handlers = new Map<string, Set<Handler<ServerMessage<C>>>>();
  readonly #openHandlers = new Set<Handler<void>>();
  readonly #closeHandlers = new Set<Handler<SocketClose>>();
  #socket: WebSocket | undefined;
  #retry: ReturnType<typeof setTimeout> | undefined;
  #attempt = 0;
  #closed = false;

  constructor(channel: C, options: SocketOptions) {
    this.#channel = channel;
    this.#options = options;
    this.#backoff =
      options.reconnect === false ? undefined : { ...DEFAULT_BACKOFF, ...options.reconnect };
    void this.#connect();
  }

  /** Calls `handler` with every message of `type`; returns the function that stops it. */
  on<Type extends ServerMessageType<C>>(
    type: Type,
    handler: Handler<MessageOf<C, Type>>,
  ): () => void {
    const handlers = this.#handlers.get(type) ?? new Set();
    this.#handlers.set(type, handlers);
    const stored = handler as Handler<ServerMessage<C>>;
    handlers.add(stored);
    return () => handlers.delete(stored);
  }

  /** The next message of `type`; rejects after `timeoutMs` or when the socket is done. */
  once<Type extends ServerMessageType<C>>(
    type: Type,
    timeoutMs = 30_000,
  ): Promise<MessageOf<C, Type>> {
    return new Promise((resolve, reject) => {
      const stop = () => {
        clearTimeout(timer);
        offMessage();
        offClose();
      };
      const timer = setTimeout(() => {
        stop();
        reject(new Error(`no ${type} message on /ws/${this.#channel} within ${timeoutMs} ms`));
      }, timeoutMs);
      const offMessage = this.on(type, (message) => {
        stop();
        resolve(message);
      });
      const offClose = this.onClose((close) => {
        if (close.reconnecting) return;
        stop();
        reject(new Error(`/ws/${this.#channel} closed (${close.code} ${close.reason})`));
      });
    });
  }

  /** Calls `handler` on every connection, the first and each reconnection. */
  onOpen(handler: () => void): () => void {
    this.#openHandlers.add(handler);
    return () => this.#openHandlers.delete(handler);
  }

  /** Calls `handler` whenever the connection drops or ends. */
  onClose(handler: Handler<SocketClose>): () => void {
    this.#closeHandlers.add(handler);
    return () => this.#closeHandlers.delete(handler);
  }

  /**
   * Sends `message` if the socket is open, and says whether it did. Nothing is queued: a
   * command kept through a reconnection could act on a state that has moved on.
   */
  send(message: ClientMessage<C>): boolean {
    if (this.#socket?.readyState !== WebSocket.OPEN) return false;
    this.#socket.send(JSON.stringify(message));
    return true;
  }

  /** Closes the socket for good. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#retry);
    if (this.#socket) this.#socket.close(1000, "client closing");
    else this.#emitClose({ code: 1000, reason: "client closing", reconnecting: false });
  }

  async #connect(): Promise<void> {
    let token: string;
    try {
      const { token: given } = this.#options;
      token = typeof given === "string" ? given : await given();
    } catch {
      // A sign-in that failed (the server away, say) is a connection that dropped.
      if (!this.#closed) this.#dropped(1006, "no token");
      return;
    }
    if (this.#closed) return;
    const socket = new WebSocket(this.#url(token));
    this.#socket = socket;
    socket.onopen = () => {
      this.#attempt = 0;
      for (const handler of [...this.#openHandlers]) deliver(handler, undefined);
    };
    socket.onmessage = (event) => this.#dispatch(event.data);
    socket.onclose = (event) => {
      this.#socket = undefined;
      this.#dropped(event.code, event.reason);
    };
  }

  #dropped(code: number, reason: string): void {
    const backoff = this.#mayReconnect(code) ? this.#backoff : undefined;
    this.#emitClose({ code, reason, reconnecting: backoff !== undefined });
    if (!backoff) return;
    const delay = reconnectDelay(this.#attempt++, backoff);
    this.#retry = setTimeout(() => void this.#connect(), delay);
  }

  #url(token: string): URL {
    const base = this.#options.baseUrl.replace(/\/+$/, "");
    const url = new URL(`${base}${ADDRESSES[this.#channel]}`);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    url.searchParams.set("token", token);
    if (this.#options.tenantId) url.searchParams.set("tenant_id", this.#options.tenantId);
    return url;
  }

  #mayReconnect(code: number): boolean {
    if (this.#closed || !this.#backoff || code === CLOSE_ACCOUNT_DISABLED) return false;
    if (code === CLOSE_TOKEN_EXPIRED || code === CLOSE_ROLE_CHANGED) {
      return typeof this.#options.token === "function";
    }
    return true;
  }

  #dispatch(data: unknown): void {
    // The server sends JSON objects as text frames, nothing else.
    if (typeof data !== "string") return;
    let message: ServerMessage<C>;
    try {
      message = JSON.parse(data);
    } catch {
      return;
    }
    for (const handler of [...(this.#handlers.get(message.type) ?? [])]) deliver(handler, message);
  }

  #emitClose(close: SocketClose): void {
    for (const handler of [...this.#closeHandlers]) deliver(handler, close);
  }
}

/** The supervisor's socket: a `snapshot` first, then campaigns, agents, calls and alerts. */
export class SupervisorSocket extends RealtimeSocket<"supervisor"> {
  #subscription: ClientMessage<"supervisor"> | undefined;

  constructor(options: SocketOptions) {
    super("supervisor", options);
    this.onOpen(() => {
      if (this.#subscription) this.send(this.#subscription);
    });
  }

  /**
   * Follows only these campaigns (all of the workspace's with none), now and after every
   * reconnection; the server answers `subscribed`.
   */
  subscribe(campaignIds: string[] = []): void {
    this.#subscription = { type: "subscribe", campaign_ids: campaignIds };
    this.send(this.#subscription);
  }
}

/** Opens `/ws/supervisor` (supervisors and up). */
export const connectSupervisor = (options: SocketOptions): SupervisorSocket =>
  new SupervisorSocket(options);

/** Opens `/ws/agent` (agents): `agent.state` first; send `ready`, `pause` and `disposition`. */
export const connectAgent = (options: SocketOptions): RealtimeSocket<"agent"> =>
  new RealtimeSocket("agent", options);
