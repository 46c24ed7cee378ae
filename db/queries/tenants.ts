import { count, desc, eq } from "drizzle-orm";
import type { Executor } from "../client.ts";
import { tenants } from "../schema/index.ts";
import { paged } from "./paged.ts";

export type TenantRow = typeof tenants.$inferSelect;

export const insertTenant = async (db: Executor, row: typeof tenants.$inferInsert) =>
  (await db.insert(tenants).values(row).returning())[0] as TenantRow;

export const findTenantById = async (db: Executor, id: string) =>
  (await db.select().from(tenants).where(eq(tenants.id, id)).limit(1))[0];

export const findTenantByDomain = async (db: Executor, domain: string) =>
  (await db.select().from(tenants).where(eq(tenants.domain, domain)).limit(1))[0];

export const listTenants = (db: Executor, page: { limit: number; offset: number }) =>
  paged(
    db
      .select()
      .from(tenants)
      .orderBy(desc(tenants.createdAt), desc(tenants.id))
      .limit(page.limit)
      .offset(page.offset),
    db.select({ total: count() }).from(tenants),
  );

export const updateTenant = async (
  db: Executor,
  {
    id,
    patch,
    now,
  }: {
    id: string;
    patch: Partial<
      Pick<
        TenantRow,
        "name" | "rateLimitPerMinute" | "regulatoryProfile" | "notReadyReasons" | "transferNumbers"
      >
    >;
    now: Date;
  },
) =>
  (
    await db
      .update(tenants)
      .set({ ...patch, updatedAt: now })
      .where(eq(tenants.id, id))
      .returning()
  )[0];
