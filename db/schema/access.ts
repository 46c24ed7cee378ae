import { index, integer, jsonb, pgTable, text, uuid } from "drizzle-orm/pg-core";
import { instant } from "./columns.ts";
import { tenants } from "./identity.ts";

export type ScopeLevel = "none" | "read" | "write";
export type Scopes = Partial<
  Record<"campaigns" | "leads" | "cdrs" | "users" | "webhooks", ScopeLevel>
>;

/** Workspace API keys. Only the SHA-256 of a key is stored, and a short prefix to show. */
export const apiKeys = pgTable(
  "api_keys",
  {
    id: uuid("id").primaryKey(),
    tenantId: uuid("tenant_id")
      .notNull()
      .references(() => tenants.id),
    name: text("name").notNull(),
    prefix: text("prefix").notNull(),
    keyHash: text("key_hash").notNull().unique(),
    scopes: jsonb("scopes").$type<Scopes>().notNull(),
    rateLimitPerMinute: integer("rate_limit_per_minute"),
    createdBy: uuid("created_by"),
    createdAt: instant("created_at").notNull(),
    lastUsedAt: instant("last_used_at"),
    revokedAt: instant("revoked_at"),
  },
  (table) => [index("api_keys_tenant_created").on(table.tenantId, table.createdAt, table.id)],
);

/** Telephony edge nodes; a node authenticates with a key whose SHA-256 is `api_key_hash`. */
export const nodes = pgTable(
  "nodes",
  {
    id: uuid("id").primaryKey(),
    tenantId: uuid("tenant_id")
      .notNull()
      .references(() => tenants.id),
    name: text("name").notNull(),
    maxConcurrentCalls: integer("max_concurrent_calls").notNull(),
    prefix: text("prefix").notNull(),
    apiKeyHash: text("api_key_hash").notNull().unique(),
    activeCalls: integer("active_calls").notNull(),
    lastHeartbeatAt: instant("last_heartbeat_at"),
    createdAt: instant("created_at").notNull(),
    updatedAt: instant("updated_at").notNull(),
    revokedAt: instant("revoked_at"),
  },
  (table) => [index("nodes_tenant_created").on(table.tenantId, table.createdAt, table.id)],
);
