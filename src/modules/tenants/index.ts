import { Elysia, t } from "elysia";
import type { ServiceDeps } from "../../deps.ts";
import { ok, okList } from "../../envelope.ts";
import { documented, documentedList } from "../../openapi-bodies.ts";
import { PageQuery, parsePage } from "../../pagination.ts";
import type { AuthGuard } from "../../plugins/auth.ts";
import { jsonBody } from "../../plugins/json-body.ts";
import { IdParams, IgnoredTenantQuery } from "../users/model.ts";
import { CreateTenantBody, PatchTenantBody, TenantSchema } from "./model.ts";
import { createTenant, getTenant, listAllTenants, patchTenant } from "./service.ts";

export const tenantsModule = (deps: ServiceDeps, auth: AuthGuard) =>
  new Elysia({ prefix: "/api/v1/tenants", detail: { tags: ["tenants"] } })
    .use(auth)
    .post(
      "",
      async ({ principal, meta, body, set }) => {
        const result = await createTenant(deps, principal, body, meta);
        set.status = 201;
        return ok(result);
      },
      {
        auth: "tenants.write",
        ...jsonBody(CreateTenantBody),
        detail: {
          summary: "Create a tenant (workspace)",
          ...documented({ tenant: TenantSchema }, 201),
        },
      },
    )
    .get(
      "",
      async ({ query }) => {
        const page = parsePage(query);
        const { items, total } = await listAllTenants(deps, page);
        return okList(items, total, page);
      },
      {
        auth: "tenants.read",
        // The console sends the workspace it acts in with every request: a list ignores it.
        query: t.Object({ ...PageQuery, ...IgnoredTenantQuery }),
        detail: {
          summary: "List tenants (`tenant_id`, as on other routes, is accepted and ignored)",
          ...documentedList(TenantSchema),
        },
      },
    )
    .patch(
      "/:id",
      async ({ principal, meta, params, body }) =>
        ok(await patchTenant(deps, principal, params.id, body, meta)),
      {
        auth: "tenants.settings",
        params: IdParams,
        ...jsonBody(PatchTenantBody),
        detail: {
          summary: "Change a tenant's name or default API-key rate limit",
          ...documented({ tenant: TenantSchema }),
        },
      },
    )
    .get("/:id", async ({ principal, params }) => ok(await getTenant(deps, principal, params.id)), {
      // An admin reads its own tenant, whose settings it changes; another is not found.
      auth: "tenants.settings",
      params: IdParams,
      detail: {
        summary: "One tenant (an admin's own; any, for a platform admin)",
        ...documented({ tenant: TenantSchema }),
      },
    });
