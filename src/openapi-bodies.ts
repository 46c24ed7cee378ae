import { Type } from "@sinclair/typebox";
import { type TSchema, t } from "elysia";
import { OPTIONAL_BODY } from "./plugins/json-body.ts";

/**
 * The success bodies of the envelope, for the OpenAPI document only (`detail.responses`):
 * routes are not validated against them at run time, so a response that carries a field
 * more than its schema (a campaign's `stats`) is never refused.
 */
/** Every error: the envelope's error body, with `field_errors` on a 400. */
const ErrorBody = t.Object({
  status: t.Literal("error"),
  message: t.String(),
  code: t.String(),
  request_id: t.String(),
  field_errors: t.Optional(t.Array(t.Object({ field: t.String(), message: t.String() }))),
});

const REFUSED = {
  description: "Refused: the error envelope, its code one of the documented ones",
  content: { "application/json": { schema: ErrorBody } },
};

/** What every route may answer besides: the database away, or the unforeseen. */
const FAILED = {
  description:
    "503 `unavailable` (nothing was changed) or `outcome_unknown` (a write that may have been made), with `Retry-After`, while the database is away; 500 `internal_error` for the unforeseen",
  content: { "application/json": { schema: ErrorBody } },
};

const errors = { "4XX": REFUSED, "5XX": FAILED };

const body = (statuses: readonly number[], description: string, schema: TSchema) => ({
  responses: {
    ...Object.fromEntries(
      statuses.map((status) => [
        status,
        {
          description: status === 201 ? "Created" : description,
          content: { "application/json": { schema } },
        },
      ]),
    ),
    ...errors,
  },
});

/** A file in the body of the reply (a recording), or the error envelope. */
export const documentedFile = (type: string, description: string) => ({
  responses: {
    200: {
      description,
      content: { [type]: { schema: { type: "string" as const, format: "binary" } } },
    },
    ...errors,
  },
});

/** CSV in the body of the reply (an export), or the error envelope. */
export const documentedCsv = (description: string) => documentedFile("text/csv", description);

/** A JSON answer that also comes as CSV when asked for with `Accept: text/csv`. */
export function alsoAsCsv<T extends { responses: Record<number | string, object> }>(
  documentedJson: T,
  description: string,
): T {
  const ok = documentedJson.responses[200] as { content: Record<string, object> };
  return {
    ...documentedJson,
    responses: {
      ...documentedJson.responses,
      200: {
        ...ok,
        description,
        content: { ...ok.content, "text/csv": { schema: { type: "string" as const } } },
      },
    },
  };
}

/** A body of CSV text, as the request's whole body. */
export const csvRequestBody = {
  required: true,
  content: { "text/csv": { schema: { type: "string" as const } } },
};

/** `{status: "success", data}`, with each status given (a first upload is 201, later ones 200). */
export const documented = (data: Record<string, TSchema>, status: number | number[] = 200) =>
  body(
    typeof status === "number" ? [status] : status,
    "OK",
    t.Object({ status: t.Literal("success"), data: t.Object(data) }),
  );

/** `{status: "success", data}` where `data` takes one of several shapes (as who asks). */
export const documentedEither = (...shapes: Record<string, TSchema>[]) =>
  body(
    [200],
    "OK",
    t.Object({
      status: t.Literal("success"),
      data: t.Union(shapes.map((shape) => t.Object(shape))),
    }),
  );

/** A page of a list: `{status, data: {items}, total, limit, offset}`. */
export const documentedList = (item: TSchema) =>
  body(
    [200],
    "A page of the list, newest first",
    t.Object({
      status: t.Literal("success"),
      data: t.Object({ items: t.Array(item) }),
      total: Type.Integer(),
      limit: Type.Integer(),
      offset: Type.Integer(),
    }),
  );

type Operation = {
  requestBody?: { required?: boolean; content?: Record<string, { schema?: object }> };
};

/**
 * Says in the OpenAPI document that a body marked optional (`optionalJsonBody`) may be left
 * out: the generator writes every body as required. Idempotent, on the document it serves.
 */
export function documentOptionalBodies(document: unknown): void {
  const paths = (document as { paths?: Record<string, Record<string, Operation>> }).paths ?? {};
  for (const item of Object.values(paths))
    for (const operation of Object.values(item)) {
      const body = operation?.requestBody;
      const schema = body?.content?.["application/json"]?.schema;
      if (body && schema && OPTIONAL_BODY in schema) body.required = false;
    }
}
