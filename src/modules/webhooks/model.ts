import { Type } from "@sinclair/typebox";
import { type Static, t } from "elysia";
import type { WebhookAttemptRow, WebhookEndpointRow } from "../../../db/queries/webhooks.ts";
import { WEBHOOK_EVENT_TYPES, WEBHOOK_STATUSES } from "../../../db/schema/webhooks.ts";
import { PageQuery } from "../../pagination.ts";
import { TenantQuery, Timestamp } from "../users/model.ts";

const Url = t.String({
  maxLength: 2048,
  description:
    "https, to a public address (checked again at every delivery); plain http and private addresses only where the server allows them",
});
const EventTypes = t.Array(t.String(), {
  minItems: 1,
  maxItems: WEBHOOK_EVENT_TYPES.length,
  description: `the events it takes: ${WEBHOOK_EVENT_TYPES.join(", ")}`,
});
const Description = t.String({ maxLength: 500 });
/** Whether an endpoint gets its events: the view's field, and a change's. */
const Status = (options: { description?: string } = {}) =>
  t.Union(
    WEBHOOK_STATUSES.map((status) => t.Literal(status)),
    options,
  );

export const CreateWebhookBody = t.Object(
  { url: Url, event_types: EventTypes, description: t.Optional(Description) },
  { additionalProperties: false },
);
export type CreateWebhookInput = Static<typeof CreateWebhookBody>;

export const PatchWebhookBody = t.Object(
  {
    url: t.Optional(Url),
    event_types: t.Optional(EventTypes),
    description: t.Optional(Description),
    enabled: t.Optional(
      t.Boolean({ description: "false stops deliveries; true resumes them, pending ones first" }),
    ),
    status: t.Optional(
      Status({ description: "the view's own field, the same as `enabled` true or false" }),
    ),
  },
  { additionalProperties: false },
);
export type PatchWebhookInput = Static<typeof PatchWebhookBody>;

export const RotateSecretBody = t.Object(
  {
    overlap_seconds: t.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 604_800,
        description:
          "how long the previous secret still signs beside the new one (default a day): receivers switch without losing an event",
      }),
    ),
  },
  { additionalProperties: false },
);

export const WebhookSchema = t.Object({
  id: t.String({ format: "uuid" }),
  url: t.String(),
  description: t.String(),
  event_types: t.Array(t.String()),
  status: Status(),
  disabled_reason: t.Union([t.String(), t.Null()], {
    description: "an admin's change, a receiver's 410, or days without a successful delivery",
  }),
  failing_since: t.Union([Timestamp, t.Null()], {
    description: "the first failed attempt since the last success",
  }),
  previous_secret_expires_at: t.Union([Timestamp, t.Null()], {
    description: "until then, after a rotation, the previous secret signs too",
  }),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type WebhookView = Static<typeof WebhookSchema>;

/** An endpoint as the API shows it: never its secrets. */
export const webhookView = (row: WebhookEndpointRow): WebhookView => ({
  id: row.id,
  url: row.url,
  description: row.description,
  event_types: row.eventTypes,
  status: row.status,
  disabled_reason: row.disabledReason,
  failing_since: row.failingSince?.toISOString() ?? null,
  previous_secret_expires_at: row.previousSecretExpiresAt?.toISOString() ?? null,
  created_at: row.createdAt.toISOString(),
  updated_at: row.updatedAt.toISOString(),
});

export const DeliverySchema = t.Object({
  id: t.String({
    format: "uuid",
    description: "this attempt; POST …/deliveries/{id}/resend sends its event again",
  }),
  delivery_id: t.String({ format: "uuid" }),
  event_id: t.String({ description: "the event's `webhook-id`, the same on every retry" }),
  event_type: t.String(),
  attempt: Type.Integer({ description: "1 for the first attempt of a delivery" }),
  attempted_at: Timestamp,
  duration_ms: Type.Integer(),
  response_status: t.Union([Type.Integer(), t.Null()], {
    description: "null when no answer came (time-out, refused address, connection failure)",
  }),
  response_body: t.Union([t.String(), t.Null()], {
    description: "the first kilobyte of the answer",
  }),
  error: t.Union([t.String(), t.Null()]),
});

export const deliveryView = (row: WebhookAttemptRow) => ({
  id: row.id,
  delivery_id: row.deliveryId,
  event_id: row.eventId,
  event_type: row.eventType,
  attempt: row.attempt,
  attempted_at: row.attemptedAt.toISOString(),
  duration_ms: row.durationMs,
  response_status: row.responseStatus,
  response_body: row.responseBody,
  error: row.error,
});

export const WebhookParams = t.Object({ id: t.String() });
export const DeliveryParams = t.Object({ id: t.String(), delivery_id: t.String() });
export const WebhookListQuery = t.Object({ ...PageQuery, ...TenantQuery });
