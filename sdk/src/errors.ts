import type { paths } from "./generated/openapi.ts";

/** What every refusal carries (every route documents the same body for its 4XX answers). */
export type ApiErrorBody =
  paths["/api/v1/auth/login"]["post"]["responses"]["4XX"]["content"]["application/json"];

/**
 * A refusal of the API, from its envelope
 * `{status: "error", code, message, field_errors?, request_id}`.
 */
export class ApiError extends Error {
  override readonly name = "ApiError";
  /** The HTTP status, e.g. 422. */
  readonly status: number;
  /** The stable code, e.g. `validation_failed`; `unknown` when the body was no envelope. */
  readonly code: string;
  readonly fieldErrors: NonNullable<ApiErrorBody["field_errors"]>;
  /** Quote it when reporting a problem: the server's log lines carry it. */
  readonly requestId: string | null;

  constructor(response: Response, body: unknown) {
    const envelope = isErrorBody(body) ? body : undefined;
    super(envelope?.message ?? `${response.status} ${response.statusText}`.trim());
    this.status = response.status;
    this.code = envelope?.code ?? "unknown";
    this.fieldErrors = envelope?.field_errors ?? [];
    this.requestId = envelope?.request_id ?? response.headers.get("x-request-id");
  }
}

const isErrorBody = (body: unknown): body is ApiErrorBody =>
  typeof body === "object" && body !== null && (body as { status?: unknown }).status === "error";

/**
 * The `data` of a request's success envelope `{status: "success", data}`, or its refusal thrown
 * as an `ApiError`:
 *
 *   const { campaign } = await unwrap(api.GET("/api/v1/campaigns/{id}", { params }));
 */
export async function unwrap<Data>(
  request: Promise<{ data?: { data: Data }; error?: unknown; response: Response }>,
): Promise<Data> {
  const { data, error, response } = await request;
  if (data === undefined) throw new ApiError(response, error);
  return data.data;
}
