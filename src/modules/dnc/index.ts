import { Type } from "@sinclair/typebox";
import { Elysia, t } from "elysia";
import { type DncRow, findDncEntry, listDnc } from "../../../db/queries/calls.ts";
import type { ServiceDeps } from "../../deps.ts";
import { ok, okList } from "../../envelope.ts";
import { ApiError, badRequest, INVALID_BODY } from "../../errors.ts";
import { csvRequestBody, documented, documentedList } from "../../openapi-bodies.ts";
import { PageQuery, parsePage } from "../../pagination.ts";
import type { AuthGuard } from "../../plugins/auth.ts";
import { VALIDATION_MESSAGES } from "../../plugins/errors.ts";
import { jsonBody } from "../../plugins/json-body.ts";
import { normalisePhone } from "../leads/normalise.ts";
import { TenantQuery, Timestamp } from "../users/model.ts";
import { uploadDnc } from "./bulk.ts";
import { addToDnc, removeFromDnc } from "./service.ts";

export const DncEntrySchema = t.Object({
  phone: t.String({ description: "E.164" }),
  source: t.String({
    description:
      "user (added in the console or by a user's token), api (by an API key), import (a CSV upload), disposition (an agent's do_not_call), or keypress (the opt-out key during the abandon message)",
  }),
  added_by: t.Union([t.String(), t.Null()], {
    description:
      "who added it: a user's e-mail (an agent's, for a disposition), `API key <name>`, or `edge node <name>` for the opt-out key pressed on its call",
  }),
  created_at: Timestamp,
});

const dncView = (row: DncRow & { addedBy?: string | null }) => ({
  phone: row.phone,
  source: row.source,
  added_by: row.addedBy ?? null,
  created_at: row.createdAt.toISOString(),
});

/** `+1 415`, `1415` or `+14155552671`: the start of numbers in E.164, digits only. */
const prefixOf = (typed: string | undefined) => {
  // Digits as people type them: a name or a word finds nothing, and says so.
  if (typed && /[^0-9+\s().-]/.test(typed))
    throw badRequest("invalid query parameters", [
      { field: "phone", message: "must be the digits a number starts with, e.g. +1 415" },
    ]);
  const digits = typed?.replace(/[^0-9]/g, "") ?? "";
  return digits ? `+${digits}` : undefined;
};

const AddBody = t.Object(
  { phone: t.String({ minLength: 1, maxLength: 64 }) },
  { additionalProperties: false },
);

/** A number as typed (+1 415-555-2671) in E.164, or a 400 naming the field. */
/** The number in E.164, else a 400 naming `field` of the part it came in (body or path). */
function e164(phone: string, field: string, part: keyof typeof VALIDATION_MESSAGES = "body") {
  const normalised = normalisePhone(phone.trim(), undefined);
  if (!normalised)
    throw badRequest(VALIDATION_MESSAGES[part] ?? INVALID_BODY, [
      { field, message: "must be a valid phone number with its +country code" },
    ]);
  return normalised;
}

export const dncModule = (deps: ServiceDeps, auth: AuthGuard) =>
  new Elysia({ prefix: "/api/v1/dnc", detail: { tags: ["do not call"] } })
    .use(auth)
    .get(
      "",
      async ({ tenantId, query }) => {
        const page = parsePage(query);
        const { items, total } = await listDnc(deps.db, {
          tenantId,
          prefix: prefixOf(query.phone),
          page,
        });
        return okList(items.map(dncView), total, page);
      },
      {
        auth: "dnc.read",
        query: t.Object({
          ...PageQuery,
          ...TenantQuery,
          phone: t.Optional(
            t.String({
              maxLength: 64,
              description: "the numbers starting with these digits (`+1415`, `1 415`)",
            }),
          ),
        }),
        detail: {
          summary: "The tenant's do-not-call list, newest first",
          ...documentedList(DncEntrySchema),
        },
      },
    )
    .post(
      "",
      async ({ principal, tenantId, meta, body, set }) => {
        const { entry, added } = await addToDnc(deps, {
          principal,
          tenantId,
          phone: e164(body.phone, "phone"),
          meta,
        });
        const listed = await findDncEntry(deps.db, { tenantId, phone: entry.phone });
        set.status = 201;
        return ok({ dnc_entry: dncView(listed ?? entry), already_listed: !added });
      },
      {
        auth: "dnc.write",
        query: t.Object(TenantQuery),
        ...jsonBody(AddBody),
        detail: {
          summary: "Add a number to the do-not-call list (idempotent)",
          description:
            "A number already listed is kept as it was: the answer is the same 201 with `already_listed: true` and the entry as first added.",
          ...documented({ dnc_entry: DncEntrySchema, already_listed: t.Boolean() }, 201),
        },
      },
    )
    .post(
      "/import",
      async ({ principal, tenantId, meta, request }) => {
        const type = request.headers.get("content-type") ?? "";
        if (!/^text\/csv\b/i.test(type))
          throw new ApiError(415, "unsupported_media_type", "send the list as text/csv");
        return ok({
          report: await uploadDnc(deps, { principal, tenantId, request, meta }),
        });
      },
      {
        auth: "dnc.write",
        query: t.Object(TenantQuery),
        detail: {
          summary: "Put the numbers of a CSV on the do-not-call list (body: text/csv)",
          requestBody: csvRequestBody,
          description:
            "The column named `phone`, else the first (a first row that is not a number is a header); at most 100,000 rows and 5 MB (413). `data.report` `{rows, added, already_listed, rejected, rejections}`: each refused row (`invalid_phone`, `missing_phone`, `duplicate` in the file, `unclosed_quote`: a quote never closed, which takes the rest of the file), the first 100 listed with their row number; a file with no number is 422 naming `file`. One audit record, `dnc.imported`.",
          ...documented({
            report: t.Object({
              rows: Type.Integer(),
              added: Type.Integer(),
              already_listed: Type.Integer(),
              rejected: Type.Integer(),
              rejections: t.Array(
                t.Object({ row: Type.Integer(), value: t.String(), reason: t.String() }),
              ),
            }),
          }),
        },
      },
    )
    .delete(
      "/:phone",
      async ({ principal, tenantId, meta, params }) => {
        const removed = await removeFromDnc(deps, {
          principal,
          tenantId,
          // Decoded once already, by the router: `%2B` arrives as `+`.
          phone: e164(params.phone, "phone", "params"),
          meta,
        });
        return ok({ dnc_entry: dncView(removed) });
      },
      {
        auth: "dnc.write",
        params: t.Object({ phone: t.String() }),
        query: t.Object(TenantQuery),
        detail: {
          summary: "Remove a number from the do-not-call list",
          ...documented({ dnc_entry: DncEntrySchema }),
        },
      },
    );
