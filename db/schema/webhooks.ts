import { sql } from "drizzle-orm";
import {
  bigserial,
  boolean,
  index,
  integer,
  jsonb,
  pgTable,
  text,
  uuid,
} from "drizzle-orm/pg-core";
import { instant, timestamps } from "./columns.ts";
import { tenants } from "./identity.ts";

/** What a workspace's integrations may subscribe to. */
export const WEBHOOK_EVENT_TYPES = [
  "call.ended",
  "call.dispositioned",
  "lead.completed",
  "lead.exhausted",
  "campaign.status_changed",
  "dnc.added",
  "import.finished",
  "compliance.governor",
  "agent.state_changed",
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

export const WEBHOOK_STATUSES = ["enabled", "disabled"] as const;

/**
 * A receiver of a workspace's events. The signing secret is kept as given to the receiver
 * (an HMAC needs it); after a rotation the previous one also signs until it expires.
 */
export const webhookEndpoints = pgTable(
  "webhook_endpoints",
  {
    id: uuid("id").primaryKey(),
    tenantId: uuid("tenant_id")
      .notNull()
      .references(() => tenants.id),
    url: text("url").notNull(),
    description: text("description").notNull().default(""),
    eventTypes: text("event_types").array().$type<WebhookEventType[]>().notNull(),
    status: text("status", { enum: WEBHOOK_STATUSES }).notNull(),
    /** Why it was disabled: by an admin, a receiver's 410, or days of failures. */
    disabledReason: text("disabled_reason"),
    secret: text("secret").notNull(),
    previousSecret: text("previous_secret"),
    previousSecretExpiresAt: instant("previous_secret_expires_at"),
    /** The first failed attempt since the last success; null while it is healthy. */
    failingSince: instant("failing_since"),
    ...timestamps(),
  },
  (table) => [index("webhook_endpoints_tenant").on(table.tenantId, table.createdAt, table.id)],
);

export const DELIVERY_STATUSES = ["pending", "delivered", "failed", "cancelled"] as const;

/**
 * The outbox: one row per event and endpoint, written in the transaction of the change the
 * event reports, then delivered (at least once) by whichever process leases it first.
 * `order_key` (a call's or a lead's id) keeps an endpoint's events about one thing in order.
 * Its pages are kept half empty (fillfactor 50, set by a migration: the schema builder has no
 * option for it), so that a lease updates its row in place.
 */
export const webhookDeliveries = pgTable(
  "webhook_deliveries",
  {
    id: uuid("id").primaryKey(),
    /** Standard Webhooks' `webhook-id`: the same for every endpoint and every retry. */
    eventId: text("event_id").notNull(),
    tenantId: uuid("tenant_id").notNull(),
    endpointId: uuid("endpoint_id").notNull(),
    type: text("type").notNull(),
    orderKey: text("order_key"),
    /** The event as sent: `{type, timestamp, data}`. */
    payload: jsonb("payload").notNull(),
    /** Commit order, for the order per `order_key`. */
    seq: bigserial("seq", { mode: "number" }).notNull(),
    status: text("status", { enum: DELIVERY_STATUSES }).notNull().default("pending"),
    /**
     * The oldest pending event of its endpoint and `order_key`: the only one that may be sent.
     * Set when written with none before it, and on the next when one is settled.
     */
    ready: boolean("ready").notNull().default(true),
    attempts: integer("attempts").notNull().default(0),
    nextAttemptAt: instant("next_attempt_at").notNull(),
    /** Held by a process delivering it until then; a killed process's lease runs out. */
    leasedUntil: instant("leased_until"),
    createdAt: instant("created_at").notNull(),
    finishedAt: instant("finished_at"),
  },
  (table) => [
    index("webhook_deliveries_ready")
      .on(table.nextAttemptAt)
      .where(sql`${table.status} = 'pending' and ${table.ready}`),
    index("webhook_deliveries_order")
      .on(table.endpointId, table.orderKey, table.seq)
      .where(sql`${table.status} = 'pending'`),
  ],
);

/** Every attempt to deliver, as the receiver answered it: what `GET …/deliveries` lists. */
export const webhookAttempts = pgTable(
  "webhook_attempts",
  {
    id: uuid("id").primaryKey(),
    tenantId: uuid("tenant_id").notNull(),
    endpointId: uuid("endpoint_id").notNull(),
    deliveryId: uuid("delivery_id").notNull(),
    eventId: text("event_id").notNull(),
    eventType: text("event_type").notNull(),
    attempt: integer("attempt").notNull(),
    attemptedAt: instant("attempted_at").notNull(),
    durationMs: integer("duration_ms").notNull(),
    responseStatus: integer("response_status"),
    /** The answer's first bytes, as text. */
    responseBody: text("response_body"),
    /** Why no answer was read: a time-out, a refused address, a failed connection. */
    error: text("error"),
  },
  (table) => [index("webhook_attempts_endpoint").on(table.endpointId, table.attemptedAt, table.id)],
);
