import { sql } from "drizzle-orm";
import {
  boolean,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  uniqueIndex,
  uuid,
} from "drizzle-orm/pg-core";
import { instant, timestamps } from "./columns.ts";

export const tenants = pgTable("tenants", {
  id: uuid("id").primaryKey(),
  name: text("name").notNull(),
  domain: text("domain").notNull().unique(),
  rateLimitPerMinute: integer("rate_limit_per_minute").notNull(),
  /** The regulatory profile a new campaign of the workspace starts with. */
  regulatoryProfile: text("regulatory_profile").notNull().default("us"),
  /** Why an agent may pause (break, lunch, …): `[{code, label}]`, in the order offered. */
  notReadyReasons: jsonb("not_ready_reasons")
    .$type<{ code: string; label: string }[]>()
    .notNull()
    .default(
      sql`'[{"code":"break","label":"Break"},{"code":"lunch","label":"Lunch"},{"code":"training","label":"Training"},{"code":"meeting","label":"Meeting"},{"code":"other","label":"Other"}]'::jsonb`,
    ),
  /** E.164 numbers outside the workspace an agent may transfer a call to. */
  transferNumbers: text("transfer_numbers").array().notNull().default(sql`'{}'::text[]`),
  ...timestamps(),
});

export const users = pgTable(
  "users",
  {
    id: uuid("id").primaryKey(),
    tenantId: uuid("tenant_id")
      .notNull()
      .references(() => tenants.id),
    email: text("email").notNull(),
    passwordHash: text("password_hash").notNull(),
    role: text("role", { enum: ["agent", "supervisor", "admin", "platform_admin"] }).notNull(),
    status: text("status", { enum: ["active", "disabled"] }).notNull(),
    mustChangePassword: boolean("must_change_password").notNull(),
    /** Raised by every update, so that memory never takes an older row over a newer one. */
    version: integer("version").notNull().default(1),
    /** The agent's phone as a SIP URI: edge nodes bridge answered calls to it. */
    phoneUri: text("phone_uri"),
    ...timestamps(),
  },
  (table) => [
    uniqueIndex("users_tenant_email_unique").on(table.tenantId, sql`lower(${table.email})`),
    index("users_email_lower").on(sql`lower(${table.email})`),
    index("users_tenant_created").on(table.tenantId, table.createdAt, table.id),
  ],
);

/** Consecutive failed logins per account (tenant + lower-cased e-mail), known e-mail or not. */
export const loginFailures = pgTable(
  "login_failures",
  {
    tenantId: uuid("tenant_id").notNull(),
    email: text("email").notNull(),
    failedCount: integer("failed_count").notNull(),
    lockedUntil: instant("locked_until"),
    lastFailedAt: instant("last_failed_at").notNull(),
  },
  (table) => [primaryKey({ columns: [table.tenantId, table.email] })],
);

export const auditEvents = pgTable(
  "audit_events",
  {
    id: uuid("id").primaryKey(),
    tenantId: uuid("tenant_id"),
    actorType: text("actor_type", {
      enum: ["user", "api_key", "edge_node", "system", "anonymous"],
    }).notNull(),
    actorId: text("actor_id"),
    action: text("action").notNull(),
    targetType: text("target_type"),
    targetId: text("target_id"),
    requestId: text("request_id"),
    details: jsonb("details").$type<Record<string, unknown>>().notNull(),
    createdAt: instant("created_at").notNull(),
  },
  (table) => [index("audit_events_tenant_created").on(table.tenantId, table.createdAt, table.id)],
);

/** Service-wide values the service creates for itself, such as a generated signing secret. */
export const serviceSettings = pgTable("service_settings", {
  key: text("key").primaryKey(),
  value: text("value").notNull(),
  createdAt: instant("created_at").notNull(),
});
