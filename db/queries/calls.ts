import { and, count, desc, eq, getTableColumns, gte, lt, sql } from "drizzle-orm";
import type { Executor } from "../client.ts";
import { rowsOf } from "../rows.ts";
import {
  apiKeys,
  campaigns,
  cdrs,
  dncNumbers,
  dncRequests,
  nodes,
  users,
} from "../schema/index.ts";
import { arrayLiteral, isAnyUuid } from "../statement.ts";
import { paged } from "./paged.ts";
import { enqueueEvents, leadEvents, type OutboxEvent } from "./webhooks.ts";

export type CdrRow = typeof cdrs.$inferSelect;
/** A CDR as listed: with its agent's e-mail and its campaign's name. */
export type NamedCdrRow = CdrRow & { agentEmail: string | null; campaignName: string | null };

const namedCdr = {
  ...getTableColumns(cdrs),
  agentEmail: users.email,
  campaignName: campaigns.name,
};
export type DncRow = typeof dncNumbers.$inferSelect;
type PageParams = { limit: number; offset: number };

export interface CdrFilter {
  from?: Date | undefined;
  to?: Date | undefined;
  campaignId?: string | undefined;
  leadId?: string | undefined;
  outcome?: CdrRow["outcome"] | undefined;
  agentId?: string | undefined;
}

const cdrWhere = (tenantId: string, filter: CdrFilter) =>
  and(
    eq(cdrs.tenantId, tenantId),
    filter.from ? gte(cdrs.startedAt, filter.from) : undefined,
    filter.to ? lt(cdrs.startedAt, filter.to) : undefined,
    filter.campaignId ? eq(cdrs.campaignId, filter.campaignId) : undefined,
    filter.leadId ? eq(cdrs.leadId, filter.leadId) : undefined,
    filter.outcome ? eq(cdrs.outcome, filter.outcome) : undefined,
    filter.agentId ? eq(cdrs.agentId, filter.agentId) : undefined,
  );

/** CDRs newest first; `from` inclusive and `to` exclusive on `started_at`. */
export function listCdrs(
  db: Executor,
  { tenantId, filter, page }: { tenantId: string; filter: CdrFilter; page: PageParams },
) {
  const where = cdrWhere(tenantId, filter);
  return paged(
    db
      .select(namedCdr)
      .from(cdrs)
      .leftJoin(users, eq(users.id, cdrs.agentId))
      .leftJoin(campaigns, eq(campaigns.id, cdrs.campaignId))
      .where(where)
      .orderBy(desc(cdrs.createdAt), desc(cdrs.id))
      .limit(page.limit)
      .offset(page.offset),
    db.select({ total: count() }).from(cdrs).where(where),
  );
}

/** The CDRs of these calls, named as listed. */
export const namedCdrsOfCalls = (db: Executor, callIds: string[]) =>
  callIds.length === 0
    ? Promise.resolve([])
    : db
        .select(namedCdr)
        .from(cdrs)
        .leftJoin(users, eq(users.id, cdrs.agentId))
        .leftJoin(campaigns, eq(campaigns.id, cdrs.campaignId))
        .where(isAnyUuid(cdrs.callId, callIds));

/** The next page of CDRs after a (created_at, id) cursor, newest first: keyset paging for exports. */
export const cdrsBefore = (
  db: Executor,
  {
    tenantId,
    filter,
    cursor,
    limit,
  }: {
    tenantId: string;
    filter: CdrFilter;
    cursor: { createdAt: Date; id: string } | undefined;
    limit: number;
  },
) =>
  db
    .select(namedCdr)
    .from(cdrs)
    .leftJoin(users, eq(users.id, cdrs.agentId))
    .leftJoin(campaigns, eq(campaigns.id, cdrs.campaignId))
    .where(
      and(
        cdrWhere(tenantId, filter),
        cursor
          ? sql`(${cdrs.createdAt}, ${cdrs.id}) < (${cursor.createdAt.toISOString()}::timestamptz, ${cursor.id}::uuid)`
          : undefined,
      ),
    )
    .orderBy(desc(cdrs.createdAt), desc(cdrs.id))
    .limit(limit);

/** The webhook event of a number put on the list. */
const dncAdded = (
  entry: { tenantId: string; phone: string; source: string; createdBy: string | null },
  at: Date,
): OutboxEvent => ({
  type: "dnc.added",
  tenantId: entry.tenantId,
  orderKey: null,
  data: { phone: entry.phone, source: entry.source, added_by: entry.createdBy },
  at,
});

/**
 * The lock between the numbers put on a tenant's do-not-call list and what must see them all:
 * listings take it shared; an import's last look at the list (see `finishImport`) and a
 * number's removal take it exclusively, so that a number listed while a file was imported ends
 * its leads either way, and a listing and a removal of one number are never interleaved.
 */
export const DNC_LISTING_LOCK = 1_145_983_811;

/** Takes the tenant's listing lock, shared, until the transaction ends: before any listing. */
export const shareDncListing = (db: Executor, tenantId: string) =>
  db.execute(
    sql`select pg_advisory_xact_lock_shared(${DNC_LISTING_LOCK}::int, hashtext(${tenantId}::text))`,
  );

/** Takes the tenant's listing lock alone until the transaction ends: before a removal. */
export const holdDncListing = (db: Executor, tenantId: string) =>
  db.execute(
    sql`select pg_advisory_xact_lock(${DNC_LISTING_LOCK}::int, hashtext(${tenantId}::text))`,
  );

/**
 * Adds a number to the tenant's do-not-call list; an existing entry is kept as it was.
 * `added` says whether this call wrote it. An entry removed between the insert that met it
 * and the read of it is added again: the number is listed either way.
 */
export async function addDnc(
  db: Executor,
  row: DncRow,
): Promise<{ entry: DncRow; added: boolean }> {
  const inserted = await db.insert(dncNumbers).values(row).onConflictDoNothing().returning();
  if (inserted[0]) {
    const { tenantId, phone, source, createdAt: requestedAt } = inserted[0];
    await db.insert(dncRequests).values({ tenantId, phone, source, requestedAt });
    await enqueueEvents(db, [dncAdded(inserted[0], requestedAt)]);
    return { entry: inserted[0], added: true };
  }
  const [existing] = await db
    .select()
    .from(dncNumbers)
    .where(and(eq(dncNumbers.tenantId, row.tenantId), eq(dncNumbers.phone, row.phone)))
    .limit(1);
  return existing ? { entry: existing, added: false } : addDnc(db, row);
}

/** A tenant's number on its do-not-call list. */
type TenantPhone = { tenantId: string; phone: string };

export const findDnc = async (db: Executor, { tenantId, phone }: TenantPhone) =>
  (
    await db
      .select()
      .from(dncNumbers)
      .where(and(eq(dncNumbers.tenantId, tenantId), eq(dncNumbers.phone, phone)))
      .limit(1)
  )[0];

export const removeDnc = async (db: Executor, { tenantId, phone }: TenantPhone) =>
  (
    await db
      .delete(dncNumbers)
      .where(and(eq(dncNumbers.tenantId, tenantId), eq(dncNumbers.phone, phone)))
      .returning()
  )[0];

/** The tenant's list, newest first; `prefix` (`+` and digits) keeps the numbers starting so. */
export function listDnc(
  db: Executor,
  { tenantId, prefix, page }: { tenantId: string; prefix: string | undefined; page: PageParams },
) {
  const where = and(
    eq(dncNumbers.tenantId, tenantId),
    prefix ? sql`starts_with(${dncNumbers.phone}, ${prefix})` : undefined,
  );
  return paged(
    selectDncWithAdder(db)
      .where(where)
      .orderBy(desc(dncNumbers.createdAt), desc(dncNumbers.phone))
      .limit(page.limit)
      .offset(page.offset),
    db.select({ total: count() }).from(dncNumbers).where(where),
  );
}

/**
 * Do-not-call entries with who added each: a user's e-mail (an agent's, for a disposition),
 * `API key <name>`, or `edge node <name>` (the opt-out key pressed on its call).
 */
const selectDncWithAdder = (db: Executor) =>
  db
    .select({
      ...getTableColumns(dncNumbers),
      addedBy: sql<string | null>`coalesce(${users.email}, 'API key ' || ${apiKeys.name},
        'edge node ' || ${nodes.name})`,
    })
    .from(dncNumbers)
    .leftJoin(users, sql`${users.id}::text = ${dncNumbers.createdBy}`)
    .leftJoin(apiKeys, sql`${apiKeys.id}::text = ${dncNumbers.createdBy}`)
    .leftJoin(nodes, sql`${nodes.id}::text = ${dncNumbers.createdBy}`);

/** One entry of a tenant's list, with who added it. */
export const findDncEntry = async (db: Executor, params: { tenantId: string; phone: string }) =>
  (
    await selectDncWithAdder(db).where(
      and(eq(dncNumbers.tenantId, params.tenantId), eq(dncNumbers.phone, params.phone)),
    )
  )[0];

/**
 * Ends the workspace's leads still to be dialled whose numbers are on its list: each becomes
 * `DoNotCall` (its state kept in `listed_from`), with its `lead.completed` event, in the
 * caller's transaction. A lead on a call is marked instead (`listed_from` its state): its
 * call's end reads the mark on the lead's row, which it waits for if this transaction has it,
 * and ends the lead `DoNotCall`. Only numbers still listed, as the list stands. Read through
 * each list's (list, phone) index. Returns the campaigns whose leads ended, whose counts (and
 * completion) then follow.
 *
 * `passLocked`: a lead another transaction holds is passed over, for a listing that has just
 * added its numbers: a call's statement holding the lead may be waiting for one of them, and
 * waiting for it in turn would be a circle. The listing's caller passes again after its
 * commit, waiting then; such a pass takes its leads in one order, so two never wait in a circle.
 */
export async function retireListedLeads(
  db: Executor,
  params: { tenantId: string; phones: readonly string[]; at: Date; passLocked: boolean },
): Promise<string[]> {
  if (params.phones.length === 0) return [];
  const changed = rowsOf<{ id: string; campaign_id: string; retired: boolean }>(
    await db.execute(sql`
      with listed as (
        select l.id from leads l join lead_lists ll on ll.id = l.lead_list_id
        where ll.tenant_id = ${params.tenantId}::uuid
          and l.phone = any(${arrayLiteral(params.phones)}::text[])
          and l.state in ('Fresh', 'Retry', 'Callback', 'Dialing', 'Connected')
          and exists (select 1 from dnc_numbers d where d.tenant_id = ll.tenant_id and d.phone = l.phone)
        ${params.passLocked ? sql.raw("for update of l skip locked") : sql.raw("order by l.id for update of l")})
      update leads l set listed_from = l.state,
        state = case when l.state in ${IN_FLIGHT} then l.state else 'DoNotCall' end,
        updated_at = ${params.at.toISOString()}::timestamptz
      from listed where l.id = listed.id
        and l.state in ('Fresh', 'Retry', 'Callback', 'Dialing', 'Connected')
      returning l.id::text, l.campaign_id::text, l.state = 'DoNotCall' as retired`),
  );
  const retired = changed.filter((row) => row.retired);
  await enqueueEvents(
    db,
    leadEvents(
      "lead.completed",
      params.tenantId,
      retired.map((row) => row.id),
      params.at,
    ),
  );
  return [...new Set(retired.map((row) => row.campaign_id))];
}

/** A lead's states while a call to it is under way. */
const IN_FLIGHT = sql.raw("('Dialing', 'Connected')");

/**
 * Gives the leads a listing ended their states back, the number having left the list (a
 * lead that asked not to be called, by disposition or key, was never `listed_from`), and
 * takes the mark off those on a call. Returns the campaigns whose leads changed.
 */
export async function restoreListedLeads(
  db: Executor,
  params: { tenantId: string; phone: string; at: Date },
): Promise<string[]> {
  const changed = rowsOf<{ campaign_id: string; restored: boolean }>(
    await db.execute(sql`
      update leads l set listed_from = null,
        state = case when l.state = 'DoNotCall' then l.listed_from else l.state end,
        updated_at = ${params.at.toISOString()}::timestamptz
      from lead_lists ll
      where ll.tenant_id = ${params.tenantId}::uuid and l.lead_list_id = ll.id
        and l.phone = ${params.phone} and l.listed_from is not null
        and (l.state = 'DoNotCall' or l.state in ${IN_FLIGHT})
      returning l.campaign_id::text, l.state not in ${IN_FLIGHT} as restored`),
  );
  return [...new Set(changed.filter((row) => row.restored).map((row) => row.campaign_id))];
}

/**
 * Adds many numbers at once (E.164, each once, in the order every caller uses: sorted);
 * those already listed are kept as they were. Returns the numbers this call added.
 */
export async function addDncMany(
  db: Executor,
  params: {
    tenantId: string;
    phones: string[];
    source: string;
    createdBy: string | null;
    at: Date;
  },
): Promise<string[]> {
  if (params.phones.length === 0) return [];
  const inserted = await db
    .insert(dncNumbers)
    .values(
      params.phones.map((phone) => ({
        tenantId: params.tenantId,
        phone,
        source: params.source,
        createdBy: params.createdBy,
        createdAt: params.at,
      })),
    )
    .onConflictDoNothing()
    .returning({ phone: dncNumbers.phone });
  if (inserted.length > 0) {
    await db.insert(dncRequests).values(
      inserted.map(({ phone }) => ({
        tenantId: params.tenantId,
        phone,
        source: params.source,
        requestedAt: params.at,
      })),
    );
    await enqueueEvents(
      db,
      inserted.map(({ phone }) => dncAdded({ ...params, phone }, params.at)),
    );
  }
  return inserted.map(({ phone }) => phone);
}
