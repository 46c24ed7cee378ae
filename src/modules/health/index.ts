import { Elysia, t } from "elysia";
import type { ServiceDeps } from "../../deps.ts";
import { ok } from "../../envelope.ts";
import { ApiError } from "../../errors.ts";

const detail = (summary: string, description: string) => ({
  summary,
  description,
  security: [],
  tags: ["operations"],
  ["x-permission" as string]: "public",
});

/**
 * Probes for load balancers and orchestrators, outside `/api/v1` and without credentials.
 * Their bodies say live or ready and nothing else: no versions, no database names, no reasons.
 */
export const healthModule = (deps: Pick<ServiceDeps, "availability" | "lifecycle">) =>
  new Elysia({ name: "health" })
    .get("/healthz", () => ok({ live: true }), {
      response: t.Object({ status: t.Literal("success"), data: t.Object({ live: t.Boolean() }) }),
      detail: detail("Liveness", "200 while the process answers, whatever the database does."),
    })
    .get(
      "/readyz",
      () => {
        const { accepting, restored } = deps.lifecycle;
        if (!accepting || !restored || !deps.availability.available) {
          throw new ApiError(503, "unavailable", "not ready", undefined, { "retry-after": "1" });
        }
        return ok({ ready: true });
      },
      {
        response: {
          200: t.Object({ status: t.Literal("success"), data: t.Object({ ready: t.Boolean() }) }),
        },
        detail: detail(
          "Readiness",
          "200 when the database answers, the migrations are done and the campaigns this process " +
            "owns are restored; 503 `unavailable` while the database is away or the process drains.",
        ),
      },
    );
