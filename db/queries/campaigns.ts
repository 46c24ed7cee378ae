import { and, count, desc, eq, gt, inArray, sql } from "drizzle-orm";
import type { Executor, RawClient } from "../client.ts";
import { rowsOf } from "../rows.ts";
import { campaignIdempotencyKeys, campaignStatusChanges, campaigns } from "../schema/index.ts";
import { arrayLiteral, runStatement } from "../statement.ts";
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

/** One status change to commit: the campaign's new status, its history row and its reply. */
export interface StatusChange {
  campaignId: string;
  tenantId: string;
  /** The version the change was decided on; another version means someone else changed it. */
  expectedVersion: number;
  action: string;
  from: CampaignRow["status"];
  to: CampaignRow["status"];
  actorType: string;
  actorId: string | null;
  requestId: string | null;
  at: Date;
  idempotency?: IdempotencyRow | undefined;
}

/**
 * Status changes of different campaigns in one statement: each campaign's new status (only
 * if nobody changed it since `expectedVersion`), its history row and, when the request
 * carried one, its idempotency record. One round trip and one commit for the whole batch,
 * all or nothing. Written as text for the driver (see runStatement): it runs on every
 * status change. Returns the ids of the campaigns updated.
 */
export async function commitStatusChanges(
  raw: RawClient,
  changes: readonly StatusChange[],
): Promise<Set<string>> {
  const column = (pick: (change: StatusChange) => string | null) => arrayLiteral(changes.map(pick));
  const rows = await runStatement<{ id: string }>(raw, COMMIT_STATUS_CHANGES, [
    column((change) => change.campaignId),
    column((change) => String(change.expectedVersion)),
    column((change) => change.to),
    column((change) => change.at.toISOString()),
    column(() => Bun.randomUUIDv7()),
    column((change) => change.tenantId),
    column((change) => change.action),
    column((change) => change.from),
    column((change) => change.actorType),
    column((change) => change.actorId),
    column((change) => change.requestId),
    column((change) => change.idempotency?.key ?? null),
    column((change) => change.idempotency?.bodyHash ?? null),
    column((change) => (change.idempotency ? String(change.idempotency.responseStatus) : null)),
    column((change) => change.idempotency?.responseBody ?? null),
    column((change) => change.idempotency?.expiresAt.toISOString() ?? null),
  ]);
  return new Set(rows.map((row) => row.id));
}

const COMMIT_STATUS_CHANGES = `
  with change as (
    select * from unnest($1::uuid[], $2::int[], $3::text[], $4::timestamptz[], $5::uuid[],
      $6::uuid[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[],
      $13::text[], $14::int[], $15::text[], $16::timestamptz[])
      as c(campaign_id, expected_version, to_status, at, history_id, tenant_id, action,
        from_status, actor_type, actor_id, request_id, key, body_hash, response_status,
        response_body, expires_at)),
  updated as (
    update campaigns set status = c.to_status, version = campaigns.version + 1, updated_at = c.at
    from change c
    where campaigns.id = c.campaign_id and campaigns.version = c.expected_version
    returning campaigns.id),
  history as (
    insert into campaign_status_changes
      (id, tenant_id, campaign_id, action, from_status, to_status, actor_type, actor_id, request_id, created_at)
    select c.history_id, c.tenant_id, c.campaign_id, c.action, c.from_status, c.to_status,
      c.actor_type, c.actor_id, c.request_id, c.at
    from change c join updated u on u.id = c.campaign_id),
  remembered as (
    insert into campaign_idempotency_keys (campaign_id, key, body_hash, response_status, response_body, expires_at)
    select c.campaign_id, c.key, c.body_hash, c.response_status, c.response_body, c.expires_at
    from change c join updated u on u.id = c.campaign_id
    where c.key is not null
    on conflict (campaign_id, key) do update set body_hash = excluded.body_hash,
      response_status = excluded.response_status, response_body = excluded.response_body,
      expires_at = excluded.expires_at)
  select id::text from updated`;
