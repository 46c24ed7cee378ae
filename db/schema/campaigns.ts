import {
  doublePrecision,
  index,
  integer,
  pgTable,
  primaryKey,
  text,
  uuid,
} from "drizzle-orm/pg-core";
import { instant } from "./columns.ts";
import { tenants } from "./identity.ts";

export const CAMPAIGN_STATUSES = ["draft", "running", "paused", "stopped", "completed"] as const;
export const DIAL_MODES = ["preview", "progressive", "predictive"] as const;

export const campaigns = pgTable(
  "campaigns",
  {
    id: uuid("id").primaryKey(),
    tenantId: uuid("tenant_id")
      .notNull()
      .references(() => tenants.id),
    name: text("name").notNull(),
    status: text("status", { enum: CAMPAIGN_STATUSES }).notNull(),
    dialMode: text("dial_mode", { enum: DIAL_MODES }).notNull(),
    callerId: text("caller_id"),
    callingWindowStart: text("calling_window_start").notNull(),
    callingWindowEnd: text("calling_window_end").notNull(),
    maxAttempts: integer("max_attempts").notNull(),
    retryDelaySeconds: integer("retry_delay_seconds").notNull(),
    dialRatio: doublePrecision("dial_ratio").notNull(),
    maxAbandonRate: doublePrecision("max_abandon_rate").notNull(),
    /** The rules its calls are placed under (`us`, `uk`, `ca`, `none`). */
    regulatoryProfile: text("regulatory_profile").notNull().default("us"),
    version: integer("version").notNull(),
    createdAt: instant("created_at").notNull(),
    updatedAt: instant("updated_at").notNull(),
  },
  // No index on `status`: a status change then updates the row in place on its page (a HOT
  // update, with room left by the table's fillfactor, set in its migration) instead of adding
  // an entry to every index; the status filter runs within a tenant's campaigns, and the
  // start-up read of running and paused campaigns scans the table once.
  (table) => [index("campaigns_tenant_created").on(table.tenantId, table.createdAt, table.id)],
);

/** Every status change, with who asked for it: the campaign's history. */
export const campaignStatusChanges = pgTable(
  "campaign_status_changes",
  {
    id: uuid("id").primaryKey(),
    tenantId: uuid("tenant_id").notNull(),
    campaignId: uuid("campaign_id")
      .notNull()
      .references(() => campaigns.id),
    action: text("action").notNull(),
    fromStatus: text("from_status", { enum: CAMPAIGN_STATUSES }).notNull(),
    toStatus: text("to_status", { enum: CAMPAIGN_STATUSES }).notNull(),
    actorType: text("actor_type").notNull(),
    actorId: text("actor_id"),
    requestId: text("request_id"),
    createdAt: instant("created_at").notNull(),
  },
  (table) => [
    index("campaign_status_changes_campaign").on(table.campaignId, table.createdAt, table.id),
  ],
);

/** The idempotency window of the status operation: the first response per key, for 60 s. */
export const campaignIdempotencyKeys = pgTable(
  "campaign_idempotency_keys",
  {
    campaignId: uuid("campaign_id")
      .notNull()
      .references(() => campaigns.id),
    key: text("key").notNull(),
    bodyHash: text("body_hash").notNull(),
    responseStatus: integer("response_status").notNull(),
    // The reply's JSON text as it was first sent, so that a replay is the same bytes.
    responseBody: text("response_body").notNull(),
    expiresAt: instant("expires_at").notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.campaignId, table.key] }),
    index("campaign_idempotency_keys_expiry").on(table.expiresAt),
  ],
);
