import type { Socket } from "bun";

/**
 * A keep-alive HTTP/1.1 connection that sends one request at a time and reads only the status
 * line and `Content-Length` of each answer: a load generator that takes little of the cores it
 * shares with the servers it measures (`fetch` and a JSON parse of every body cost several
 * times as much per request). Answers must carry a `Content-Length`, as the service's do.
 */
export class KeepAliveConnection {
  private received: Buffer[] = [];
  private waiting?: { resolve: (status: number) => void; reject: (error: Error) => void };
  private timer?: ReturnType<typeof setTimeout>;

  private constructor(private socket: Socket<undefined> | undefined) {}

  static async open(port: number): Promise<KeepAliveConnection> {
    const connection = new KeepAliveConnection(undefined);
    connection.socket = await Bun.connect({
      hostname: "127.0.0.1",
      port,
      socket: {
        data: (_socket, chunk) => connection.read(chunk),
        close: () => connection.fail(new Error("connection closed")),
        error: (_socket, error) => connection.fail(error),
      },
    });
    return connection;
  }

  /** Sends `head` (request line and headers, without the blank line) and `body`; the answer's status. */
  request(head: string, body: string, timeoutMs: number): Promise<number> {
    if (this.waiting) throw new Error("one request at a time");
    if (!this.socket) return Promise.reject(new Error("connection closed"));
    const promise = new Promise<number>((resolve, reject) => {
      this.waiting = { resolve, reject };
    });
    this.timer = setTimeout(() => this.fail(new Error("no answer in time")), timeoutMs);
    this.socket.write(`${head}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    return promise;
  }

  /** Closed by either end (a server closes connections idle for long): open another. */
  get closed(): boolean {
    return this.socket === undefined;
  }

  private read(chunk: Buffer): void {
    this.received.push(chunk);
    const bytes = this.received.length === 1 ? chunk : Buffer.concat(this.received);
    const headEnd = bytes.indexOf("\r\n\r\n");
    if (headEnd === -1) return;
    const head = bytes.subarray(0, headEnd).toString("latin1");
    const length = /\r\ncontent-length: *(\d+)/i.exec(head)?.[1];
    if (length === undefined) {
      this.fail(new Error("an answer without Content-Length"));
      return;
    }
    const end = headEnd + 4 + Number(length);
    if (bytes.length < end) {
      this.received = [bytes];
      return;
    }
    // One request at a time: nothing follows the answer.
    this.received = [];
    clearTimeout(this.timer);
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.resolve(Number(head.slice(9, 12)));
  }

  private fail(error: Error): void {
    clearTimeout(this.timer);
    this.socket?.terminate();
    this.socket = undefined;
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.reject(error);
  }
}
