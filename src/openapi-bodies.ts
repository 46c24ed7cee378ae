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

const body = (status: number, description: string, schema: TSchema) => ({
  responses: {
    [status]: { description, content: { "application/json": { schema } } },
    "4XX": REFUSED,
  },
});

/** A file in the body of the reply (a recording), or the error envelope. */
export const documentedFile = (type: string, description: string) => ({
  responses: {
    200: {
      description,
      content: { [type]: { schema: { type: "string" as const, format: "binary" } } },
    },
    "4XX": REFUSED,
  },
});

/** `{status: "success", data}`. */
export const documented = (data: Record<string, TSchema>, status = 200) =>
  body(
    status,
    status === 201 ? "Created" : "OK",
    t.Object({ status: t.Literal("success"), data: t.Object(data) }),
  );

/** A page of a list: `{status, data: {items}, total, limit, offset}`. */
export const documentedList = (item: TSchema) =>
  body(
    200,
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
