import { and, count, eq, lt, ne, sql } from "drizzle-orm";
import type { Executor } from "../client.ts";
import { rowsOf } from "../rows.ts";
import { calls, campaigns, cdrs, leads } from "../schema/index.ts";

export type CallRow = typeof calls.$inferSelect;

export interface DialableLead {
  id: string;
  lead_list_id: string;
  phone: string;
  attempts: number;
  caller_id: string;
}

/**
 * Takes up to `limit` leads a campaign may dial now and marks them `Dialing`: due callbacks,
 * then due retries, then fresh leads in import order; only with attempts left, off the
 * do-not-call list, and inside the calling window in the lead's own time zone (DST-aware,
 * by the database's time-zone rules). Rows locked by a concurrent claim are skipped.
 */
export async function takeDialableLeads(
  db: Executor,
  params: {
    campaignId: string;
    now: Date;
    windowStart: string;
    windowEnd: string;
    maxAttempts: number;
    limit: number;
  },
): Promise<DialableLead[]> {
  const now = params.now.toISOString();
  const result = await db.execute(sql`
    update leads set state = 'Dialing', attempts = attempts + 1, updated_at = ${now}::timestamptz
    where id in (
      select l.id from leads l
      where l.campaign_id = ${params.campaignId}::uuid
        and l.attempts < ${params.maxAttempts}
        and (l.state = 'Fresh' or (l.state in ('Retry', 'Callback') and l.next_attempt_at <= ${now}::timestamptz))
        and not exists (select 1 from dnc_numbers d where d.tenant_id = l.tenant_id and d.phone = l.phone)
        and (timezone(l.timezone, ${now}::timestamptz))::time >= ${params.windowStart}::time
        and (timezone(l.timezone, ${now}::timestamptz))::time < ${params.windowEnd}::time
      order by case l.state when 'Callback' then 0 when 'Retry' then 1 else 2 end, l.next_attempt_at, l.seq
      limit ${params.limit}
      for update skip locked)
    returning id, lead_list_id, phone, attempts,
      (select ll.caller_id from lead_lists ll where ll.id = leads.lead_list_id) as caller_id`);
  return rowsOf<DialableLead>(result);
}

export const insertCalls = (db: Executor, rows: (typeof calls.$inferInsert)[]) =>
  rows.length ? db.insert(calls).values(rows) : Promise.resolve();

export const findNodeCall = async (db: Executor, nodeId: string, callId: string) =>
  (
    await db
      .select()
      .from(calls)
      .where(and(eq(calls.edgeNodeId, nodeId), eq(calls.id, callId)))
      .limit(1)
  )[0];

export const findTenantCall = async (db: Executor, tenantId: string, callId: string) =>
  (
    await db
      .select()
      .from(calls)
      .where(and(eq(calls.tenantId, tenantId), eq(calls.id, callId)))
      .limit(1)
  )[0];

export const updateCall = async (db: Executor, id: string, patch: Partial<CallRow>) =>
  (await db.update(calls).set(patch).where(eq(calls.id, id)).returning())[0] as CallRow;

/** Calls not yet ended, per node or per campaign. */
export async function countCallsInFlight(
  db: Executor,
  by: { nodeId?: string; campaignId?: string },
) {
  const where = and(
    ne(calls.status, "ended"),
    by.nodeId ? eq(calls.edgeNodeId, by.nodeId) : undefined,
    by.campaignId ? eq(calls.campaignId, by.campaignId) : undefined,
  );
  return (await db.select({ total: count() }).from(calls).where(where))[0]?.total ?? 0;
}

/** Calls of a campaign waiting for an answer or an agent: what pacing counts against. */
export async function countUnbridgedCalls(db: Executor, campaignId: string) {
  const where = and(
    eq(calls.campaignId, campaignId),
    ne(calls.status, "ended"),
    eq(calls.bridged, false),
  );
  return (await db.select({ total: count() }).from(calls).where(where))[0]?.total ?? 0;
}

export const runningCampaigns = (db: Executor, tenantId: string) =>
  db
    .select()
    .from(campaigns)
    .where(and(eq(campaigns.tenantId, tenantId), eq(campaigns.status, "running")))
    .orderBy(campaigns.createdAt, campaigns.id);

/** Calls not ended whose lease has run out; the sweeper decides which of them failed. */
export const expiredCalls = (db: Executor, now: Date) =>
  db
    .select()
    .from(calls)
    .where(and(ne(calls.status, "ended"), lt(calls.leaseExpiresAt, now)));

export const setLeadState = (
  db: Executor,
  leadId: string,
  patch: {
    state: (typeof leads.$inferSelect)["state"];
    nextAttemptAt?: Date | null;
    lastOutcome?: string;
    updatedAt: Date;
  },
) => db.update(leads).set(patch).where(eq(leads.id, leadId));

export const findLead = async (db: Executor, id: string) =>
  (await db.select().from(leads).where(eq(leads.id, id)).limit(1))[0];

export const insertCdr = (db: Executor, row: typeof cdrs.$inferInsert) =>
  db.insert(cdrs).values(row).onConflictDoNothing();

export const setCdrDisposition = (db: Executor, callId: string, disposition: string) =>
  db.update(cdrs).set({ disposition }).where(eq(cdrs.callId, callId));

/** Leads of a campaign not yet final, and whether it has any lead at all. */
export async function campaignProgress(db: Executor, campaignId: string) {
  const result = await db.execute(sql`
    select count(*)::int as total,
      count(*) filter (where state not in ('Completed', 'Exhausted', 'DoNotCall'))::int as open
    from leads where campaign_id = ${campaignId}::uuid`);
  return rowsOf<{ total: number; open: number }>(result)[0] ?? { total: 0, open: 0 };
}

/** Answered and abandoned calls of a campaign, for its abandon rate. */
export async function answerCounts(db: Executor, campaignId: string) {
  const result = await db.execute(sql`
    select count(*)::int as total,
      count(*) filter (where outcome in ('answered', 'abandoned', 'machine'))::int as picked_up,
      count(*) filter (where outcome = 'answered')::int as answered,
      count(*) filter (where outcome = 'abandoned')::int as abandoned
    from (select outcome from cdrs where campaign_id = ${campaignId}::uuid order by created_at desc limit 500) recent`);
  return (
    rowsOf<{ total: number; picked_up: number; answered: number; abandoned: number }>(
      result,
    )[0] ?? {
      total: 0,
      picked_up: 0,
      answered: 0,
      abandoned: 0,
    }
  );
}
