import {
  bigserial,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  uniqueIndex,
  uuid,
} from "drizzle-orm/pg-core";
import { campaigns } from "./campaigns.ts";
import { instant, timestamps } from "./columns.ts";
import { tenants } from "./identity.ts";

export const LEAD_STATES = [
  "Fresh",
  "Dialing",
  "Connected",
  "Retry",
  "Callback",
  "Completed",
  "Exhausted",
  "DoNotCall",
] as const;

export const leadLists = pgTable(
  "lead_lists",
  {
    id: uuid("id").primaryKey(),
    tenantId: uuid("tenant_id")
      .notNull()
      .references(() => tenants.id),
    campaignId: uuid("campaign_id")
      .notNull()
      .references(() => campaigns.id),
    name: text("name").notNull(),
    callerId: text("caller_id").notNull(),
    leadCount: integer("lead_count").notNull(),
    ...timestamps(),
  },
  (table) => [index("lead_lists_campaign_created").on(table.campaignId, table.createdAt, table.id)],
);

export const leads = pgTable(
  "leads",
  {
    id: uuid("id").primaryKey(),
    /** Import order across the table: fresh leads are dialled in this order. */
    seq: bigserial("seq", { mode: "number" }).notNull(),
    tenantId: uuid("tenant_id").notNull(),
    campaignId: uuid("campaign_id").notNull(),
    leadListId: uuid("lead_list_id")
      .notNull()
      .references(() => leadLists.id),
    importId: uuid("import_id").notNull(),
    importRow: integer("import_row").notNull(),
    phone: text("phone").notNull(),
    timezone: text("timezone").notNull(),
    /** Where the zone came from: the file's `column`, the `number`, or the import's `default`. */
    zoneSource: text("zone_source", { enum: ["column", "number", "default"] })
      .notNull()
      .default("column"),
    state: text("state", { enum: LEAD_STATES }).notNull(),
    attempts: integer("attempts").notNull(),
    fields: jsonb("fields").$type<Record<string, string>>().notNull(),
    nextAttemptAt: instant("next_attempt_at"),
    lastOutcome: text("last_outcome"),
    /**
     * The state a lead was in when its number was put on the do-not-call list, which made it
     * `DoNotCall`: taken back if the number leaves the list. Null otherwise.
     */
    listedFrom: text("listed_from", { enum: LEAD_STATES }),
    ...timestamps(),
  },
  (table) => [
    uniqueIndex("leads_list_phone_unique").on(table.leadListId, table.phone),
    index("leads_list_created").on(table.leadListId, table.createdAt, table.id),
    // A hopper refill reads each dialable state in its own order, stopping early.
    index("leads_campaign_state_seq").on(table.campaignId, table.state, table.seq),
    index("leads_campaign_state_due").on(table.campaignId, table.state, table.nextAttemptAt),
  ],
);

export const leadImports = pgTable(
  "lead_imports",
  {
    id: uuid("id").primaryKey(),
    tenantId: uuid("tenant_id").notNull(),
    campaignId: uuid("campaign_id").notNull(),
    leadListId: uuid("lead_list_id")
      .notNull()
      .references(() => leadLists.id),
    fileName: text("file_name"),
    /** The file's header row as it was, for the rejected-rows export. */
    header: jsonb("header").$type<string[]>().notNull(),
    imported: integer("imported").notNull(),
    rejected: integer("rejected").notNull(),
    errors: jsonb("errors")
      .$type<{ row: number; column: string | null; reason: string }[]>()
      .notNull(),
    actorType: text("actor_type").notNull(),
    actorId: text("actor_id"),
    requestId: text("request_id"),
    startedAt: instant("started_at").notNull(),
    finishedAt: instant("finished_at").notNull(),
  },
  (table) => [index("lead_imports_list_started").on(table.leadListId, table.startedAt, table.id)],
);

/** Every rejected row of an import, as it was in the file, with why. */
export const leadImportRejections = pgTable(
  "lead_import_rejections",
  {
    importId: uuid("import_id")
      .notNull()
      .references(() => leadImports.id),
    row: integer("row").notNull(),
    columnName: text("column_name"),
    reason: text("reason").notNull(),
    cells: jsonb("cells").$type<string[]>().notNull(),
  },
  (table) => [primaryKey({ columns: [table.importId, table.row] })],
);
