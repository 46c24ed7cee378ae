import { Elysia, t } from "elysia";
import type { ServiceDeps } from "../../deps.ts";
import { okAll } from "../../envelope.ts";
import { documentedList } from "../../openapi-bodies.ts";
import type { AuthGuard } from "../../plugins/auth.ts";
import { TenantQuery } from "../users/model.ts";
import { AlertSchema, tenantAlerts } from "./service.ts";

/** What supervisors should look at, with when it began and ended. */
export const alertsModule = (deps: ServiceDeps, auth: AuthGuard) =>
  new Elysia({ prefix: "/api/v1/alerts", detail: { tags: ["alerts"] } })
    .use(auth)
    .get(
      "",
      async ({ tenantId, query }) =>
        okAll(await tenantAlerts(deps, tenantId, query.open === "true")),
      {
        auth: "agents.read",
        query: t.Object({
          ...TenantQuery,
          open: t.Optional(
            t.Union([t.Literal("true"), t.Literal("false")], {
              description: "true: only the alerts whose condition still holds",
            }),
          ),
        }),
        detail: {
          summary: "The workspace's alerts, newest first (at most 200)",
          description:
            "Raised within 5 s of their condition and closed when it ends; the supervisor socket gets each change as `alert`.",
          ...documentedList(AlertSchema),
        },
      },
    );
