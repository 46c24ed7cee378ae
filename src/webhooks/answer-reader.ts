/** The most a receiver's status line and headers may take. */
const MAX_HEAD_BYTES = 16 * 1024;
/** The most a chunk-size line may take (hex digits and extensions). */
const MAX_CHUNK_LINE_BYTES = 1024;

const CRLF = Buffer.from("\r\n");
const HEAD_END = Buffer.from("\r\n\r\n");

/** How the body of an answer ends. */
type Framing =
  | { kind: "none" }
  | { kind: "length"; left: number }
  | { kind: "chunked"; at: "size" | "data" | "data-end" | "trailer"; left: number }
  | { kind: "close" };

/** An answer that cannot be read as HTTP/1.1. */
export class MalformedAnswer extends Error {}

/**
 * Reads one HTTP/1.1 answer from the bytes of a connection, as they come: its status, and the
 * first `keepBytes` of its body, reading no more than `maxBytes` of it. Interim (1xx) answers
 * are skipped. Whether the connection can carry another request afterwards is `reusable`.
 */
export class AnswerReader {
  status = 0;
  reusable = true;
  private unread: Buffer = Buffer.alloc(0);
  private framing: Framing | undefined;
  private kept: Buffer[] = [];
  private keptBytes = 0;
  private bodyBytes = 0;

  constructor(private readonly limits: { maxBytes: number; keepBytes: number }) {}

  /** The first bytes of the body, as text. */
  body(): string {
    return this.keptBytes === 0 ? "" : new TextDecoder().decode(Buffer.concat(this.kept));
  }

  /** Takes the next bytes; true once the answer is whole, or read as far as the limit. */
  push(bytes: Uint8Array): boolean {
    const chunk = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes);
    this.unread = this.unread.length === 0 ? chunk : Buffer.concat([this.unread, chunk]);
    const whole = this.read();
    // What is left may be the connection's buffer, which it reuses once this returns.
    if (!whole && this.unread.length > 0) this.unread = Buffer.from(this.unread);
    return whole;
  }

  private read(): boolean {
    while (!this.framing) {
      const end = this.unread.indexOf(HEAD_END);
      if (end < 0) {
        if (this.unread.length > MAX_HEAD_BYTES) throw new MalformedAnswer("headers too long");
        return false;
      }
      const head = this.unread.subarray(0, end).toString("latin1");
      this.unread = this.unread.subarray(end + HEAD_END.length);
      this.framing = this.readHead(head);
    }
    return this.readBody();
  }

  /** The peer closed the connection: true when what came is a whole answer. */
  closed(): boolean {
    this.reusable = false;
    return this.framing?.kind === "close";
  }

  /** Reads a status line and headers; undefined for an interim answer (another follows). */
  private readHead(head: string): Framing | undefined {
    const [statusLine = "", ...lines] = head.split("\r\n");
    const match = /^HTTP\/1\.([01]) ([1-9]\d\d)(?: [^\r\n]*)?$/.exec(statusLine);
    if (!match) throw new MalformedAnswer("not an HTTP/1.1 answer");
    const status = Number(match[2]);
    if (status === 101) throw new MalformedAnswer("switched protocols");
    if (status < 200) return undefined;
    this.status = status;
    let length: number | undefined;
    let chunked = false;
    let encoded = false;
    let keepAlive = match[1] === "1";
    for (const line of lines) {
      const colon = line.indexOf(":");
      if (colon <= 0) throw new MalformedAnswer("a header without a name");
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line
        .slice(colon + 1)
        .trim()
        .toLowerCase();
      if (name === "content-length") {
        if (!/^\d{1,15}$/.test(value) || (length !== undefined && length !== Number(value))) {
          throw new MalformedAnswer("a content-length that is not one number");
        }
        length = Number(value);
      } else if (name === "transfer-encoding") {
        encoded = true;
        chunked = value.split(",").at(-1)?.trim() === "chunked";
      } else if (name === "connection") {
        const options = value.split(",").map((option) => option.trim());
        if (options.includes("close")) keepAlive = false;
        else if (options.includes("keep-alive")) keepAlive = true;
      }
    }
    this.reusable = keepAlive;
    if (status === 204 || status === 304) return { kind: "none" };
    if (chunked) return { kind: "chunked", at: "size", left: 0 };
    if (!encoded && length !== undefined) return { kind: "length", left: length };
    this.reusable = false;
    return { kind: "close" };
  }

  private readBody(): boolean {
    const framing = this.framing;
    switch (framing?.kind) {
      case "none":
        return this.whole();
      case "length": {
        const part = this.take(framing.left);
        framing.left -= part;
        if (this.full()) return true;
        return framing.left === 0 ? this.whole() : false;
      }
      case "close":
        this.take(this.unread.length);
        return this.full();
      case "chunked":
        return this.readChunks(framing);
      default:
        return false;
    }
  }

  private readChunks(framing: Extract<Framing, { kind: "chunked" }>): boolean {
    for (;;) {
      if (framing.at === "size") {
        const end = this.unread.indexOf(CRLF);
        if (end < 0) {
          if (this.unread.length > MAX_CHUNK_LINE_BYTES) throw new MalformedAnswer("chunk size");
          return false;
        }
        const size = this.unread.subarray(0, end).toString("latin1").split(";")[0]?.trim() ?? "";
        if (!/^[0-9a-fA-F]{1,8}$/.test(size)) throw new MalformedAnswer("chunk size");
        this.unread = this.unread.subarray(end + CRLF.length);
        framing.left = Number.parseInt(size, 16);
        framing.at = framing.left === 0 ? "trailer" : "data";
      } else if (framing.at === "data") {
        framing.left -= this.take(framing.left);
        if (this.full()) return true;
        if (framing.left > 0) return false;
        framing.at = "data-end";
      } else if (framing.at === "data-end") {
        if (this.unread.length < CRLF.length) return false;
        if (!this.unread.subarray(0, CRLF.length).equals(CRLF)) {
          throw new MalformedAnswer("a chunk longer than its size");
        }
        this.unread = this.unread.subarray(CRLF.length);
        framing.at = "size";
      } else {
        // Trailers, if any, end with an empty line; none are used.
        if (this.unread.subarray(0, CRLF.length).equals(CRLF)) {
          this.unread = this.unread.subarray(CRLF.length);
          return this.whole();
        }
        const end = this.unread.indexOf(HEAD_END);
        if (end < 0) {
          if (this.unread.length > MAX_HEAD_BYTES) throw new MalformedAnswer("trailers too long");
          return false;
        }
        this.unread = this.unread.subarray(end + HEAD_END.length);
        return this.whole();
      }
    }
  }

  /** Counts up to `wanted` unread bytes as body, keeping the first ones; returns how many. */
  private take(wanted: number): number {
    const part = Math.min(wanted, this.unread.length, this.limits.maxBytes - this.bodyBytes);
    const keep = Math.min(part, this.limits.keepBytes - this.keptBytes);
    if (keep > 0) {
      this.kept.push(Buffer.from(this.unread.subarray(0, keep)));
      this.keptBytes += keep;
    }
    this.bodyBytes += part;
    this.unread = this.unread.subarray(part);
    return part;
  }

  /** Read as far as the limit: the rest is never read, and the connection not used again. */
  private full(): boolean {
    if (this.bodyBytes < this.limits.maxBytes) return false;
    this.reusable = false;
    return true;
  }

  /** The answer ended; bytes past it mean a receiver the connection cannot be trusted with. */
  private whole(): true {
    if (this.unread.length > 0) this.reusable = false;
    return true;
  }
}
