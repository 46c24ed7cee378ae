import { Elysia, t } from "elysia";
import { type DncRow, listDnc } from "../../../db/queries/calls.ts";
import type { ServiceDeps } from "../../deps.ts";
import { ok, okList } from "../../envelope.ts";
import { badRequest, INVALID_BODY } from "../../errors.ts";
import { documented, documentedList } from "../../openapi-bodies.ts";
import { PageQuery, parsePage } from "../../pagination.ts";
import type { AuthGuard } from "../../plugins/auth.ts";
import { jsonBody } from "../../plugins/json-body.ts";
import { normalisePhone } from "../leads/normalise.ts";
import { TenantQuery, Timestamp } from "../users/model.ts";
import { addToDnc, removeFromDnc } from "./service.ts";

export const DncEntrySchema = t.Object({
  phone: t.String({ description: "E.164" }),
  source: t.String({
    description: "api, disposition, or keypress (the opt-out key during the abandon message)",
  }),
  created_at: Timestamp,
});

const dncView = (row: DncRow) => ({
  phone: row.phone,
  source: row.source,
  created_at: row.createdAt.toISOString(),
});

const AddBody = t.Object(
  { phone: t.String({ minLength: 1, maxLength: 64 }) },
  { additionalProperties: false },
);

/** A number as typed (+1 415-555-2671) in E.164, or a 400 naming the field. */
function e164(phone: string, field: string) {
  const normalised = normalisePhone(phone.trim(), undefined);
  if (!normalised)
    throw badRequest(INVALID_BODY, [
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
        const phone = query.phone
          ? (normalisePhone(query.phone, undefined) ?? query.phone)
          : undefined;
        const { items, total } = await listDnc(deps.db, { tenantId, phone, page });
        return okList(items.map(dncView), total, page);
      },
      {
        auth: "dnc.read",
        query: t.Object({
          ...PageQuery,
          ...TenantQuery,
          phone: t.Optional(t.String({ maxLength: 64 })),
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
        const row = await addToDnc(deps, {
          principal,
          tenantId,
          phone: e164(body.phone, "phone"),
          meta,
        });
        set.status = 201;
        return ok({ dnc_entry: dncView(row) });
      },
      {
        auth: "dnc.write",
        query: t.Object(TenantQuery),
        ...jsonBody(AddBody),
        detail: {
          summary: "Add a number to the do-not-call list (idempotent)",
          ...documented({ dnc_entry: DncEntrySchema }, 201),
        },
      },
    )
    .delete(
      "/:phone",
      async ({ principal, tenantId, meta, params }) => {
        const removed = await removeFromDnc(deps, {
          principal,
          tenantId,
          phone: e164(decodeURIComponent(params.phone), "phone"),
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
