/**
 * A streaming multipart/form-data reader. Parts are yielded in order; each part's body is
 * an async iterable of chunks that must be read (or is skipped) before the next part comes.
 * Nothing is buffered beyond one chunk and a boundary's length, so uploads of any size
 * pass through in constant memory.
 */

export interface MultipartPart {
  name: string;
  filename: string | undefined;
  contentType: string | undefined;
  body: AsyncIterable<Uint8Array>;
}

export class MultipartError extends Error {}

const CRLF = new Uint8Array([13, 10]);
const HEADER_END = new Uint8Array([13, 10, 13, 10]);
const MAX_HEADER_BYTES = 16 * 1024;

/** The boundary of a multipart/form-data content type, or undefined. */
export function boundaryOf(contentType: string | null): string | undefined {
  if (!contentType || !/^multipart\/form-data\b/i.test(contentType)) return undefined;
  const match = /;\s*boundary=(?:"([^"]{1,70})"|([^;\s]{1,70}))/i.exec(contentType);
  return match?.[1] ?? match?.[2];
}

function indexOf(haystack: Uint8Array, needle: Uint8Array, from = 0): number {
  const first = needle[0];
  const last = haystack.length - needle.length;
  outer: for (
    let i = haystack.indexOf(first as number, from);
    i !== -1 && i <= last;
    i = haystack.indexOf(first as number, i + 1)
  ) {
    for (let j = 1; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

/** A byte buffer over a stream, refilled on demand. */
class Buffered {
  private buffer = new Uint8Array(0);
  private done = false;

  constructor(private readonly source: AsyncIterator<Uint8Array>) {}

  get bytes() {
    return this.buffer;
  }

  /** Reads one more chunk; false at the end of the stream. */
  async fill(): Promise<boolean> {
    if (this.done) return false;
    const { value, done } = await this.source.next();
    if (done || !value) {
      this.done = true;
      return false;
    }
    const merged = new Uint8Array(this.buffer.length + value.length);
    merged.set(this.buffer);
    merged.set(value, this.buffer.length);
    this.buffer = merged;
    return true;
  }

  take(length: number): Uint8Array {
    const head = this.buffer.subarray(0, length);
    this.buffer = this.buffer.subarray(length);
    return head;
  }

  async ensure(length: number): Promise<boolean> {
    while (this.buffer.length < length) if (!(await this.fill())) return false;
    return true;
  }
}

function parseHeaders(raw: string) {
  const headers = new Map<string, string>();
  for (const line of raw.split("\r\n")) {
    const colon = line.indexOf(":");
    if (colon > 0)
      headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  const disposition = headers.get("content-disposition") ?? "";
  const param = (key: string) => {
    const match = new RegExp(
      `;\\s*${key}="((?:[^"\\\\]|\\\\.)*)"|;\\s*${key}=([^;\\s]+)`,
      "i",
    ).exec(disposition);
    const value = match?.[1] ?? match?.[2];
    return value?.replace(/\\(.)/g, "$1");
  };
  const name = param("name");
  if (!/^form-data\b/i.test(disposition) || name === undefined) {
    throw new MultipartError("a multipart part has no form-data name");
  }
  return { name, filename: param("filename"), contentType: headers.get("content-type") };
}

export async function* readMultipart(
  stream: AsyncIterable<Uint8Array>,
  boundary: string,
): AsyncGenerator<MultipartPart> {
  const encoder = new TextEncoder();
  const opening = encoder.encode(`--${boundary}`);
  const delimiter = encoder.encode(`\r\n--${boundary}`);
  const input = new Buffered(stream[Symbol.asyncIterator]());

  // Skip the preamble up to the first boundary.
  for (;;) {
    const at = indexOf(input.bytes, opening);
    if (at !== -1) {
      input.take(at + opening.length);
      break;
    }
    if (input.bytes.length > opening.length) input.take(input.bytes.length - opening.length);
    if (!(await input.fill())) throw new MultipartError("no multipart boundary in the body");
  }

  for (;;) {
    if (!(await input.ensure(2))) throw new MultipartError("the multipart body ends early");
    const after = input.bytes;
    if (after[0] === 45 && after[1] === 45) return; // "--": the closing boundary
    // Transport padding may follow a boundary before its line break.
    let lineEnd = indexOf(input.bytes, CRLF);
    while (lineEnd === -1) {
      if (input.bytes.length > 1024 || !(await input.fill()))
        throw new MultipartError("a malformed multipart boundary");
      lineEnd = indexOf(input.bytes, CRLF);
    }
    input.take(lineEnd + 2);

    let headerEnd = indexOf(input.bytes, HEADER_END);
    while (headerEnd === -1) {
      if (input.bytes.length > MAX_HEADER_BYTES)
        throw new MultipartError("multipart part headers are too large");
      if (!(await input.fill()))
        throw new MultipartError("the multipart body ends inside part headers");
      headerEnd = indexOf(input.bytes, HEADER_END);
    }
    const headers = parseHeaders(new TextDecoder().decode(input.take(headerEnd)));
    input.take(HEADER_END.length);

    let finished = false;
    const body = async function* () {
      for (;;) {
        const at = indexOf(input.bytes, delimiter);
        if (at !== -1) {
          if (at > 0) yield input.take(at);
          input.take(delimiter.length);
          finished = true;
          return;
        }
        // Keep a tail that might be the start of the delimiter; pass the rest on.
        const safe = input.bytes.length - (delimiter.length - 1);
        if (safe > 0) yield input.take(safe);
        if (!(await input.fill()))
          throw new MultipartError("the multipart body ends inside a part");
      }
    };
    const iterator = body();
    yield { ...headers, body: { [Symbol.asyncIterator]: () => iterator } };
    // Whatever the consumer left unread is skipped.
    if (!finished) for await (const _ of iterator);
  }
}

/** Reads a small text part, refusing one longer than `maxBytes`. */
export async function readTextPart(part: MultipartPart, maxBytes = 4096): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of part.body) {
    size += chunk.length;
    if (size > maxBytes) throw new MultipartError(`form field ${part.name} is too long`);
    chunks.push(chunk);
  }
  return new TextDecoder().decode(Buffer.concat(chunks));
}
