import { sql } from "drizzle-orm";
import {
  boolean,
  customType,
  doublePrecision,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  uuid,
} from "drizzle-orm/pg-core";
import { instant } from "./columns.ts";
import { tenants } from "./identity.ts";

export const CAMPAIGN_STATUSES = ["draft", "running", "paused", "stopped", "completed"] as const;
export const DIAL_MODES = ["preview", "progressive", "predictive"] as const;
/** What a campaign does with a call that answering-machine detection says a machine took. */
export const MACHINE_ACTIONS = ["hangup", "voicemail", "connect"] as const;
/** The recorded messages a campaign may have: see `campaign_messages`. */
export const MESSAGE_KINDS = ["abandon", "voicemail", "opt_out"] as const;

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
    /** The key a lead presses during the abandon message to be put on the do-not-call list. */
    optOutDigit: text("opt_out_digit").notNull().default("9"),
    amdEnabled: boolean("amd_enabled").notNull().default(false),
    /** How long detection may listen after the answer before it says `unknown`. */
    amdBudgetMs: integer("amd_budget_ms").notNull().default(3500),
    machineAction: text("machine_action", { enum: MACHINE_ACTIONS }).notNull().default("hangup"),
    /** The share of machine verdicts put through to agents anyway, to estimate false positives. */
    amdSamplePercent: doublePrecision("amd_sample_percent").notNull().default(0),
    /** How long an agent may take over a disposition before the default one is recorded (0: no limit). */
    wrapUpSeconds: integer("wrap_up_seconds").notNull().default(0),
    /** What agents pick at the end of a call, each with what it does to the lead. */
    dispositionCodes: jsonb("disposition_codes")
      .$type<{ code: string; label: string; hotkey: string | null; outcome: string }[]>()
      .notNull()
      .default(
        sql`'[{"code":"completed","label":"Completed","hotkey":"1","outcome":"done"},{"code":"callback","label":"Callback","hotkey":"2","outcome":"callback"},{"code":"do_not_call","label":"Do not call","hotkey":"3","outcome":"do_not_call"},{"code":"no_contact","label":"No contact","hotkey":"4","outcome":"retry"},{"code":"answering_machine","label":"Answering machine","hotkey":"5","outcome":"retry"},{"code":"wrong_number","label":"Wrong number","hotkey":"6","outcome":"done"}]'::jsonb`,
      ),
    /** The disposition a forgotten wrap-up ends with. */
    defaultDisposition: text("default_disposition").notNull().default("no_contact"),
    /** A breath for the agent between a disposition and the next call. */
    afterCallPauseSeconds: integer("after_call_pause_seconds").notNull().default(0),
    /** In preview, how long a lead offered to an agent waits for `Dial` before it is skipped. */
    previewTimeoutSeconds: integer("preview_timeout_seconds").notNull().default(60),
    /** The CRM page the agent desktop opens for a connected call: a template of the lead's values. */
    screenPopUrl: text("screen_pop_url"),
    /** The version of each stored message, null while there is none. */
    abandonMessageVersion: integer("abandon_message_version"),
    voicemailMessageVersion: integer("voicemail_message_version"),
    optOutMessageVersion: integer("opt_out_message_version"),
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

const bytea = customType<{ data: Uint8Array; driverData: Uint8Array }>({
  dataType: () => "bytea",
});

/**
 * A campaign's recorded messages, one row per kind. A deleted message keeps its row without
 * audio, so that versions only grow and a node's cache never mistakes an old one for new.
 */
export const campaignMessages = pgTable(
  "campaign_messages",
  {
    campaignId: uuid("campaign_id")
      .notNull()
      .references(() => campaigns.id),
    kind: text("kind", { enum: MESSAGE_KINDS }).notNull(),
    tenantId: uuid("tenant_id").notNull(),
    version: integer("version").notNull(),
    /** The WAV as stored; null once deleted. */
    audio: bytea("audio"),
    encoding: text("encoding").notNull(),
    sampleRate: integer("sample_rate").notNull(),
    durationMs: integer("duration_ms").notNull(),
    sha256: text("sha256").notNull(),
    converted: boolean("converted").notNull(),
    updatedBy: text("updated_by"),
    updatedAt: instant("updated_at").notNull(),
  },
  (table) => [primaryKey({ columns: [table.campaignId, table.kind] })],
);
