import { Elysia, t } from "elysia";
import type { ServiceDeps } from "../../deps.ts";
import { ok, okList } from "../../envelope.ts";
import { documented, documentedList } from "../../openapi-bodies.ts";
import { parsePage } from "../../pagination.ts";
import type { AuthGuard } from "../../plugins/auth.ts";
import { jsonBody, noJsonBody, optionalJsonBody } from "../../plugins/json-body.ts";
import { TenantQuery } from "../users/model.ts";
import {
  CreateWebhookBody,
  DeliveryParams,
  DeliverySchema,
  PatchWebhookBody,
  RotateSecretBody,
  WebhookListQuery,
  WebhookParams,
  WebhookSchema,
} from "./model.ts";
import {
  createWebhook,
  deleteWebhook,
  getWebhook,
  listDeliveries,
  listWebhooks,
  patchWebhook,
  resendDelivery,
  rotateWebhookSecret,
} from "./service.ts";

const Secret = t.String({
  description: "the signing secret (`whsec_…`), shown in this answer only",
});
const TenantOnly = t.Object(TenantQuery);

export const webhooksModule = (deps: ServiceDeps, auth: AuthGuard) =>
  new Elysia({ prefix: "/api/v1/webhooks", detail: { tags: ["webhooks"] } })
    .use(auth)
    .post(
      "",
      async ({ principal, tenantId, meta, body, set }) => {
        const created = await createWebhook(deps, principal, tenantId, body, meta);
        set.status = 201;
        return ok(created);
      },
      {
        auth: "webhooks.write",
        query: TenantOnly,
        ...jsonBody(CreateWebhookBody),
        detail: {
          summary: "Register an endpoint for the workspace's events; its secret is shown this once",
          description:
            "Each event is POSTed as `{type, timestamp, data}` (see the `webhooks` section) with Standard Webhooks' headers `webhook-id`, `webhook-timestamp` and `webhook-signature` (`v1,` HMAC-SHA256). Delivery is at least once, in order per call and per lead; a receiver's 410 disables the endpoint.",
          ...documented({ webhook: WebhookSchema, secret: Secret }, 201),
        },
      },
    )
    .get(
      "",
      async ({ tenantId, query }) => {
        const page = parsePage(query);
        const { items, total } = await listWebhooks(deps, tenantId, page);
        return okList(items, total, page);
      },
      {
        auth: "webhooks.read",
        query: WebhookListQuery,
        detail: {
          summary: "List the workspace's webhook endpoints",
          ...documentedList(WebhookSchema),
        },
      },
    )
    .get("/:id", async ({ tenantId, params }) => ok(await getWebhook(deps, tenantId, params.id)), {
      auth: "webhooks.read",
      params: WebhookParams,
      query: TenantOnly,
      detail: { summary: "One webhook endpoint", ...documented({ webhook: WebhookSchema }) },
    })
    .patch(
      "/:id",
      async ({ principal, tenantId, meta, params, body }) =>
        ok(await patchWebhook(deps, principal, tenantId, params.id, body, meta)),
      {
        auth: "webhooks.write",
        params: WebhookParams,
        query: TenantOnly,
        ...jsonBody(PatchWebhookBody),
        detail: {
          summary: "Change an endpoint's URL, events or description, or disable and enable it",
          ...documented({ webhook: WebhookSchema }),
        },
      },
    )
    .delete(
      "/:id",
      async ({ principal, tenantId, meta, params }) =>
        ok(await deleteWebhook(deps, principal, tenantId, params.id, meta)),
      {
        auth: "webhooks.write",
        params: WebhookParams,
        query: TenantOnly,
        detail: {
          summary: "Remove an endpoint; its events not yet delivered are cancelled",
          ...documented({ webhook: WebhookSchema }),
        },
      },
    )
    .post(
      "/:id/rotate-secret",
      async ({ principal, tenantId, meta, params, body }) =>
        ok(
          await rotateWebhookSecret(
            deps,
            principal,
            tenantId,
            params.id,
            body?.overlap_seconds,
            meta,
          ),
        ),
      {
        auth: "webhooks.write",
        params: WebhookParams,
        query: TenantOnly,
        ...optionalJsonBody(RotateSecretBody),
        detail: {
          summary:
            "A new signing secret, shown this once; the previous one signs too until the overlap ends",
          ...documented({ webhook: WebhookSchema, secret: Secret }),
        },
      },
    )
    .get(
      "/:id/deliveries",
      async ({ tenantId, params, query }) => {
        const page = parsePage(query);
        const { items, total } = await listDeliveries(deps, tenantId, params.id, page);
        return okList(items, total, page);
      },
      {
        auth: "webhooks.read",
        params: WebhookParams,
        query: WebhookListQuery,
        detail: {
          summary:
            "Every attempt to deliver to the endpoint, newest first, as the receiver answered",
          ...documentedList(DeliverySchema),
        },
      },
    )
    .post(
      "/:id/deliveries/:delivery_id/resend",
      async ({ principal, tenantId, meta, params, set }) => {
        const resent = await resendDelivery(
          deps,
          principal,
          tenantId,
          params.id,
          params.delivery_id,
          meta,
        );
        set.status = 202;
        return ok(resent);
      },
      {
        auth: "webhooks.write",
        params: DeliveryParams,
        query: TenantOnly,
        ...noJsonBody(),
        detail: {
          summary: "Send an attempt's event again, under the same `webhook-id`",
          ...documented(
            {
              delivery: t.Object({
                id: t.String({ format: "uuid" }),
                event_id: t.String(),
                event_type: t.String(),
                status: t.String(),
                created_at: t.String({ format: "date-time" }),
              }),
            },
            202,
          ),
        },
      },
    );
