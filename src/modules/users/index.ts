import { Elysia, t } from "elysia";
import type { ServiceDeps } from "../../deps.ts";
import { ok, okList } from "../../envelope.ts";
import { documented, documentedList } from "../../openapi-bodies.ts";
import { parsePage } from "../../pagination.ts";
import type { AuthGuard } from "../../plugins/auth.ts";
import { jsonBody } from "../../plugins/json-body.ts";
import {
  CreateUserBody,
  IdParams,
  PatchUserBody,
  TenantQuery,
  UserListQuery,
  UserSchema,
} from "./model.ts";
import { createUser, getUser, listUsers, patchUser } from "./service.ts";

const TenantOnly = t.Object(TenantQuery);

export const usersModule = (deps: ServiceDeps, auth: AuthGuard) =>
  new Elysia({ prefix: "/api/v1/users", detail: { tags: ["users"] } })
    .use(auth)
    .post(
      "",
      async ({ principal, tenantId, meta, body, set }) => {
        const result = await createUser(deps, principal, tenantId, body, meta);
        set.status = 201;
        return ok(result);
      },
      {
        auth: "users.write",
        ...jsonBody(CreateUserBody),
        query: TenantOnly,
        detail: { summary: "Create a user", ...documented({ user: UserSchema }, 201) },
      },
    )
    .get(
      "",
      async ({ tenantId, query }) => {
        const page = parsePage(query);
        const { items, total } = await listUsers(deps, tenantId, page);
        return okList(items, total, page);
      },
      {
        auth: "users.read",
        query: UserListQuery,
        detail: { summary: "List users", ...documentedList(UserSchema) },
      },
    )
    .get("/:id", async ({ tenantId, params }) => ok(await getUser(deps, tenantId, params.id)), {
      auth: "users.read",
      params: IdParams,
      query: TenantOnly,
      detail: { summary: "One user", ...documented({ user: UserSchema }) },
    })
    .patch(
      "/:id",
      async ({ principal, tenantId, meta, params, body }) =>
        ok(await patchUser(deps, principal, tenantId, params.id, body, meta)),
      {
        auth: "users.write",
        params: IdParams,
        query: TenantOnly,
        ...jsonBody(PatchUserBody),
        detail: {
          summary: "Change a user's role, status or phone",
          ...documented({ user: UserSchema }),
        },
      },
    );
