import { isIP } from "node:net";
import { AnswerReader } from "./answer-reader.ts";

/**
 * Deliveries' HTTP/1.1 connections, kept open between posts to the same origin. `fetch` hands
 * every request to a thread of its own and back, and costs markedly more CPU per post
 * (bench/webhook-post.ts); at a thousand events a second, on the cores the dialer needs, that
 * is worth this much code. Only what a delivery needs: one POST at a time on a connection, no
 * redirects, no proxy, no compression, certificates checked as `fetch` checks them.
 */

/** What a receiver answered. */
export interface Answer {
  status: number;
  /** The first bytes of the body. */
  body: string;
}

export interface PostLimits {
  /** For the whole post, connecting included. */
  timeoutMs: number;
  /** At most this much of the answer's body is read... */
  maxBytes: number;
  /** ...and this much of it kept. */
  keepBytes: number;
}

/** Certificate authorities to trust instead of the system's: tests' own. */
export interface TrustedAuthorities {
  ca?: string;
}

/** An idle connection is closed after this long: below the 5 s that servers commonly keep one. */
const IDLE_SECONDS = 4;
/** Idle connections kept per origin, and origins with idle connections. */
const MAX_IDLE_PER_ORIGIN = 128;
const MAX_ORIGINS = 256;

interface Exchange {
  reader: AnswerReader;
  /** Request bytes the socket did not take yet. */
  unsent: Buffer | undefined;
  /** Whether any answer came: a connection closed before that may be stale, not refused. */
  answered: boolean;
  resolve(answer: Answer): void;
  reject(error: Error): void;
}

interface Link {
  origin: string;
  tls: boolean;
  /** While connecting. */
  opening?: { resolve(): void; reject(error: Error): void };
  exchange?: Exchange;
}

type Connection = Bun.Socket<Link>;

/**
 * A connection closed before any answer came: on a kept one, the peer most likely closed it
 * while idle, and the post is tried once on a new one.
 */
class StaleConnection extends Error {}

const idle = new Map<string, Connection[]>();

function park(socket: Connection) {
  const origin = socket.data.origin;
  let sockets = idle.get(origin);
  if (!sockets) {
    if (idle.size >= MAX_ORIGINS) closeIdle(idle.keys().next().value as string);
    sockets = [];
    idle.set(origin, sockets);
  }
  if (sockets.length >= MAX_IDLE_PER_ORIGIN) {
    socket.end();
    return;
  }
  socket.timeout(IDLE_SECONDS);
  // An idle connection does not keep the process running.
  socket.unref();
  sockets.push(socket);
}

function unpark(socket: Connection) {
  const sockets = idle.get(socket.data.origin);
  const at = sockets?.indexOf(socket) ?? -1;
  if (!sockets || at < 0) return;
  sockets.splice(at, 1);
  if (sockets.length === 0) idle.delete(socket.data.origin);
}

function closeIdle(origin: string) {
  for (const socket of idle.get(origin) ?? []) socket.end();
  idle.delete(origin);
}

function takeIdle(origin: string): Connection | undefined {
  const sockets = idle.get(origin);
  const socket = sockets?.pop();
  if (sockets?.length === 0) idle.delete(origin);
  socket?.ref();
  return socket;
}

/** The connection's peer is gone, or failed: whatever waited on it fails, or ends. */
function lost(socket: Connection, error?: Error) {
  unpark(socket);
  const { opening, exchange } = socket.data;
  socket.data.opening = undefined;
  socket.data.exchange = undefined;
  opening?.reject(error ?? new Error("the connection closed while opening"));
  if (!exchange) return;
  if (exchange.reader.closed()) {
    exchange.resolve({ status: exchange.reader.status, body: exchange.reader.body() });
  } else if (!exchange.answered) {
    exchange.reject(
      new StaleConnection(error?.message ?? "the connection closed before any answer"),
    );
  } else {
    exchange.reject(error ?? new Error("the connection closed before the answer ended"));
  }
}

const handlers: Bun.SocketHandler<Link> = {
  open(socket) {
    if (!socket.data.tls) socket.data.opening?.resolve();
  },
  handshake(socket, success, authorizationError) {
    const opening = socket.data.opening;
    socket.data.opening = undefined;
    if (success && !authorizationError) {
      opening?.resolve();
      return;
    }
    opening?.reject(authorizationError ?? new Error("the certificate was refused"));
    socket.end();
  },
  data(socket, bytes) {
    const exchange = socket.data.exchange;
    if (!exchange) {
      // Bytes nobody asked for: the connection cannot be trusted with another post.
      unpark(socket);
      socket.end();
      return;
    }
    exchange.answered = true;
    let whole: boolean;
    try {
      whole = exchange.reader.push(bytes);
    } catch (error) {
      socket.data.exchange = undefined;
      socket.end();
      exchange.reject(error as Error);
      return;
    }
    if (!whole) return;
    socket.data.exchange = undefined;
    if (exchange.reader.reusable) park(socket);
    else socket.end();
    exchange.resolve({ status: exchange.reader.status, body: exchange.reader.body() });
  },
  drain(socket) {
    const exchange = socket.data.exchange;
    if (!exchange?.unsent) return;
    try {
      exchange.unsent = sendSome(socket, exchange.unsent);
    } catch (error) {
      lost(socket, error as Error);
    }
  },
  end(socket) {
    lost(socket);
    socket.end();
  },
  close(socket, error) {
    lost(socket, error);
  },
  error(socket, error) {
    lost(socket, error);
  },
  connectError(socket, error) {
    lost(socket, error);
  },
  timeout(socket) {
    lost(socket, new Error("timed out"));
    socket.end();
  },
};

/** The socket's own time-out while it is busy, in case the post's timer is never heard. */
const backstopSeconds = (timeoutMs: number) => Math.ceil(timeoutMs / 1000) + 1;

/** Writes what the socket takes now; returns the rest, for its next drain. */
function sendSome(socket: Connection, data: string | Buffer): Buffer | undefined {
  const written = socket.write(data);
  if (written < 0) throw new Error("the connection closed while sending");
  const length = typeof data === "string" ? Buffer.byteLength(data) : data.length;
  if (written >= length) return undefined;
  return (typeof data === "string" ? Buffer.from(data) : data).subarray(written);
}

async function connect(
  url: URL,
  origin: string,
  timeoutMs: number,
  trust: TrustedAuthorities,
): Promise<Connection> {
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const tls = url.protocol === "https:";
  let opened!: { resolve(): void; reject(error: Error): void };
  const ready = new Promise<void>((resolve, reject) => {
    opened = { resolve, reject };
  });
  // Bun.connect may reject first, for the same failure.
  ready.catch(() => {});
  const socket = await Bun.connect<Link>({
    hostname: host,
    port: Number(url.port || (tls ? 443 : 80)),
    data: { origin, tls, opening: opened },
    socket: handlers,
    ...(tls
      ? {
          tls: {
            rejectUnauthorized: true,
            ...(isIP(host) ? {} : { serverName: host }),
            ...(trust.ca ? { ca: trust.ca } : {}),
          },
        }
      : {}),
  });
  // A handshake that never ends closes the connection, rather than leave it open.
  socket.timeout(backstopSeconds(timeoutMs));
  await ready;
  return socket;
}

function exchange(socket: Connection, request: string, limits: PostLimits): Promise<Answer> {
  return new Promise<Answer>((resolve, reject) => {
    const reader = new AnswerReader(limits);
    const current: Exchange = { reader, unsent: undefined, answered: false, resolve, reject };
    socket.data.exchange = current;
    socket.timeout(backstopSeconds(limits.timeoutMs));
    try {
      current.unsent = sendSome(socket, request);
    } catch (error) {
      socket.data.exchange = undefined;
      reject(error as Error);
    }
  });
}

function requestText(url: URL, headers: Record<string, string>, body: string): string {
  let head = `POST ${url.pathname}${url.search} HTTP/1.1\r\nhost: ${url.host}\r\n`;
  head += `content-length: ${Buffer.byteLength(body)}\r\n`;
  for (const name in headers) head += `${name}: ${headers[name]}\r\n`;
  return `${head}\r\n${body}`;
}

/**
 * POSTs `body` to `url` (http or https) and reads the answer up to the limits, on a kept
 * connection to its origin when there is one. Rejects when there is no answer within the
 * time-out, the connection fails, or the answer is not HTTP/1.1.
 */
export async function post(
  url: URL,
  headers: Record<string, string>,
  body: string,
  limits: PostLimits,
  trust: TrustedAuthorities = {},
): Promise<Answer> {
  const origin = url.origin;
  const request = requestText(url, headers, body);
  let socket: Connection | undefined;
  let expired = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      expired = true;
      const error = new TimeoutError(`no answer within ${limits.timeoutMs} ms`);
      reject(error);
      if (!socket) return;
      const current = socket.data.exchange;
      socket.data.exchange = undefined;
      socket.end();
      current?.reject(error);
    }, limits.timeoutMs);
  });
  const attempt = async () => {
    const kept = takeIdle(origin);
    if (kept) {
      socket = kept;
      try {
        return await exchange(kept, request, limits);
      } catch (error) {
        if (!(error instanceof StaleConnection)) throw error;
      }
    }
    const opened = await connect(url, origin, limits.timeoutMs, trust);
    socket = opened;
    if (expired) {
      opened.end();
      throw new TimeoutError("connected too late");
    }
    return exchange(opened, request, limits);
  };
  const attempting = attempt();
  // Whatever it comes to after the time-out is of no interest.
  attempting.catch(() => {});
  try {
    return await Promise.race([attempting, timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

/** No answer within the time-out. */
export class TimeoutError extends Error {}

/** Closes every idle connection (for tests and shutdown). */
export function closeIdleConnections() {
  for (const origin of [...idle.keys()]) closeIdle(origin);
}
