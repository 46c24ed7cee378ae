import { and, count, desc, eq, isNull } from "drizzle-orm";
import type { Executor } from "../client.ts";
import { apiKeys, nodes } from "../schema/index.ts";
import { isAnyUuid } from "../statement.ts";
import { paged } from "./paged.ts";

export type ApiKeyRow = typeof apiKeys.$inferSelect;
export type NodeRow = typeof nodes.$inferSelect;
type PageParams = { limit: number; offset: number };
/** One row of a tenant, by the id a client named. */
type TenantRowId = { tenantId: string; id: string };

export const insertApiKey = async (db: Executor, row: typeof apiKeys.$inferInsert) =>
  (await db.insert(apiKeys).values(row).returning())[0] as ApiKeyRow;

export const findApiKeyByHash = async (db: Executor, keyHash: string) =>
  (await db.select().from(apiKeys).where(eq(apiKeys.keyHash, keyHash)).limit(1))[0];

export const findTenantApiKey = async (db: Executor, { tenantId, id }: TenantRowId) =>
  (
    await db
      .select()
      .from(apiKeys)
      .where(and(eq(apiKeys.tenantId, tenantId), eq(apiKeys.id, id)))
      .limit(1)
  )[0];

export const listApiKeys = (
  db: Executor,
  { tenantId, page }: { tenantId: string; page: PageParams },
) =>
  paged(
    db
      .select()
      .from(apiKeys)
      .where(eq(apiKeys.tenantId, tenantId))
      .orderBy(desc(apiKeys.createdAt), desc(apiKeys.id))
      .limit(page.limit)
      .offset(page.offset),
    db.select({ total: count() }).from(apiKeys).where(eq(apiKeys.tenantId, tenantId)),
  );

export const revokeApiKey = async (
  db: Executor,
  { tenantId, id, at }: TenantRowId & { at: Date },
) =>
  (
    await db
      .update(apiKeys)
      .set({ revokedAt: at })
      .where(and(eq(apiKeys.tenantId, tenantId), eq(apiKeys.id, id), isNull(apiKeys.revokedAt)))
      .returning()
  )[0];

/** Records when keys were last used, many keys in one statement per distinct time. */
export async function touchApiKeys(db: Executor, usedAt: Map<string, number>) {
  const byTime = new Map<number, string[]>();
  for (const [id, at] of usedAt) byTime.set(at, [...(byTime.get(at) ?? []), id]);
  for (const [at, ids] of byTime) {
    await db
      .update(apiKeys)
      .set({ lastUsedAt: new Date(at) })
      .where(isAnyUuid(apiKeys.id, ids));
  }
}

export const insertNode = async (db: Executor, row: typeof nodes.$inferInsert) =>
  (await db.insert(nodes).values(row).returning())[0] as NodeRow;

export const findNodeByHash = async (db: Executor, hash: string) =>
  (await db.select().from(nodes).where(eq(nodes.apiKeyHash, hash)).limit(1))[0];

export const findTenantNode = async (db: Executor, { tenantId, id }: TenantRowId) =>
  (
    await db
      .select()
      .from(nodes)
      .where(and(eq(nodes.tenantId, tenantId), eq(nodes.id, id)))
      .limit(1)
  )[0];

export const listNodes = (
  db: Executor,
  { tenantId, page }: { tenantId: string; page: PageParams },
) =>
  paged(
    db
      .select()
      .from(nodes)
      .where(eq(nodes.tenantId, tenantId))
      .orderBy(desc(nodes.createdAt), desc(nodes.id))
      .limit(page.limit)
      .offset(page.offset),
    db.select({ total: count() }).from(nodes).where(eq(nodes.tenantId, tenantId)),
  );

export const revokeNode = async (db: Executor, { tenantId, id, at }: TenantRowId & { at: Date }) =>
  (
    await db
      .update(nodes)
      .set({ revokedAt: at, updatedAt: at })
      .where(and(eq(nodes.tenantId, tenantId), eq(nodes.id, id), isNull(nodes.revokedAt)))
      .returning()
  )[0];

export const recordHeartbeat = async (
  db: Executor,
  params: { tenantId: string; nodeId: string; activeCalls: number; at: Date },
) =>
  (
    await db
      .update(nodes)
      .set({ activeCalls: params.activeCalls, lastHeartbeatAt: params.at, updatedAt: params.at })
      .where(and(eq(nodes.tenantId, params.tenantId), eq(nodes.id, params.nodeId)))
      .returning()
  )[0];
