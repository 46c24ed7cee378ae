import { sql } from "drizzle-orm";
import {
  boolean,
  index,
  integer,
  pgTable,
  primaryKey,
  text,
  uniqueIndex,
  uuid,
} from "drizzle-orm/pg-core";
import { heardOnCall, instant, placedUnder } from "./columns.ts";

export const CALL_OUTCOMES = [
  "answered",
  "no_answer",
  "busy",
  "failed",
  "machine",
  "abandoned",
  "cancelled",
] as const;

/** The tenant's do-not-call list: numbers never dialled and refused by imports. */
export const dncNumbers = pgTable(
  "dnc_numbers",
  {
    tenantId: uuid("tenant_id").notNull(),
    phone: text("phone").notNull(),
    /**
     * `api` (added by hand or integration), `disposition` (an agent's do_not_call) or
     * `keypress` (the lead's opt-out key during the abandon message).
     */
    source: text("source").notNull(),
    createdBy: text("created_by"),
    createdAt: instant("created_at").notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.tenantId, table.phone] }),
    index("dnc_numbers_created").on(table.tenantId, table.createdAt),
  ],
);

/**
 * Every do-not-call request, kept after the number leaves the list: some rules (Washington's)
 * bar calls for a time after the request itself.
 */
export const dncRequests = pgTable(
  "dnc_requests",
  {
    tenantId: uuid("tenant_id").notNull(),
    phone: text("phone").notNull(),
    source: text("source").notNull(),
    requestedAt: instant("requested_at").notNull(),
  },
  (table) => [index("dnc_requests_phone").on(table.tenantId, table.phone, table.requestedAt)],
);

/** One call detail record per finished call. */
export const cdrs = pgTable(
  "cdrs",
  {
    id: uuid("id").primaryKey(),
    tenantId: uuid("tenant_id").notNull(),
    callId: uuid("call_id").notNull().unique(),
    campaignId: uuid("campaign_id").notNull(),
    leadListId: uuid("lead_list_id").notNull(),
    leadId: uuid("lead_id").notNull(),
    edgeNodeId: uuid("edge_node_id"),
    agentId: uuid("agent_id"),
    phone: text("phone").notNull(),
    callerId: text("caller_id").notNull(),
    attempt: integer("attempt").notNull(),
    outcome: text("outcome", { enum: CALL_OUTCOMES }).notNull(),
    hangupCause: text("hangup_cause"),
    disposition: text("disposition"),
    /** The disposition was recorded by the service when the agent's wrap-up ran out. */
    dispositionAutomatic: boolean("disposition_automatic").notNull().default(false),
    /** What the disposition's code did to the lead (done, retry, callback, do_not_call). */
    dispositionOutcome: text("disposition_outcome"),
    /** What the agent wrote about the call, saved with the disposition. */
    notes: text("notes"),
    startedAt: instant("started_at").notNull(),
    answeredAt: instant("answered_at"),
    endedAt: instant("ended_at"),
    ringSeconds: integer("ring_seconds").notNull(),
    talkSeconds: integer("talk_seconds").notNull(),
    /** Milliseconds from the answer to the agent's audio, as the node measured it. */
    bridgeMs: integer("bridge_ms"),
    ...placedUnder(),
    ...heardOnCall(),
    createdAt: instant("created_at").notNull(),
  },
  (table) => [
    index("cdrs_tenant_started").on(table.tenantId, table.startedAt),
    index("cdrs_tenant_created").on(table.tenantId, table.createdAt, table.id),
    index("cdrs_campaign_created").on(table.campaignId, table.createdAt),
    // A lead's earlier attempts, shown to the agent who calls it again.
    index("cdrs_lead_started").on(table.tenantId, table.leadId, table.startedAt),
    // An agent's own calls of a day, and the callbacks an agent set.
    index("cdrs_agent_started")
      .on(table.tenantId, table.agentId, table.startedAt)
      .where(sql`${table.agentId} is not null`),
  ],
);

export const CALL_STATUSES = ["claimed", "ringing", "answered", "ended"] as const;

/** A dial job handed to an edge node, from its claim to its end. */
export const calls = pgTable(
  "calls",
  {
    id: uuid("id").primaryKey(),
    tenantId: uuid("tenant_id").notNull(),
    campaignId: uuid("campaign_id").notNull(),
    leadListId: uuid("lead_list_id").notNull(),
    leadId: uuid("lead_id").notNull(),
    edgeNodeId: uuid("edge_node_id").notNull(),
    /** The agent reserved (preview) or bridged (answered); null while none. */
    agentId: uuid("agent_id"),
    phone: text("phone").notNull(),
    callerId: text("caller_id").notNull(),
    attempt: integer("attempt").notNull(),
    timeoutSeconds: integer("timeout_seconds").notNull(),
    status: text("status", { enum: CALL_STATUSES }).notNull(),
    bridged: boolean("bridged").notNull(),
    machine: boolean("machine").notNull(),
    outcome: text("outcome", { enum: CALL_OUTCOMES }),
    hangupCause: text("hangup_cause"),
    disposition: text("disposition"),
    dispositionAutomatic: boolean("disposition_automatic").notNull().default(false),
    /** What the disposition's code did to the lead (done, retry, callback, do_not_call). */
    dispositionOutcome: text("disposition_outcome"),
    notes: text("notes"),
    leaseExpiresAt: instant("lease_expires_at").notNull(),
    claimedAt: instant("claimed_at").notNull(),
    ringingAt: instant("ringing_at"),
    answeredAt: instant("answered_at"),
    endedAt: instant("ended_at"),
    /** Milliseconds from the answer to the agent's audio, as the node reported it. */
    bridgeMs: integer("bridge_ms"),
    /** The node's `Idempotency-Key` of the claim that placed the call: a retry finds it. */
    claimKey: text("claim_key"),
    ...placedUnder(),
    ...heardOnCall(),
    updatedAt: instant("updated_at").notNull(),
  },
  (table) => [
    // Only live calls are looked for other than by id, and an ended call leaves both indexes:
    // each stays as small as the calls in flight, and ending a call costs one index entry.
    // A campaign's live calls, when its dialing state is loaded.
    index("calls_live_campaign").on(table.campaignId).where(sql`${table.status} <> 'ended'`),
    // The sweeper's scan: live calls by when their lease runs out.
    index("calls_live_lease").on(table.leaseExpiresAt).where(sql`${table.status} <> 'ended'`),
    // A claim replayed by its key; only claims that carried one are indexed.
    index("calls_claim_key")
      .on(table.edgeNodeId, table.claimKey)
      .where(sql`${table.claimKey} is not null`),
    // One live call to a number in a workspace: two claims of it, whatever their campaigns,
    // cannot both place one (the later finds the earlier's row, even uncommitted, and waits).
    uniqueIndex("calls_live_phone")
      .on(table.tenantId, table.phone)
      .where(sql`${table.status} <> 'ended'`),
    // A number's recent calls across the workspace: attempt caps and redial cool-downs.
    index("calls_tenant_phone_claimed").on(table.tenantId, table.phone, table.claimedAt),
  ],
);

/**
 * Keyed claims under way while several processes share the database: the process that takes
 * a node's key claims, and a repeat of the claim on another process waits for it, then hands
 * out the calls placed under the key. A row lives as long as its claim.
 */
export const nodeClaimKeys = pgTable(
  "node_claim_keys",
  {
    edgeNodeId: uuid("edge_node_id").notNull(),
    claimKey: text("claim_key").notNull(),
    takenAt: instant("taken_at").notNull(),
  },
  (table) => [primaryKey({ columns: [table.edgeNodeId, table.claimKey] })],
);
