/**
 * One WebSocket from this process to each other process it forwards commands to, opened on
 * first use and kept: a command is one small frame each way, where a request of its own cost
 * both processes a whole HTTP exchange. Replies are matched to commands by id. Commands sent
 * in one turn of the event loop go as one frame (an array), and so do replies (see
 * `FrameBatcher`): under load, each wake of the other process serves several.
 */

/** What a link gives back for a command. */
export type LinkOutcome =
  | { kind: "reply"; reply: unknown }
  /** The socket never opened: the command was not sent. */
  | { kind: "unopened" }
  /** The socket closed, or no reply came in time, after the command was sent. */
  | { kind: "lost" };

/** How long a link may take to open; a live process answers a handshake in milliseconds. */
const OPEN_TIMEOUT_MS = 2_000;

/** How often a link looks for commands whose reply is overdue. */
const OVERDUE_SWEEP_MS = 500;

interface Pending {
  resolve: (outcome: LinkOutcome) => void;
  /** When the command counts as lost, in `performance.now()` time. */
  deadline: number;
}

/**
 * Messages sent in one turn of the event loop, joined into one frame: one object alone, an
 * array of several. `parseFrame` reads either.
 */
export class FrameBatcher {
  private queued: string[] = [];

  constructor(private readonly write: (frame: string) => void) {}

  send(message: unknown): void {
    this.queued.push(JSON.stringify(message));
    if (this.queued.length === 1) setImmediate(() => this.flush());
  }

  private flush(): void {
    const queued = this.queued;
    this.queued = [];
    if (queued.length === 0) return;
    this.write(queued.length === 1 ? (queued[0] as string) : `[${queued.join(",")}]`);
  }
}

/** The messages of a frame written by a `FrameBatcher`. */
export function parseFrame<T>(raw: string | Buffer): T[] {
  const parsed = JSON.parse(typeof raw === "string" ? raw : raw.toString("utf8"));
  return Array.isArray(parsed) ? parsed : [parsed];
}

class PeerLink {
  private readonly socket: WebSocket;
  private readonly pending = new Map<number, Pending>();
  private readonly frames: FrameBatcher;
  /** One sweep for the link's overdue commands, rather than a timer for each command. */
  private readonly sweeper: ReturnType<typeof setInterval>;
  private nextId = 0;
  readonly opened: Promise<boolean>;
  private open = false;
  closed = false;

  constructor(url: string, headers: Record<string, string>) {
    this.socket = new WebSocket(url, { headers } as unknown as string[]);
    this.frames = new FrameBatcher((frame) => this.socket.send(frame));
    this.sweeper = setInterval(() => this.sweepOverdue(), OVERDUE_SWEEP_MS);
    this.sweeper.unref?.();
    this.opened = new Promise((resolve) => {
      this.socket.onopen = () => {
        this.open = true;
        resolve(true);
      };
      this.socket.onclose = () => {
        this.closed = true;
        this.open = false;
        clearInterval(this.sweeper);
        resolve(false);
        for (const waiting of this.pending.values()) waiting.resolve({ kind: "lost" });
        this.pending.clear();
      };
    });
    this.socket.onerror = () => {};
    this.socket.onmessage = (event) => {
      for (const { id, reply } of parseFrame<{ id: number; reply: unknown }>(String(event.data))) {
        const waiting = this.pending.get(id);
        if (!waiting) continue;
        this.pending.delete(id);
        waiting.resolve({ kind: "reply", reply });
      }
    };
  }

  async send(message: Record<string, unknown>, timeoutMs: number): Promise<LinkOutcome> {
    const opened =
      this.open ||
      (await Promise.race([
        this.opened,
        Bun.sleep(Math.min(timeoutMs, OPEN_TIMEOUT_MS)).then(() => false),
      ]));
    if (!opened) {
      // A process that accepts connections but does not answer (stopped, or swamped) gets a
      // new link next time.
      this.closed = true;
      clearInterval(this.sweeper);
      this.socket.close();
      return { kind: "unopened" };
    }
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.pending.set(id, { resolve, deadline: performance.now() + timeoutMs });
      this.frames.send({ ...message, id });
    });
  }

  private sweepOverdue(): void {
    const now = performance.now();
    for (const [id, waiting] of this.pending) {
      if (waiting.deadline > now) continue;
      this.pending.delete(id);
      waiting.resolve({ kind: "lost" });
    }
  }

  close(): void {
    clearInterval(this.sweeper);
    this.socket.close();
  }
}

/** The links of one process, by the address of the process at the other end. */
export class PeerLinks {
  private readonly links = new Map<string, PeerLink>();

  constructor(
    /** The handshake headers that prove this process shares the signing secret. */
    private readonly handshake: () => Record<string, string>,
    private readonly path: string,
  ) {}

  /** Sends a command to the process at `url` and waits up to `timeoutMs` for its reply. */
  send(url: string, message: Record<string, unknown>, timeoutMs: number): Promise<LinkOutcome> {
    let link = this.links.get(url);
    if (!link || link.closed) {
      link = new PeerLink(`${url.replace(/^http/, "ws")}${this.path}`, this.handshake());
      this.links.set(url, link);
    }
    return link.send(message, timeoutMs);
  }

  closeAll(): void {
    for (const link of this.links.values()) link.close();
    this.links.clear();
  }
}
