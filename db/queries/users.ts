import { and, count, desc, eq, sql } from "drizzle-orm";
import type { Executor } from "../client.ts";
import { users } from "../schema/index.ts";

export type UserRow = typeof users.$inferSelect;
export type UserPatch = Partial<
  Pick<UserRow, "role" | "status" | "passwordHash" | "mustChangePassword">
>;

const emailEquals = (email: string) => sql`lower(${users.email}) = ${email.toLowerCase()}`;

export const insertUser = async (db: Executor, row: typeof users.$inferInsert) =>
  (await db.insert(users).values(row).returning())[0] as UserRow;

export const findUserById = async (db: Executor, id: string) =>
  (await db.select().from(users).where(eq(users.id, id)).limit(1))[0];

export const findTenantUser = async (db: Executor, tenantId: string, id: string) =>
  (
    await db
      .select()
      .from(users)
      .where(and(eq(users.tenantId, tenantId), eq(users.id, id)))
      .limit(1)
  )[0];

export const findUserByEmail = async (db: Executor, tenantId: string, email: string) =>
  (
    await db
      .select()
      .from(users)
      .where(and(eq(users.tenantId, tenantId), emailEquals(email)))
      .limit(1)
  )[0];

/** Every account with this e-mail, in any tenant: login without a domain chooses among them. */
export const findUsersByEmailAnyTenant = (db: Executor, email: string) =>
  db.select().from(users).where(emailEquals(email)).orderBy(users.createdAt, users.id);

export const anyUserWithRole = async (db: Executor, role: UserRow["role"]) =>
  (await db.select({ id: users.id }).from(users).where(eq(users.role, role)).limit(1)).length > 0;

export async function listTenantUsers(
  db: Executor,
  tenantId: string,
  page: { limit: number; offset: number },
) {
  const [items, totals] = await Promise.all([
    db
      .select()
      .from(users)
      .where(eq(users.tenantId, tenantId))
      .orderBy(desc(users.createdAt), desc(users.id))
      .limit(page.limit)
      .offset(page.offset),
    db.select({ total: count() }).from(users).where(eq(users.tenantId, tenantId)),
  ]);
  return { items, total: totals[0]?.total ?? 0 };
}

export const updateUser = async (
  db: Executor,
  tenantId: string,
  id: string,
  patch: UserPatch,
  now: Date,
) =>
  (
    await db
      .update(users)
      .set({ ...patch, updatedAt: now })
      .where(and(eq(users.tenantId, tenantId), eq(users.id, id)))
      .returning()
  )[0];
