import { sql } from "drizzle-orm";
import {
  bigint,
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

/**
 * The outbox: one row per event, written in the transaction of the change it reports, for a
 * workspace with an endpoint that takes its type; never changed afterwards. Each endpoint
 * reads it in commit order from its cursor (`webhook_cursors`): `xid` is the writing
 * transaction's id, and every transaction whose id is below the oldest one still running has
 * ended, so that a cursor never passes an event yet to be committed.
 */
export const webhookEvents = pgTable(
  "webhook_events",
  {
    seq: bigserial("seq", { mode: "number" }).primaryKey(),
    xid: bigint("xid", { mode: "number" })
      .notNull()
      .default(sql`(pg_current_xact_id()::text::bigint)`),
    /** Standard Webhooks' `webhook-id`: the same for every endpoint and every retry. */
    eventId: text("event_id").notNull(),
    tenantId: uuid("tenant_id").notNull(),
    type: text("type").notNull(),
    /** The call or lead whose events an endpoint gets in order; null: the event's own. */
    orderKey: text("order_key"),
    /** The message's `data`: for a call's or a lead's event, its id, completed when sent. */
    data: jsonb("data").notNull(),
    /** The time of the change: the message's `timestamp`. */
    createdAt: instant("created_at").notNull(),
  },
  (table) => [index("webhook_events_tenant").on(table.tenantId, table.xid, table.seq)],
);

/**
 * Where each endpoint has read the outbox to: every event before (`xid`, `seq`) was delivered,
 * given up or moved to the retry queue. One process at a time holds a cursor, leased.
 */
export const webhookCursors = pgTable("webhook_cursors", {
  endpointId: uuid("endpoint_id")
    .primaryKey()
    .references(() => webhookEndpoints.id, { onDelete: "cascade" }),
  xid: bigint("xid", { mode: "number" }).notNull(),
  seq: bigint("seq", { mode: "number" }).notNull(),
  holder: text("holder"),
  leasedUntil: instant("leased_until"),
});

export const DELIVERY_STATUSES = ["pending", "delivered", "failed", "cancelled"] as const;

/**
 * The retry queue: an event an endpoint did not take at its first attempt, or one sent again
 * on request, delivered (at least once) by whichever process leases it first, with the
 * payload of its first attempt. `order_key` (a call's or a lead's id) keeps an endpoint's
 * events about one thing in order: an event whose key has one here waits here behind it.
 * Its pages are kept half empty (fillfactor 50, set by a migration: the schema builder has no
 * option for it), so that a lease updates its row in place.
 */
export const webhookDeliveries = pgTable(
  "webhook_deliveries",
  {
    id: uuid("id").primaryKey(),
    /** Standard Webhooks' `webhook-id`: the same for every endpoint and every retry. */
    eventId: text("event_id").notNull(),
    /** The outbox's event; null for a delivery queued before the outbox was read by cursor. */
    eventSeq: bigint("event_seq", { mode: "number" }),
    tenantId: uuid("tenant_id").notNull(),
    endpointId: uuid("endpoint_id").notNull(),
    type: text("type").notNull(),
    orderKey: text("order_key"),
    /** The event: `{type, timestamp, data}`, its data completed when first sent. */
    payload: jsonb("payload").notNull(),
    /** The message as first sent: every retry sends these bytes. */
    body: text("body"),
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
    /** The event's delivery to this endpoint: the same for its first attempt and retries. */
    deliveryId: uuid("delivery_id").notNull(),
    eventId: text("event_id").notNull(),
    /** The outbox's event, to send again on request. */
    eventSeq: bigint("event_seq", { mode: "number" }),
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
