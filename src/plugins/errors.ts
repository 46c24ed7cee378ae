import { Elysia, ParseError, ValidationError } from "elysia";
import type { DatabaseAvailability, DatabaseFailure } from "../../db/availability.ts";
import { JSON_MEDIA_TYPE } from "../envelope.ts";
import { ApiError, badRequest, type FieldError, INVALID_BODY, notFound } from "../errors.ts";
import { QueueFullError } from "../lib/keyed-mutex.ts";
import type { Logger } from "../logger.ts";
import { UnreadableBody } from "./json-body.ts";
import { requestIdOf } from "./request-id.ts";
import { sentenceOf } from "./schema-sentences.ts";

/** The message of a refused request, by the part of it that was refused. */
export const VALIDATION_MESSAGES: Record<string, string> = {
  body: INVALID_BODY,
  query: "invalid query parameters",
  params: "invalid path parameters",
  headers: "invalid request headers",
};

/** "/calling_window/start" → "calling_window.start"; TypeBox escapes "/" and "~" in keys. */
const fieldOf = (path: string) =>
  path
    .split("/")
    .filter(Boolean)
    .map((part) => part.replaceAll("~1", "/").replaceAll("~0", "~"))
    .join(".");

/**
 * A failure of the whole body or query: when nothing was sent, each field it requires is
 * missing; otherwise the part itself is not what it must be ("body: must be an object").
 */
function wholeErrors(part: string, issue: { schema?: unknown; value?: unknown }): FieldError[] {
  const required = (issue.schema as { required?: unknown } | undefined)?.required;
  const empty = issue.value === undefined || issue.value === null || issue.value === "";
  if (empty && Array.isArray(required) && required.length > 0)
    return required.map((field) => ({ field: String(field), message: "is required" }));
  return [{ field: part, message: sentenceOf(issue as Parameters<typeof sentenceOf>[0]) }];
}

function fieldErrorsOf(error: ValidationError): FieldError[] {
  const byField = new Map<string, string>();
  for (const issue of error.all) {
    if (!("path" in issue)) continue;
    const field = fieldOf(issue.path);
    if (field === "") {
      if (byField.size === 0) return wholeErrors(error.type, issue);
      continue;
    }
    if (byField.has(field)) continue;
    byField.set(field, sentenceOf(issue));
  }
  return [...byField].map(([field, message]) => ({ field, message }));
}

/** Maps anything thrown while handling a request to one ApiError. */
export function toApiError(code: string | number, error: unknown): ApiError | undefined {
  if (error instanceof ApiError) return error;
  if (error instanceof QueueFullError) {
    return new ApiError(
      503,
      "unavailable",
      "too many requests waiting; try again shortly",
      undefined,
      {
        "retry-after": RETRY_AFTER_SECONDS,
      },
    );
  }
  // Elysia wraps whatever a parser throws; our own parser's refusals are already ApiErrors.
  if (error instanceof ParseError && error.cause instanceof ApiError) return error.cause;
  if (error instanceof ValidationError) {
    if (error.value instanceof UnreadableBody) return error.value.refusal;
    const fieldErrors = fieldErrorsOf(error);
    return badRequest(
      VALIDATION_MESSAGES[error.type] ?? INVALID_BODY,
      fieldErrors.length ? fieldErrors : undefined,
    );
  }
  switch (code) {
    case "NOT_FOUND":
      return notFound("route");
    case "PARSE":
      // Our parser refuses malformed JSON itself: what reaches Elysia's is a body not sent.
      return badRequest(INVALID_BODY, [{ field: "body", message: "is required: a JSON object" }]);
    case "INVALID_COOKIE_SIGNATURE":
    case "INVALID_FILE_TYPE":
      return badRequest(INVALID_BODY);
  }
  return undefined;
}

/** Seconds a client should wait before trying again while the database is away. */
const RETRY_AFTER_SECONDS = "1";

const DATABASE_MESSAGES: Record<DatabaseFailure, string> = {
  unreachable: "the database is unavailable; nothing was changed, try again shortly",
  timeout: "the database did not answer in time; nothing was changed, try again shortly",
  outcome_unknown:
    "the database connection was lost while the change was being committed: it may or may not " +
    "have been made; read before retrying, or retry with the same Idempotency-Key",
  storage: "the database cannot write its files; nothing was changed",
  conflict:
    "the change met another made at the same moment and was undone; nothing was changed, " +
    "try again",
};

/**
 * The answer to a database failure: 503 with `Retry-After`. A read never changed anything, so
 * a lost connection under it is plainly `unavailable`; only a write can have an unknown outcome.
 */
export function databaseError(failure: DatabaseFailure, method: string): ApiError {
  const unknown = failure === "outcome_unknown" && method !== "GET" && method !== "HEAD";
  const shown = failure === "outcome_unknown" && !unknown ? "unreachable" : failure;
  return new ApiError(
    503,
    unknown ? "outcome_unknown" : "unavailable",
    DATABASE_MESSAGES[shown],
    undefined,
    { "retry-after": RETRY_AFTER_SECONDS },
  );
}

/** The error envelope's body; also what an idempotency window keeps of a refused command. */
export const errorEnvelope = (error: ApiError, requestId: string) => ({
  status: "error" as const,
  message: error.message,
  code: error.code,
  request_id: requestId,
  ...(error.fieldErrors ? { field_errors: error.fieldErrors } : {}),
});

/**
 * The one place where errors become envelopes: `status: "error"`, `message`, `code`,
 * `request_id`, and `field_errors` for validation failures. A database failure is a 503 and
 * opens the availability breaker. Unexpected errors are logged with the request id and
 * answered as a bare 500, with no detail of their cause.
 */
export const errorsPlugin = (logger: Logger, availability?: DatabaseAvailability) =>
  new Elysia({ name: "errors" }).onError({ as: "global" }, ({ code, error, set, request }) => {
    const requestId = requestIdOf(request);
    let apiError = toApiError(code, error);
    if (!apiError) {
      const failure = availability?.report(error);
      if (failure) {
        apiError = databaseError(failure, request.method);
        logger.warn("database unavailable", { request_id: requestId, failure, error });
      }
    }
    if (!apiError) {
      logger.error("unhandled error", { request_id: requestId, error });
      apiError = new ApiError(500, "internal_error", "internal server error");
    }
    set.status = apiError.status;
    set.headers["x-request-id"] = requestId;
    set.headers["content-type"] = JSON_MEDIA_TYPE;
    if (apiError.status === 401) set.headers["www-authenticate"] = "Bearer";
    for (const [name, value] of Object.entries(apiError.headers ?? {})) set.headers[name] = value;
    return errorEnvelope(apiError, requestId);
  });
