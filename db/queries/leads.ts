import { and, asc, count, desc, eq, gt, inArray, sql } from "drizzle-orm";
import type { Executor } from "../client.ts";
import { rowsOf } from "../rows.ts";
import { leadImportRejections, leadImports, leadLists, leads } from "../schema/index.ts";
import { isAnyUuid } from "../statement.ts";
import { paged } from "./paged.ts";
import { enqueueEvents, leadEvents } from "./webhooks.ts";

export type LeadListRow = typeof leadLists.$inferSelect;
export type LeadRow = typeof leads.$inferSelect;
export type LeadImportRow = typeof leadImports.$inferSelect;
export type LeadState = LeadRow["state"];

type PageParams = { limit: number; offset: number };

export const insertLeadList = async (db: Executor, row: typeof leadLists.$inferInsert) =>
  (await db.insert(leadLists).values(row).returning())[0] as LeadListRow;

export const findLeadList = async (
  db: Executor,
  { tenantId, campaignId, id }: { tenantId: string; campaignId: string; id: string },
) =>
  (
    await db
      .select()
      .from(leadLists)
      .where(
        and(
          eq(leadLists.tenantId, tenantId),
          eq(leadLists.campaignId, campaignId),
          eq(leadLists.id, id),
        ),
      )
      .limit(1)
  )[0];

export function listLeadLists(
  db: Executor,
  { tenantId, campaignId, page }: { tenantId: string; campaignId: string; page: PageParams },
) {
  const where = and(eq(leadLists.tenantId, tenantId), eq(leadLists.campaignId, campaignId));
  return paged(
    db
      .select()
      .from(leadLists)
      .where(where)
      .orderBy(desc(leadLists.createdAt), desc(leadLists.id))
      .limit(page.limit)
      .offset(page.offset),
    db.select({ total: count() }).from(leadLists).where(where),
  );
}

export function listLeads(
  db: Executor,
  {
    tenantId,
    leadListId,
    filter,
    page,
  }: {
    tenantId: string;
    leadListId: string;
    filter: { state?: LeadState | undefined; phone?: string | undefined };
    page: PageParams;
  },
) {
  // The tenant is checked on the list, not on each lead: the count then stays a scan of the
  // list's index alone, where a test of every lead's own tenant reads the table.
  const tenantsList = db
    .select({ id: leadLists.id })
    .from(leadLists)
    .where(and(eq(leadLists.tenantId, tenantId), eq(leadLists.id, leadListId)));
  const where = and(
    inArray(leads.leadListId, tenantsList),
    filter.state ? eq(leads.state, filter.state) : undefined,
    filter.phone ? eq(leads.phone, filter.phone) : undefined,
  );
  return paged(
    db
      .select()
      .from(leads)
      .where(where)
      .orderBy(desc(leads.createdAt), desc(leads.seq))
      .limit(page.limit)
      .offset(page.offset),
    db.select({ total: count() }).from(leads).where(where),
  );
}

/** Lead counts of a campaign by state. */
export const countLeadsByState = (db: Executor, campaignId: string) =>
  db
    .select({ state: leads.state, total: count() })
    .from(leads)
    .where(eq(leads.campaignId, campaignId))
    .groupBy(leads.state);

export function listLeadImports(
  db: Executor,
  { tenantId, leadListId, page }: { tenantId: string; leadListId: string; page: PageParams },
) {
  const where = and(eq(leadImports.tenantId, tenantId), eq(leadImports.leadListId, leadListId));
  return paged(
    db
      .select()
      .from(leadImports)
      .where(where)
      .orderBy(desc(leadImports.startedAt), desc(leadImports.id))
      .limit(page.limit)
      .offset(page.offset),
    db.select({ total: count() }).from(leadImports).where(where),
  );
}

export const findLeadImport = async (
  db: Executor,
  { tenantId, leadListId, id }: { tenantId: string; leadListId: string; id: string },
) =>
  (
    await db
      .select()
      .from(leadImports)
      .where(
        and(
          eq(leadImports.tenantId, tenantId),
          eq(leadImports.leadListId, leadListId),
          eq(leadImports.id, id),
        ),
      )
      .limit(1)
  )[0];

/** One page of an import's rejected rows after `afterRow`, in file order (keyset paging). */
export const rejectedRowsAfter = (
  db: Executor,
  { importId, afterRow, limit }: { importId: string; afterRow: number; limit: number },
) =>
  db
    .select()
    .from(leadImportRejections)
    .where(and(eq(leadImportRejections.importId, importId), gt(leadImportRejections.row, afterRow)))
    .orderBy(asc(leadImportRejections.row))
    .limit(limit);

/** Refreshes the planner's statistics on leads (a sample of at most 30,000 rows). */
export const analyzeLeads = async (db: Executor) => {
  await db.execute(sql`analyze leads`);
};

export const findLeadsByIds = (db: Executor, ids: string[]) =>
  ids.length === 0 ? Promise.resolve([]) : db.select().from(leads).where(isAnyUuid(leads.id, ids));

/**
 * Ends as `Exhausted` a campaign's leads waiting for a retry that their attempts no longer
 * allow (its `max_attempts` was lowered), each with its `lead.exhausted` event. A callback,
 * made whatever its attempts, is left as it is. Returns how many ended.
 */
export async function exhaustLeadsPastAttempts(
  db: Executor,
  params: { tenantId: string; campaignId: string; maxAttempts: number; at: Date },
): Promise<number> {
  const ended = rowsOf<{ id: string }>(
    await db.execute(sql`
      update leads set state = 'Exhausted', next_attempt_at = null,
        updated_at = ${params.at.toISOString()}::timestamptz
      where campaign_id = ${params.campaignId}::uuid and state = 'Retry'
        and attempts >= ${params.maxAttempts}
      returning id::text`),
  );
  await enqueueEvents(
    db,
    leadEvents(
      "lead.exhausted",
      params.tenantId,
      ended.map((row) => row.id),
      params.at,
    ),
  );
  return ended.length;
}
