import { Elysia, t } from "elysia";
import type { ServiceDeps } from "../../deps.ts";
import { ok, okList } from "../../envelope.ts";
import { documented, documentedList } from "../../openapi-bodies.ts";
import { PageQuery, parsePage } from "../../pagination.ts";
import { type AuthGuard, asUser } from "../../plugins/auth.ts";
import { jsonBody } from "../../plugins/json-body.ts";
import { IdParams, TenantQuery } from "../users/model.ts";
import { ApiKeySchema, CreateApiKeyBody } from "./model.ts";
import { createApiKey, listTenantApiKeys, revokeTenantApiKey } from "./service.ts";

export const apiKeysModule = (deps: ServiceDeps, auth: AuthGuard) =>
  new Elysia({ prefix: "/api/v1/api-keys", detail: { tags: ["api keys"] } })
    .use(auth)
    .post(
      "",
      async ({ principal, tenantId, meta, body, set }) => {
        const result = await createApiKey(deps, asUser(principal), tenantId, body, meta);
        set.status = 201;
        return ok(result);
      },
      {
        auth: "api_keys.manage",
        query: t.Object(TenantQuery),
        ...jsonBody(CreateApiKeyBody),
        detail: {
          summary: "Create a workspace API key; the full key is returned this once",
          ...documented(
            {
              api_key: ApiKeySchema,
              key: t.String({ description: "the full key, shown this once" }),
            },
            201,
          ),
        },
      },
    )
    .get(
      "",
      async ({ tenantId, query }) => {
        const page = parsePage(query);
        const { items, total } = await listTenantApiKeys(deps, tenantId, page);
        return okList(items, total, page);
      },
      {
        auth: "api_keys.manage",
        query: t.Object({ ...PageQuery, ...TenantQuery }),
        detail: { summary: "List API keys", ...documentedList(ApiKeySchema) },
      },
    )
    .delete(
      "/:id",
      async ({ principal, tenantId, meta, params }) =>
        ok(await revokeTenantApiKey(deps, asUser(principal), tenantId, params.id, meta)),
      {
        auth: "api_keys.manage",
        params: IdParams,
        query: t.Object(TenantQuery),
        detail: {
          summary: "Revoke an API key (effective on the next request)",
          ...documented({ api_key: ApiKeySchema }),
        },
      },
    );
