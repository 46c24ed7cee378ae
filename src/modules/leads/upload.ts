import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ApiError, badRequest, type FieldError, INVALID_BODY } from "../../errors.ts";
import { boundaryOf, MultipartError, readMultipart, readTextPart } from "../../lib/multipart.ts";
import { isStorableText, UNSTORABLE_TEXT } from "../../lib/storable-text.ts";

/** A received import request: its text fields, and the file spooled to a temporary path. */
export interface ImportUpload {
  fields: Map<string, string>;
  file: { path: string; name: string | undefined; bytes: number } | undefined;
  /** Removes the spooled file. */
  discard(): Promise<void>;
}

const tooLarge = (maxBytes: number) =>
  new ApiError(
    413,
    "payload_too_large",
    `the file is larger than the import limit of ${maxBytes} bytes`,
  );

/** Slack for the multipart framing and the small fields around the file. */
const FRAMING_BYTES = 1024 * 1024;

/**
 * Reads a multipart import request as it arrives. The file goes to a temporary file (never
 * into memory), which also lets its fields come in any order; its size is capped while it
 * streams. Nothing touches the database here.
 */
export async function receiveImport(request: Request, maxBytes: number): Promise<ImportUpload> {
  const boundary = boundaryOf(request.headers.get("content-type"));
  if (!boundary || !request.body) {
    throw badRequest(INVALID_BODY, [
      { field: "file", message: "a multipart/form-data body with a file is required" },
    ]);
  }
  const declared = Number(request.headers.get("content-length") ?? Number.NaN);
  if (declared > maxBytes + FRAMING_BYTES) throw tooLarge(maxBytes);

  const directory = await mkdtemp(join(tmpdir(), "lead-import-"));
  const upload: ImportUpload = {
    fields: new Map(),
    file: undefined,
    discard: () => rm(directory, { recursive: true, force: true }),
  };
  try {
    for await (const part of readMultipart(request.body, boundary)) {
      if (part.filename !== undefined || part.name === "file") {
        if (part.name !== "file") continue;
        if (upload.file)
          throw badRequest(INVALID_BODY, [{ field: "file", message: "only one file per import" }]);
        const path = join(directory, "upload.csv");
        const sink = Bun.file(path).writer();
        let bytes = 0;
        for await (const chunk of part.body) {
          bytes += chunk.byteLength;
          if (bytes > maxBytes) {
            await sink.end();
            throw tooLarge(maxBytes);
          }
          sink.write(chunk);
        }
        await sink.end();
        upload.file = { path, name: part.filename, bytes };
      } else if (!upload.fields.has(part.name)) {
        upload.fields.set(part.name, (await readTextPart(part)).trim());
      }
    }
  } catch (error) {
    await upload.discard();
    if (error instanceof MultipartError)
      throw badRequest(`malformed multipart body: ${error.message}`);
    if (error instanceof ApiError) throw error;
    // The body stream broke off: the client went away mid-upload. Nothing was written.
    throw badRequest("the upload was interrupted");
  }
  return upload;
}

/** The whole-request checks that need no look inside the file. */
export function requestFieldErrors(upload: ImportUpload): FieldError[] {
  const errors: FieldError[] = [];
  if (!upload.file) errors.push({ field: "file", message: "required" });
  else if (upload.file.bytes === 0) errors.push({ field: "file", message: "the file is empty" });
  if (!upload.fields.get("phone_column"))
    errors.push({ field: "phone_column", message: "required" });
  // The form's text is held to the same rule as every JSON body (see storable-text.ts).
  for (const [field, value] of upload.fields) {
    if (!isStorableText(value)) errors.push({ field, message: UNSTORABLE_TEXT });
  }
  if (upload.file?.name !== undefined && !isStorableText(upload.file.name))
    errors.push({ field: "file", message: `file name ${UNSTORABLE_TEXT}` });
  return errors;
}
