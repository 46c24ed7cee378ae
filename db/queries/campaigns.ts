import { and, count, desc, eq, gt, inArray, sql } from "drizzle-orm";
import type { Executor, RawClient } from "../client.ts";
import { rowsOf } from "../rows.ts";
import { campaignIdempotencyKeys, campaignStatusChanges, campaigns } from "../schema/index.ts";
import { runStatement } from "../statement.ts";
import { paged } from "./paged.ts";

export type CampaignRow = typeof campaigns.$inferSelect;
export type CampaignStatusChangeRow = typeof campaignStatusChanges.$inferSelect;
export type IdempotencyRow = typeof campaignIdempotencyKeys.$inferSelect;
export type CampaignSettings = Omit<
  CampaignRow,
  "id" | "tenantId" | "status" | "version" | "createdAt" | "updatedAt"
>;

export const insertCampaign = async (db: Executor, row: typeof campaigns.$inferInsert) =>
  (await db.insert(campaigns).values(row).returning())[0] as CampaignRow;

export const findCampaign = async (db: Executor, id: string) =>
  (await db.select().from(campaigns).where(eq(campaigns.id, id)).limit(1))[0];

export const findTenantCampaign = async (db: Executor, tenantId: string, id: string) =>
  (
    await db
      .select()
      .from(campaigns)
      .where(and(eq(campaigns.tenantId, tenantId), eq(campaigns.id, id)))
      .limit(1)
  )[0];

export function listTenantCampaigns(
  db: Executor,
  tenantId: string,
  filter: { status?: CampaignRow["status"] | undefined },
  page: { limit: number; offset: number },
) {
  const where = and(
    eq(campaigns.tenantId, tenantId),
    filter.status ? eq(campaigns.status, filter.status) : undefined,
  );
  return paged(
    db
      .select()
      .from(campaigns)
      .where(where)
      .orderBy(desc(campaigns.createdAt), desc(campaigns.id))
      .limit(page.limit)
      .offset(page.offset),
    db.select({ total: count() }).from(campaigns).where(where),
  );
}

export const listCampaignsInStatus = (db: Executor, statuses: CampaignRow["status"][]) =>
  db.select().from(campaigns).where(inArray(campaigns.status, statuses));

export const updateCampaignSettings = async (
  db: Executor,
  params: {
    id: string;
    expectedVersion: number;
    settings: Partial<CampaignSettings>;
    updatedAt: Date;
  },
) =>
  (
    await db
      .update(campaigns)
      .set({ ...params.settings, version: params.expectedVersion + 1, updatedAt: params.updatedAt })
      .where(and(eq(campaigns.id, params.id), eq(campaigns.version, params.expectedVersion)))
      .returning()
  )[0];

export const listStatusChanges = (
  db: Executor,
  campaignId: string,
  page: { limit: number; offset: number },
) =>
  paged(
    db
      .select()
      .from(campaignStatusChanges)
      .where(eq(campaignStatusChanges.campaignId, campaignId))
      .orderBy(desc(campaignStatusChanges.createdAt), desc(campaignStatusChanges.id))
      .limit(page.limit)
      .offset(page.offset),
    db
      .select({ total: count() })
      .from(campaignStatusChanges)
      .where(eq(campaignStatusChanges.campaignId, campaignId)),
  );

export const insertIdempotencyKey = (db: Executor, row: IdempotencyRow) =>
  db
    .insert(campaignIdempotencyKeys)
    .values(row)
    .onConflictDoUpdate({
      // A key whose window expired may be reused: the new request replaces the old record.
      target: [campaignIdempotencyKeys.campaignId, campaignIdempotencyKeys.key],
      set: {
        bodyHash: row.bodyHash,
        responseStatus: row.responseStatus,
        responseBody: row.responseBody,
        expiresAt: row.expiresAt,
      },
    });

export const listOpenIdempotencyKeys = (db: Executor, campaignIds: string[], now: Date) =>
  db
    .select()
    .from(campaignIdempotencyKeys)
    .where(
      and(
        inArray(campaignIdempotencyKeys.campaignId, campaignIds),
        gt(campaignIdempotencyKeys.expiresAt, now),
      ),
    )
    // In expiry order: the actor's window relies on its oldest entry coming first.
    .orderBy(campaignIdempotencyKeys.expiresAt);

/** Deletes at most `limit` of the records expired by `now`, oldest first; returns how many. */
export async function deleteExpiredIdempotencyKeys(
  db: Executor,
  now: Date,
  limit: number,
): Promise<number> {
  const result = await db.execute(sql`
    with expired as (
      select campaign_id, key from campaign_idempotency_keys
      where expires_at <= ${now.toISOString()}::timestamptz
      order by expires_at limit ${limit}),
    deleted as (
      delete from campaign_idempotency_keys k using expired e
      where k.campaign_id = e.campaign_id and k.key = e.key
      returning 1)
    select count(*)::int as deleted from deleted`);
  return rowsOf<{ deleted: number }>(result)[0]?.deleted ?? 0;
}

/**
 * A status change in one statement: the new status (only if nobody changed the campaign since
 * `expectedVersion`), its history row and, when the request carried one, its idempotency
 * record. One round trip instead of a transaction of three; all or nothing all the same.
 * Written as text for the driver (see runStatement): it runs on every status change.
 * Returns whether the campaign was updated.
 */
export async function commitStatusChange(
  raw: RawClient,
  change: {
    campaignId: string;
    tenantId: string;
    expectedVersion: number;
    action: string;
    from: CampaignRow["status"];
    to: CampaignRow["status"];
    actorType: string;
    actorId: string | null;
    requestId: string | null;
    at: Date;
    idempotency?: IdempotencyRow | undefined;
  },
): Promise<boolean> {
  const at = change.at.toISOString();
  const key = change.idempotency;
  const rows = await runStatement<{ updated: number }>(raw, COMMIT_STATUS_CHANGE, [
    change.to,
    at,
    change.campaignId,
    change.expectedVersion,
    Bun.randomUUIDv7(),
    change.tenantId,
    change.action,
    change.from,
    change.actorType,
    change.actorId,
    change.requestId,
    key !== undefined,
    key?.key ?? "",
    key?.bodyHash ?? "",
    key?.responseStatus ?? 0,
    key?.responseBody ?? "",
    key?.expiresAt.toISOString() ?? at,
  ]);
  return (rows[0]?.updated ?? 0) > 0;
}

const COMMIT_STATUS_CHANGE = `
  with updated as (
    update campaigns set status = $1, version = version + 1, updated_at = $2::timestamptz
    where id = $3::uuid and version = $4::int
    returning id),
  history as (
    insert into campaign_status_changes
      (id, tenant_id, campaign_id, action, from_status, to_status, actor_type, actor_id, request_id, created_at)
    select $5::uuid, $6::uuid, id, $7, $8, $1, $9, $10, $11, $2::timestamptz
    from updated),
  remembered as (
    insert into campaign_idempotency_keys (campaign_id, key, body_hash, response_status, response_body, expires_at)
    select id, $13, $14, $15::int, $16, $17::timestamptz
    from updated where $12::boolean
    on conflict (campaign_id, key) do update set body_hash = excluded.body_hash,
      response_status = excluded.response_status, response_body = excluded.response_body,
      expires_at = excluded.expires_at)
  select count(*)::int as updated from updated`;
