import { Elysia, type TSchema, t } from "elysia";
import { ApiError, invalidBody } from "../errors.ts";

export const MAX_JSON_BYTES = 1024 * 1024;

const tooLarge = () =>
  new ApiError(413, "payload_too_large", `JSON body larger than ${MAX_JSON_BYTES} bytes`);

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Deeper than any body the API takes. A deeper one is refused before it is parsed: validating
 * a value, and describing its errors, costs time that grows with the square of its depth, and
 * a body of a megabyte of brackets held the whole process for seconds.
 */
export const MAX_JSON_DEPTH = 32;

/** Whether JSON text opens more than `limit` arrays or objects inside one another. */
function nestedDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let at = 0; at < text.length; at++) {
    const code = text.charCodeAt(at);
    if (inString) {
      if (code === BACKSLASH) at++;
      else if (code === QUOTE) inString = false;
    } else if (code === QUOTE) inString = true;
    else if (code === OPEN_ARRAY || code === OPEN_OBJECT) {
      if (++depth > limit) return true;
    } else if (code === CLOSE_ARRAY || code === CLOSE_OBJECT) depth--;
  }
  return false;
}

const [QUOTE, BACKSLASH, OPEN_ARRAY, CLOSE_ARRAY, OPEN_OBJECT, CLOSE_OBJECT] = [...'"\\[]{}'].map(
  (char) => char.charCodeAt(0),
);

/**
 * Reads at most `limit` bytes of the body, refusing more (`tooLarge`) before any parsing
 * happens. A body with a declared length is read in one piece (HTTP framing holds it to that
 * length) and measured again, for a caller in the process that declared less than it sent;
 * only a chunked body is streamed and counted, which costs several times more per request.
 */
export async function readBoundedBytes(
  request: Request,
  limit: number,
  tooLarge: () => Error,
): Promise<Uint8Array> {
  const declared = request.headers.get("content-length");
  if (declared !== null) {
    if (Number(declared) > limit) throw tooLarge();
    const bytes = new Uint8Array(await request.arrayBuffer());
    if (bytes.byteLength > limit) throw tooLarge();
    return bytes;
  }
  if (!request.body) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of request.body) {
    size += chunk.byteLength;
    if (size > limit) throw tooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

const readBounded = async (request: Request, limit: number) =>
  utf8.decode(await readBoundedBytes(request, limit, tooLarge));

const isJson = (contentType: string) => /^application\/([\w.+-]+\+)?json\b/i.test(contentType);
const isMultipart = (contentType: string) => /^multipart\/form-data\b/i.test(contentType);
/** Recordings and CSV uploads: read by their own routes, which say which of them they take. */
const isBinary = (contentType: string) => /^(audio\/[\w.+-]+|text\/csv)\b/i.test(contentType);
/** A body declared empty: clients such as `curl -d ''` send a form type with nothing in it. */
const declaredEmpty = (request: Request) => request.headers.get("content-length") === "0";

const unsupported = (type: string) =>
  new ApiError(415, "unsupported_media_type", `unsupported content type ${type.split(";")[0]}`);

/**
 * The body of a multipart request: left unread, for the route that streams it itself.
 * Elysia's own parser would buffer the whole upload in memory first.
 */
export const UNREAD_MULTIPART = Object.freeze({ multipart: "unread" as const });

/** A recording's body, likewise left unread for the route that reads it itself. */
export const UNREAD_BINARY = Object.freeze({ binary: "unread" as const });

/**
 * A JSON body that could not be read (not UTF-8, not JSON). The parser runs before the
 * credentials are checked, so it leaves this in the body's place rather than answering: the
 * auth guard refuses it once the caller is known (`refuseUnreadableBody`), and a route without
 * credentials fails its validation on it, which the error mapper turns into this refusal.
 */
export class UnreadableBody {
  constructor(readonly refusal: ApiError) {}
}

/** Throws the refusal of a body the parser could not read; anything else passes. */
export function refuseUnreadableBody(body: unknown): void {
  if (body instanceof UnreadableBody) throw body.refusal;
}

/**
 * Parses JSON bodies with a size cap; a malformed one becomes an `UnreadableBody`, refused
 * once the caller is known. Multipart bodies and recordings are left unread for the routes
 * that read them (a JSON route then fails validation without having read them); any other
 * media type, forms included, is 415 before a byte is read, so no body reaches a parser that
 * would buffer it whole. It runs before authentication.
 */
export const jsonBodyPlugin = new Elysia({ name: "json-body" }).onParse(
  { as: "global" },
  async ({ request, contentType }) => {
    const type = contentType ?? "";
    if (isMultipart(type)) return UNREAD_MULTIPART;
    if (isBinary(type)) return UNREAD_BINARY;
    if (type !== "" && !isJson(type)) {
      if (declaredEmpty(request)) return null;
      throw unsupported(type);
    }
    let text: string;
    try {
      text = await readBounded(request, MAX_JSON_BYTES);
    } catch (error) {
      if (error instanceof ApiError) throw error;
      return new UnreadableBody(invalidBody([{ field: "body", message: "must be UTF-8 text" }]));
    }
    // Nothing sent: null, so that the route's schema names each field it requires, after the
    // credentials (undefined would hand the body to Elysia's own parser, which refuses it bare
    // and at once).
    if (text.trim() === "") return null;
    if (nestedDeeperThan(text, MAX_JSON_DEPTH)) {
      return new UnreadableBody(
        invalidBody([
          { field: "body", message: `must nest at most ${MAX_JSON_DEPTH} levels deep` },
        ]),
      );
    }
    try {
      return JSON.parse(text);
    } catch {
      return new UnreadableBody(invalidBody([{ field: "body", message: "must be valid JSON" }]));
    }
  },
);

/**
 * Route options for a JSON body. The bounded parser above does the parsing; naming the
 * built-in "json" parser as well is what lets the OpenAPI generator list the media type.
 */
export const jsonBody = <S extends TSchema>(schema: S) => ({
  body: schema,
  parse: "json" as const,
});

/**
 * Marks a body schema that may be left out, for the OpenAPI document, whose generator
 * requires every body (`documentOptionalBodies`).
 */
export const OPTIONAL_BODY = "x-optional-body";

/**
 * Route options for a JSON body every field of which is optional: no body at all (or JSON
 * declared and nothing sent, which the parser reads as null) is the empty object, and a body
 * sent is validated as any other, unknown fields refused.
 */
export const optionalJsonBody = <S extends TSchema>(schema: S) => ({
  body: t.Optional({ ...schema, [OPTIONAL_BODY]: true }),
  parse: "json" as const,
  transform(context: { body: unknown }) {
    if (context.body === null) context.body = undefined;
  },
});

/** Route options for a command that takes no fields: a body, if any, must be `{}`. */
export const noJsonBody = () => optionalJsonBody(t.Object({}, { additionalProperties: false }));
