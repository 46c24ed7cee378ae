/** Error codes of the envelope, by HTTP status. Services throw ApiError; one plugin renders it. */
export type ErrorCode =
  | "invalid_request"
  | "unauthenticated"
  | "forbidden"
  | "account_locked"
  | "account_disabled"
  | "password_change_required"
  | "not_found"
  | "conflict"
  | "version_conflict"
  | "invalid_transition"
  | "payload_too_large"
  | "unsupported_media_type"
  | "idempotency_key_reused"
  | "validation_failed"
  | "rate_limited"
  | "internal_error"
  | "unavailable"
  | "outcome_unknown";

export interface FieldError {
  field: string;
  message: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly fieldErrors?: FieldError[],
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

export const INVALID_BODY = "invalid request body";
export const INVALID_CREDENTIALS = "invalid credentials";
export const MISSING_AUTHORIZATION = "missing or invalid authorization header";

export const badRequest = (message: string, fieldErrors?: FieldError[]) =>
  new ApiError(400, "invalid_request", message, fieldErrors);

export const invalidBody = (fieldErrors?: FieldError[]) => badRequest(INVALID_BODY, fieldErrors);

export const unauthenticated = (message: string = INVALID_CREDENTIALS) =>
  new ApiError(401, "unauthenticated", message);

export const forbidden = (message = "not allowed") => new ApiError(403, "forbidden", message);

export const notFound = (what = "resource") => new ApiError(404, "not_found", `${what} not found`);

/** A well-formed request whose values the service cannot accept: 422 naming the field. */
export const unprocessable = (field: string, message: string) =>
  new ApiError(422, "validation_failed", message, [{ field, message }]);

export const conflict = (message: string, fieldErrors?: FieldError[]) =>
  new ApiError(409, "conflict", message, fieldErrors);
