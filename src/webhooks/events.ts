import { type TSchema, t } from "elysia";
import type { Executor } from "../../db/client.ts";
import { namedCdrsOfCalls } from "../../db/queries/calls.ts";
import { findLeadsByIds } from "../../db/queries/leads.ts";
import type { LeasedDelivery } from "../../db/queries/webhooks.ts";
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from "../../db/schema/webhooks.ts";
import { AgentSchema } from "../dialer/model.ts";
import { CdrSchema, cdrView } from "../modules/cdrs/model.ts";
import { ImportSchema, LeadSchema, leadView } from "../modules/leads/model.ts";

const Uuid = t.String({ format: "uuid" });

/** The `data` of each event type: what receivers get, documented in OpenAPI's `webhooks`. */
export const WEBHOOK_EVENT_DATA = {
  "call.ended": t.Object(
    { cdr: CdrSchema },
    { description: "a call ended: its record as it is when the event is first sent" },
  ),
  "call.dispositioned": t.Object(
    { cdr: CdrSchema },
    { description: "an agent (or the wrap-up limit) gave a call its disposition" },
  ),
  "lead.completed": t.Object(
    { lead: LeadSchema },
    { description: "a lead will not be called again: done, or on the do-not-call list" },
  ),
  "lead.exhausted": t.Object({ lead: LeadSchema }, { description: "a lead used up its attempts" }),
  "campaign.status_changed": t.Object(
    {
      campaign_id: Uuid,
      from: t.String(),
      to: t.String(),
      action: t.String({ description: "start, pause, stop, or complete (the dialer's own)" }),
      actor_type: t.String({ description: "user, api_key or system" }),
      actor_id: t.Union([t.String(), t.Null()]),
    },
    { description: "a campaign's status changed" },
  ),
  "dnc.added": t.Object(
    {
      phone: t.String(),
      source: t.String({
        description:
          "user, api, import (an upload), disposition (an agent's code) or keypress (the opt-out key)",
      }),
      added_by: t.Union([t.String(), t.Null()], {
        description:
          "the id of the user, API key or edge node that added it (`GET /dnc` shows its e-mail or name)",
      }),
    },
    { description: "a number was put on the workspace's do-not-call list" },
  ),
  "import.finished": t.Object(
    { campaign_id: Uuid, import: ImportSchema },
    { description: "an import of leads finished" },
  ),
  "compliance.governor": t.Object(
    {
      campaign_id: Uuid,
      held: t.Boolean({ description: "true: the governor began to hold; false: it let go" }),
      reason: t.String(),
    },
    { description: "the abandon-rate governor began, or stopped, holding a campaign" },
  ),
  "agent.state_changed": t.Object(
    { agent: AgentSchema },
    { description: "an agent's state changed" },
  ),
} satisfies Record<WebhookEventType, TSchema>;

/** The whole message as sent, as Standard Webhooks suggests. */
export const webhookMessageSchema = (type: WebhookEventType) =>
  t.Object({
    type: t.Literal(type),
    timestamp: t.String({ format: "date-time", description: "when the change happened" }),
    data: WEBHOOK_EVENT_DATA[type],
  });

/**
 * OpenAPI's `webhooks`: per event type, the POST a receiver gets, with the headers that sign
 * it, and what its answer means.
 */
export function webhooksDocumentation() {
  const header = (description: string) => ({
    required: true,
    schema: { type: "string" as const },
    description,
  });
  return Object.fromEntries(
    WEBHOOK_EVENT_TYPES.map((type) => [
      type,
      {
        post: {
          operationId: `webhook_${type.replace(".", "_")}`,
          summary: WEBHOOK_EVENT_DATA[type].description ?? type,
          parameters: [
            {
              in: "header",
              name: "webhook-id",
              ...header("the event's id (msg_…), the same on every retry: deduplicate on it"),
            },
            {
              in: "header",
              name: "webhook-timestamp",
              ...header("seconds since the epoch, when this attempt was signed"),
            },
            {
              in: "header",
              name: "webhook-signature",
              ...header(
                "`v1,` and the base64 HMAC-SHA256 of `id.timestamp.body` under the secret; two, space-separated, while a rotated secret overlaps",
              ),
            },
          ],
          requestBody: {
            required: true,
            content: { "application/json": { schema: webhookMessageSchema(type) } },
          },
          responses: {
            "2XX": { description: "delivered" },
            "410": { description: "gone: the endpoint is disabled and gets nothing more" },
            default: {
              description:
                "anything else (or no answer within 10 s) is tried again: within 30 s, then with back-off for a day",
            },
          },
        },
      },
    ]),
  );
}

const CALL_EVENTS = new Set(["call.ended", "call.dispositioned"]);
const LEAD_EVENTS = new Set(["lead.completed", "lead.exhausted"]);

/**
 * Events about a call or a lead are written with its id only, in the dialer's own statement;
 * their record is read when they are first sent (a retry sends the body first sent). Returns
 * each delivery's payload to send.
 */
export async function completePayloads(
  db: Executor,
  deliveries: readonly LeasedDelivery[],
): Promise<Map<string, LeasedDelivery["payload"]>> {
  const reference = (delivery: LeasedDelivery, key: string) =>
    typeof delivery.payload.data[key] === "string"
      ? (delivery.payload.data[key] as string)
      : undefined;
  const unsent = deliveries.filter((d) => d.body === null);
  const callIds = unsent
    .filter((d) => CALL_EVENTS.has(d.type) && !d.payload.data.cdr)
    .flatMap((d) => reference(d, "call_id") ?? []);
  const leadIds = unsent
    .filter((d) => LEAD_EVENTS.has(d.type) && !d.payload.data.lead)
    .flatMap((d) => reference(d, "lead_id") ?? []);
  const [cdrs, leads] = await Promise.all([
    namedCdrsOfCalls(db, [...new Set(callIds)]),
    findLeadsByIds(db, [...new Set(leadIds)]),
  ]);
  const cdrOf = new Map(cdrs.map((row) => [row.callId, cdrView(row)]));
  const leadOf = new Map(leads.map((row) => [row.id, leadView(row)]));
  const payloads = new Map<string, LeasedDelivery["payload"]>();
  for (const delivery of deliveries) {
    const callId = reference(delivery, "call_id");
    const leadId = reference(delivery, "lead_id");
    const cdr = CALL_EVENTS.has(delivery.type) && callId ? cdrOf.get(callId) : undefined;
    const lead = LEAD_EVENTS.has(delivery.type) && leadId ? leadOf.get(leadId) : undefined;
    const data = cdr ? { cdr } : lead ? { lead } : undefined;
    payloads.set(delivery.id, data ? { ...delivery.payload, data } : delivery.payload);
  }
  return payloads;
}
