import { Elysia } from "elysia";
import type { ServiceDeps } from "../../deps.ts";
import { ok, okList } from "../../envelope.ts";
import { csvResponse } from "../../lib/csv-export.ts";
import { documented, documentedCsv, documentedList } from "../../openapi-bodies.ts";
import { parsePage } from "../../pagination.ts";
import type { AuthGuard } from "../../plugins/auth.ts";
import { jsonBody } from "../../plugins/json-body.ts";
import {
  CampaignParams,
  CreateLeadListBody,
  ImportForm,
  ImportParams,
  ImportSchema,
  LeadListSchema,
  LeadSchema,
  LeadsQuery,
  ListParams,
  PagedQuery,
  TenantOnlyQuery,
} from "./model.ts";
import {
  createLeadList,
  getImports,
  getLeadList,
  getLeadLists,
  getLeads,
  importLeadFile,
  rejectedCsv,
} from "./service.ts";

export const leadsModule = (deps: ServiceDeps, auth: AuthGuard) =>
  new Elysia({ prefix: "/api/v1/campaigns/:id/lead-lists", detail: { tags: ["lead lists"] } })
    .use(auth)
    .post(
      "",
      async ({ principal, tenantId, meta, params, body, set }) => {
        const result = await createLeadList(deps, principal, tenantId, params.id, body, meta);
        set.status = 201;
        return ok(result);
      },
      {
        auth: "leads.write",
        params: CampaignParams,
        query: TenantOnlyQuery,
        ...jsonBody(CreateLeadListBody),
        detail: {
          summary: "Create a lead list in a campaign",
          ...documented({ lead_list: LeadListSchema }, 201),
        },
      },
    )
    .get(
      "",
      async ({ tenantId, params, query }) => {
        const page = parsePage(query);
        const { items, total } = await getLeadLists(deps, tenantId, params.id, page);
        return okList(items, total, page);
      },
      {
        auth: "leads.read",
        params: CampaignParams,
        query: PagedQuery,
        detail: { summary: "The campaign's lead lists", ...documentedList(LeadListSchema) },
      },
    )
    .get(
      "/:list_id",
      async ({ tenantId, params }) =>
        ok(await getLeadList(deps, tenantId, params.id, params.list_id)),
      {
        auth: "leads.read",
        params: ListParams,
        query: TenantOnlyQuery,
        detail: { summary: "One lead list", ...documented({ lead_list: LeadListSchema }) },
      },
    )
    .post(
      "/:list_id/import",
      async ({ principal, tenantId, meta, params, request }) =>
        ok(
          await importLeadFile(deps, principal, tenantId, params.id, params.list_id, request, meta),
        ),
      {
        auth: "leads.write",
        params: ListParams,
        query: TenantOnlyQuery,
        // No body schema: the service streams the multipart upload itself (see UNREAD_MULTIPART).
        detail: {
          summary: "Import leads from a CSV file (all or nothing)",
          ...documented({ import: ImportSchema }),
          requestBody: {
            required: true,
            content: {
              "multipart/form-data": { schema: ImportForm as unknown as Record<string, unknown> },
            },
          },
        },
      },
    )
    .get(
      "/:list_id/leads",
      async ({ tenantId, params, query }) => {
        const page = parsePage(query);
        const filter = { state: query.state, phone: query.phone };
        const { items, total } = await getLeads(
          deps,
          tenantId,
          params.id,
          params.list_id,
          filter,
          page,
        );
        return okList(items, total, page);
      },
      {
        auth: "leads.read",
        params: ListParams,
        query: LeadsQuery,
        detail: {
          summary: "The list's leads, newest first; filter by state or phone",
          ...documentedList(LeadSchema),
        },
      },
    )
    .get(
      "/:list_id/imports",
      async ({ tenantId, params, query }) => {
        const page = parsePage(query);
        const { items, total } = await getImports(deps, tenantId, params.id, params.list_id, page);
        return okList(items, total, page);
      },
      {
        auth: "leads.read",
        params: ListParams,
        query: PagedQuery,
        detail: { summary: "Past imports into the list", ...documentedList(ImportSchema) },
      },
    )
    .get(
      "/:list_id/imports/:import_id/rejected.csv",
      async ({ tenantId, params }) => {
        const csv = await rejectedCsv(deps, tenantId, params.id, params.list_id, params.import_id);
        return csvResponse(csv.stream, csv.fileName);
      },
      {
        auth: "leads.read",
        params: ImportParams,
        query: TenantOnlyQuery,
        detail: {
          summary: "An import's rejected rows as CSV, with a reason column",
          ...documentedCsv("The rejected rows as they were sent, and why each was refused"),
        },
      },
    );
