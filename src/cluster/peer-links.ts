/**
 * One WebSocket from this process to each other process it forwards commands to, opened on
 * first use and kept: a command is one small frame each way, where a request of its own cost
 * both processes a whole HTTP exchange. Replies are matched to commands by id.
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

interface Pending {
  resolve: (outcome: LinkOutcome) => void;
  timer: ReturnType<typeof setTimeout>;
}

class PeerLink {
  private readonly socket: WebSocket;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  readonly opened: Promise<boolean>;
  closed = false;

  constructor(url: string, headers: Record<string, string>) {
    this.socket = new WebSocket(url, { headers } as unknown as string[]);
    this.opened = new Promise((resolve) => {
      this.socket.onopen = () => resolve(true);
      this.socket.onclose = () => {
        this.closed = true;
        resolve(false);
        for (const [id, waiting] of this.pending) {
          clearTimeout(waiting.timer);
          waiting.resolve({ kind: "lost" });
          this.pending.delete(id);
        }
      };
    });
    this.socket.onerror = () => {};
    this.socket.onmessage = (event) => {
      const { id, reply } = JSON.parse(String(event.data)) as { id: number; reply: unknown };
      const waiting = this.pending.get(id);
      if (!waiting) return;
      this.pending.delete(id);
      clearTimeout(waiting.timer);
      waiting.resolve({ kind: "reply", reply });
    };
  }

  async send(message: Record<string, unknown>, timeoutMs: number): Promise<LinkOutcome> {
    const opened = await Promise.race([
      this.opened,
      Bun.sleep(Math.min(timeoutMs, OPEN_TIMEOUT_MS)).then(() => false),
    ]);
    if (!opened) {
      // A process that accepts connections but does not answer (stopped, or swamped) gets a
      // new link next time.
      this.closed = true;
      this.socket.close();
      return { kind: "unopened" };
    }
    const id = this.nextId++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        resolve({ kind: "lost" });
      }, timeoutMs);
      this.pending.set(id, { resolve, timer });
      this.socket.send(JSON.stringify({ ...message, id }));
    });
  }

  close(): void {
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
