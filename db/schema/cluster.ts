import { sql } from "drizzle-orm";
import {
  bigint,
  boolean,
  index,
  integer,
  jsonb,
  pgSequence,
  pgTable,
  primaryKey,
  text,
  uniqueIndex,
  uuid,
} from "drizzle-orm/pg-core";
import { instant } from "./columns.ts";

/** Fencing tokens: every lease taken gets a larger one than any before it. */
export const campaignLeaseTokens = pgSequence("campaign_lease_tokens");

/**
 * Which process owns a campaign (runs its actor and commits its writes) when several share
 * one PostgreSQL database. A lease past `expires_at` (by the database's clock) may be taken by
 * another process, with a new token; every write of the campaign checks the token it holds.
 */
export const campaignLeases = pgTable(
  "campaign_leases",
  {
    campaignId: uuid("campaign_id").primaryKey(),
    /** The owning process's instance id (random per start). */
    owner: uuid("owner").notNull(),
    /** Where the owner takes forwarded requests (its own loopback or private address). */
    ownerUrl: text("owner_url").notNull(),
    token: bigint("token", { mode: "number" }).notNull(),
    expiresAt: instant("expires_at").notNull(),
  },
  (table) => [index("campaign_leases_owner").on(table.owner)],
);

/**
 * Where each agent is (state, campaign, call), kept so that a restart or another process
 * carries on from it. `grace_until` is when an agent whose socket went away is signed out:
 * null while no socket ever held it (an agent driven over REST only), pushed forward while a
 * socket holds it, fixed when the socket closes.
 */
export const agentPresence = pgTable(
  "agent_presence",
  {
    userId: uuid("user_id").primaryKey(),
    tenantId: uuid("tenant_id").notNull(),
    state: text("state").notNull(),
    campaignId: uuid("campaign_id"),
    callId: uuid("call_id"),
    since: instant("since").notNull(),
    /** Why a paused agent is not ready (a workspace's reason), or the pause asked for after the call. */
    reason: text("reason"),
    /** The agent asked to pause during a call or its wrap-up: paused once it is dispositioned. */
    pauseAfterCall: boolean("pause_after_call").notNull().default(false),
    /** The end of the agent's breath after a call, when it is ready again by itself. */
    readyAt: instant("ready_at"),
    graceUntil: instant("grace_until"),
    /** Raised by every change: a process adopting another's change ignores older rows. */
    version: bigint("version", { mode: "number" }).notNull().default(1),
  },
  (table) => [
    index("agent_presence_campaign").on(table.campaignId),
    index("agent_presence_grace").on(table.graceUntil).where(sql`${table.graceUntil} is not null`),
  ],
);

/**
 * Each state an agent left, with its reason and how long it lasted: what the figures of a
 * day count (time paused for each reason, in wrap-up, on calls). Written by the statement
 * that writes the agent's next state.
 */
export const agentStateLog = pgTable(
  "agent_state_log",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    tenantId: uuid("tenant_id").notNull(),
    userId: uuid("user_id").notNull(),
    state: text("state").notNull(),
    reason: text("reason"),
    campaignId: uuid("campaign_id"),
    startedAt: instant("started_at").notNull(),
    endedAt: instant("ended_at").notNull(),
  },
  (table) => [index("agent_state_log_user").on(table.tenantId, table.userId, table.endedAt)],
);

/** Requests counted per rate-limit key and 5-second bucket, summed across processes. */
export const rateLimitHits = pgTable(
  "rate_limit_hits",
  {
    key: text("key").notNull(),
    bucket: bigint("bucket", { mode: "number" }).notNull(),
    hits: integer("hits").notNull(),
  },
  (table) => [primaryKey({ columns: [table.key, table.bucket] })],
);

/** Live pushes too large for a NOTIFY payload, passed to other processes by reference. */
export const clusterMessages = pgTable("cluster_messages", {
  id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
  payload: text("payload").notNull(),
  createdAt: instant("created_at").notNull(),
});

export const NODE_COMMAND_TYPES = ["hangup", "transfer", "dial"] as const;
export type NodeCommandType = (typeof NODE_COMMAND_TYPES)[number];

/**
 * What the service asks of an edge node for one of its calls. A command stays until the node
 * acknowledges it, and every poll of the node hands out those it has not acknowledged, so a
 * node that reconnects, or polls another process, still gets it; the node acts on an id once.
 */
export const nodeCommands = pgTable(
  "node_commands",
  {
    id: uuid("id").primaryKey(),
    tenantId: uuid("tenant_id").notNull(),
    edgeNodeId: uuid("edge_node_id").notNull(),
    callId: uuid("call_id").notNull(),
    type: text("type", { enum: NODE_COMMAND_TYPES }).notNull(),
    /** The command's own fields, as the node receives them. */
    payload: jsonb("payload").$type<Record<string, unknown>>().notNull(),
    createdAt: instant("created_at").notNull(),
    /** The last time a poll handed it out, and how many polls did. */
    deliveredAt: instant("delivered_at"),
    deliveries: integer("deliveries").notNull().default(0),
    ackedAt: instant("acked_at"),
  },
  (table) => [
    index("node_commands_pending")
      .on(table.edgeNodeId, table.createdAt)
      .where(sql`${table.ackedAt} is null`),
    index("node_commands_created").on(table.createdAt),
  ],
);

export const ALERT_KINDS = [
  "abandon_budget",
  "governor_hold",
  "no_agents",
  "node_silent",
  "webhook_disabled",
] as const;

/**
 * What supervisors should look at now: a campaign near its abandon limit, held by the
 * governor, or with nobody to take its calls; an edge node gone silent. One open alert per
 * kind and subject; it is closed (`cleared_at`) when the condition ends, and kept.
 */
export const alerts = pgTable(
  "alerts",
  {
    id: uuid("id").primaryKey(),
    tenantId: uuid("tenant_id").notNull(),
    kind: text("kind", { enum: ALERT_KINDS }).notNull(),
    /** The campaign, or the node, it is about. */
    subjectId: uuid("subject_id").notNull(),
    message: text("message").notNull(),
    raisedAt: instant("raised_at").notNull(),
    clearedAt: instant("cleared_at"),
  },
  (table) => [
    uniqueIndex("alerts_open")
      .on(table.tenantId, table.kind, table.subjectId)
      .where(sql`${table.clearedAt} is null`),
    index("alerts_tenant_raised").on(table.tenantId, table.raisedAt),
  ],
);
