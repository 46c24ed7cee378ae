import { and, count, desc, eq, getTableColumns, gt, inArray, sql } from "drizzle-orm";
import type { Executor, RawClient } from "../client.ts";
import { type CommitNotice, noticeChunks } from "../commit-notices.ts";
import { type Fence, fenced } from "../fence.ts";
import { rowsOf } from "../rows.ts";
import {
  campaignIdempotencyKeys,
  campaignStatusChanges,
  campaigns,
  users,
} from "../schema/index.ts";
import { arrayLiteral, isAnyUuid, runStatement } from "../statement.ts";
import { paged } from "./paged.ts";
import { outboxStatement } from "./webhooks.ts";

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

export const findTenantCampaign = async (
  db: Executor,
  params: { tenantId: string; campaignId: string },
) =>
  (
    await db
      .select()
      .from(campaigns)
      .where(and(eq(campaigns.tenantId, params.tenantId), eq(campaigns.id, params.campaignId)))
      .limit(1)
  )[0];

/** Which of `ids` are campaigns of the tenant; ids of other tenants are left out as unknown. */
export const tenantCampaignIds = async (
  db: Executor,
  params: { tenantId: string; ids: string[] },
): Promise<string[]> =>
  params.ids.length === 0
    ? []
    : (
        await db
          .select({ id: campaigns.id })
          .from(campaigns)
          .where(and(eq(campaigns.tenantId, params.tenantId), isAnyUuid(campaigns.id, params.ids)))
      ).map((row) => row.id);

export function listTenantCampaigns(
  db: Executor,
  params: {
    tenantId: string;
    status?: CampaignRow["status"] | undefined;
    page: { limit: number; offset: number };
  },
) {
  const { page } = params;
  const where = and(
    eq(campaigns.tenantId, params.tenantId),
    params.status ? eq(campaigns.status, params.status) : undefined,
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
    fence: Fence;
    expectedVersion: number;
    settings: Partial<CampaignSettings>;
    updatedAt: Date;
  },
) =>
  (
    await db
      .update(campaigns)
      .set({ ...params.settings, version: params.expectedVersion + 1, updatedAt: params.updatedAt })
      .where(
        and(
          eq(campaigns.id, params.id),
          eq(campaigns.version, params.expectedVersion),
          fenced(params.fence),
        ),
      )
      .returning()
  )[0];

export const listStatusChanges = (
  db: Executor,
  { campaignId, page }: { campaignId: string; page: { limit: number; offset: number } },
) =>
  paged(
    db
      .select({ ...getTableColumns(campaignStatusChanges), actorEmail: users.email })
      .from(campaignStatusChanges)
      .leftJoin(users, sql`${users.id}::text = ${campaignStatusChanges.actorId}`)
      .where(eq(campaignStatusChanges.campaignId, campaignId))
      .orderBy(desc(campaignStatusChanges.createdAt), desc(campaignStatusChanges.id))
      .limit(page.limit)
      .offset(page.offset),
    db
      .select({ total: count() })
      .from(campaignStatusChanges)
      .where(eq(campaignStatusChanges.campaignId, campaignId)),
  );

/**
 * Records a reply under its key (a refusal: a change's own reply goes with the change). Fenced:
 * a process that lost the campaign records nothing the new owner would replay.
 */
export const insertIdempotencyKey = (db: Executor, row: IdempotencyRow, fence: Fence) =>
  db.execute(sql`
    insert into campaign_idempotency_keys
      (campaign_id, key, body_hash, response_status, response_body, expires_at)
    select ${row.campaignId}::uuid, ${row.key}, ${row.bodyHash}, ${row.responseStatus},
      ${row.responseBody}, ${row.expiresAt.toISOString()}::timestamptz
    where ${fenced(fence)}
    -- A key whose window expired may be reused: the new request replaces the old record.
    on conflict (campaign_id, key) do update set body_hash = excluded.body_hash,
      response_status = excluded.response_status, response_body = excluded.response_body,
      expires_at = excluded.expires_at`);

export const listOpenIdempotencyKeys = (
  db: Executor,
  { campaignIds, now }: { campaignIds: string[]; now: Date },
) =>
  db
    .select()
    .from(campaignIdempotencyKeys)
    .where(
      and(
        isAnyUuid(campaignIdempotencyKeys.campaignId, campaignIds),
        gt(campaignIdempotencyKeys.expiresAt, now),
      ),
    )
    // In expiry order: the actor's window relies on its oldest entry coming first.
    .orderBy(campaignIdempotencyKeys.expiresAt);

/** Deletes at most `limit` of the records expired by `now`, oldest first; returns how many. */
export async function deleteExpiredIdempotencyKeys(
  db: Executor,
  { now, limit }: { now: Date; limit: number },
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
  /** The fencing token of the campaign's lease (null where one process owns everything). */
  leaseToken: number | null;
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
  /** The change's push to other processes, notified in the same commit if the change is made. */
  push?: CommitNotice | undefined;
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
  const values = (change: StatusChange): (string | null)[] => [
    change.campaignId,
    change.leaseToken === null ? null : String(change.leaseToken),
    String(change.expectedVersion),
    change.to,
    change.at.toISOString(),
    Bun.randomUUIDv7(),
    change.tenantId,
    change.action,
    change.from,
    change.actorType,
    change.actorId,
    change.requestId,
    change.idempotency?.key ?? null,
    change.idempotency?.bodyHash ?? null,
    change.idempotency ? String(change.idempotency.responseStatus) : null,
    change.idempotency?.responseBody ?? null,
    change.idempotency?.expiresAt.toISOString() ?? null,
  ];
  const rows = changes.map(values);
  const [only] = rows;
  const notices = changes.find((change) => change.push)?.push?.notices;
  const pushes = changes.map((change) => change.push?.entry ?? null);
  const told = notices && [notices.channel, notices.prefix, notices.suffix];
  let updated: { id: string }[];
  if (rows.length === 1 && only) {
    updated = told
      ? await runStatement(raw, COMMIT_ONE_STATUS_CHANGE_TOLD, [...only, pushes[0], ...told])
      : await runStatement(raw, COMMIT_ONE_STATUS_CHANGE, only);
  } else {
    const columns = CHANGE_COLUMNS.map((_, column) =>
      arrayLiteral(rows.map((row) => row[column] ?? null)),
    );
    updated = told
      ? await runStatement(raw, COMMIT_STATUS_CHANGES_TOLD, [
          ...columns,
          arrayLiteral(pushes),
          arrayLiteral(noticeChunks(pushes, notices.maxBytes).map(String)),
          ...told,
        ])
      : await runStatement(raw, COMMIT_STATUS_CHANGES, columns);
  }
  return new Set(updated.map((row) => row.id));
}

/** The columns of a status change, in the order of its parameters, with their types. */
const CHANGE_COLUMNS = [
  ["campaign_id", "uuid"],
  ["lease_token", "bigint"],
  ["expected_version", "int"],
  ["to_status", "text"],
  ["at", "timestamptz"],
  ["history_id", "uuid"],
  ["tenant_id", "uuid"],
  ["action", "text"],
  ["from_status", "text"],
  ["actor_type", "text"],
  ["actor_id", "text"],
  ["request_id", "text"],
  ["key", "text"],
  ["body_hash", "text"],
  ["response_status", "int"],
  ["response_body", "text"],
  ["expires_at", "timestamptz"],
] as const;

/** The writes of a status change, given its rows as `change` and the campaigns to update. */
const statusChangeWrites = (campaignsToUpdate: string) => `
  updated as (
    update campaigns set status = c.to_status, version = campaigns.version + 1, updated_at = c.at
    from change c
    where ${campaignsToUpdate} and campaigns.id = c.campaign_id
      and campaigns.version = c.expected_version
      -- A stale owner's change is left out rather than failing the others' in its batch.
      and dialer_lease_held(c.campaign_id, c.lease_token)
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
      expires_at = excluded.expires_at),${outboxStatement("status_changed", {
        type: "campaign.status_changed",
        source: "change c join updated u on u.id = c.campaign_id",
        tenantId: "c.tenant_id",
        orderKey: "c.campaign_id::text",
        data: `jsonb_build_object('campaign_id', c.campaign_id, 'from', c.from_status,
          'to', c.to_status, 'action', c.action, 'actor_type', c.actor_type,
          'actor_id', c.actor_id)`,
        at: "c.at",
      })}`;

/**
 * One change alone (the usual case below a few hundred changes a second) names its campaign
 * as a parameter, so the update is planned as a primary-key lookup; planned over an `unnest`
 * of unknown length, a small campaigns table was scanned whole for every change.
 */
const ONE_CHANGE = `
  with change as (
    select ${CHANGE_COLUMNS.map(([name, type], index) => `$${index + 1}::${type} as ${name}`).join(", ")}),
  ${statusChangeWrites("campaigns.id = $1::uuid")}`;

const MANY_CHANGES = (extra: string) => `
  with change as (
    select * from unnest(${CHANGE_COLUMNS.map(([, type], index) => `$${index + 1}::${type}[]`).join(", ")}${extra})
      with ordinality as c(${CHANGE_COLUMNS.map(([name]) => name).join(", ")}${extra ? ", push, chunk" : ""}, ord)),
  ${statusChangeWrites("true")}`;

const COMMIT_ONE_STATUS_CHANGE = `${ONE_CHANGE}
  select id::text from updated`;

const COMMIT_STATUS_CHANGES = `${MANY_CHANGES("")}
  select id::text from updated`;

// Told: each change made is notified in its commit, in as few notifications as fit. The result
// refers to the notifications, or PostgreSQL would not run them.
// Its parameters after the change's columns: the push (or pushes and their chunks), then the notices'.
const P = CHANGE_COLUMNS.length;
const COMMIT_ONE_STATUS_CHANGE_TOLD = `${ONE_CHANGE},
  notified as (select pg_notify($${P + 2}, $${P + 3} || $${P + 1} || $${P + 4}) from updated)
  select id::text, (select count(*) from notified) as notified from updated`;

const COMMIT_STATUS_CHANGES_TOLD = `${MANY_CHANGES(`, $${P + 1}::text[], $${P + 2}::int[]`)},
  notified as (
    select pg_notify($${P + 3}, $${P + 4} || string_agg(c.push, ',' order by c.ord) || $${P + 5})
    from change c join updated u on u.id = c.campaign_id
    where c.push is not null group by c.chunk)
  select id::text, (select count(*) from notified) as notified from updated`;
