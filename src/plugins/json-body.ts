import { Elysia, type TSchema } from "elysia";
import { ApiError, invalidBody } from "../errors.ts";

export const MAX_JSON_BYTES = 1024 * 1024;

const tooLarge = () =>
  new ApiError(413, "payload_too_large", `JSON body larger than ${MAX_JSON_BYTES} bytes`);

/** Reads at most `limit` bytes of the body, refusing more before any parsing happens. */
async function readBounded(request: Request, limit: number): Promise<string> {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > limit) throw tooLarge();
  if (!request.body) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of request.body) {
    size += chunk.byteLength;
    if (size > limit) throw tooLarge();
    chunks.push(chunk);
  }
  return new TextDecoder("utf-8", { fatal: true }).decode(Buffer.concat(chunks));
}

const isJson = (contentType: string) => /^application\/([\w.+-]+\+)?json\b/i.test(contentType);
const isForm = (contentType: string) =>
  /^(multipart\/form-data|application\/x-www-form-urlencoded)\b/i.test(contentType);

/**
 * Parses JSON bodies with a size cap and turns any malformed body into the envelope's 400.
 * Form uploads fall through to Elysia's own parser; any other media type is 415.
 */
export const jsonBodyPlugin = new Elysia({ name: "json-body" }).onParse(
  { as: "global" },
  async ({ request, contentType }) => {
    const type = contentType ?? "";
    if (isForm(type)) return undefined;
    if (type !== "" && !isJson(type)) {
      throw new ApiError(
        415,
        "unsupported_media_type",
        `unsupported content type ${type.split(";")[0]}`,
      );
    }
    let text: string;
    try {
      text = await readBounded(request, MAX_JSON_BYTES);
    } catch (error) {
      if (error instanceof ApiError) throw error;
      throw invalidBody();
    }
    if (text.trim() === "") return type === "" ? undefined : throwInvalid();
    try {
      return JSON.parse(text);
    } catch {
      throw invalidBody();
    }
  },
);

function throwInvalid(): never {
  throw invalidBody();
}

/**
 * Route options for a JSON body. The bounded parser above does the parsing; naming the
 * built-in "json" parser as well is what lets the OpenAPI generator list the media type.
 */
export const jsonBody = <S extends TSchema>(schema: S) => ({
  body: schema,
  parse: "json" as const,
});
