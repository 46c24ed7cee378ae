import { and, count, desc, eq, getTableColumns, sql } from "drizzle-orm";
import type { Database, Executor } from "../client.ts";
import { users } from "../schema/index.ts";
import { paged } from "./paged.ts";

export type UserRow = typeof users.$inferSelect;
export type UserPatch = Partial<
  Pick<UserRow, "role" | "status" | "passwordHash" | "mustChangePassword" | "phoneUri">
>;

const emailEquals = (email: string) => sql`lower(${users.email}) = ${email.toLowerCase()}`;

export const insertUser = async (db: Executor, row: typeof users.$inferInsert) =>
  (await db.insert(users).values(row).returning())[0] as UserRow;

export const findTenantUser = async (
  db: Executor,
  { tenantId, id }: { tenantId: string; id: string },
) =>
  (
    await db
      .select()
      .from(users)
      .where(and(eq(users.tenantId, tenantId), eq(users.id, id)))
      .limit(1)
  )[0];

export const findUserByEmail = async (
  db: Executor,
  { tenantId, email }: { tenantId: string; email: string },
) =>
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

/** Every column but the password hash: what anything but a login reads. */
const { passwordHash: _secret, ...liveColumns } = getTableColumns(users);

/** The users list is hot (every admin screen opens it), so its two queries are prepared once. */
function prepareListQueries(db: Database) {
  const tenantId = sql.placeholder("tenantId");
  return {
    items: db
      .select(liveColumns)
      .from(users)
      .where(eq(users.tenantId, tenantId))
      .orderBy(desc(users.createdAt), desc(users.id))
      .limit(sql.placeholder("limit"))
      .offset(sql.placeholder("offset"))
      .prepare("users_page"),
    total: db
      .select({ total: count() })
      .from(users)
      .where(eq(users.tenantId, tenantId))
      .prepare("users_total"),
  };
}

const preparedLists = new WeakMap<Database, ReturnType<typeof prepareListQueries>>();

export function listTenantUsers(
  db: Database,
  { tenantId, page }: { tenantId: string; page: { limit: number; offset: number } },
) {
  let prepared = preparedLists.get(db);
  if (!prepared) {
    prepared = prepareListQueries(db);
    preparedLists.set(db, prepared);
  }
  return paged(prepared.items.execute({ tenantId, ...page }), prepared.total.execute({ tenantId }));
}

/** Every update raises the row's version, which the tenant actors order rows by. */
export const updateUser = async (
  db: Executor,
  { tenantId, id, patch, now }: { tenantId: string; id: string; patch: UserPatch; now: Date },
) =>
  (
    await db
      .update(users)
      .set({ ...patch, updatedAt: now, version: sql`${users.version} + 1` })
      .where(and(eq(users.tenantId, tenantId), eq(users.id, id)))
      .returning()
  )[0];

/** Every user of a tenant without password hashes: a tenant actor's starting state. */
export const listTenantLiveUsers = (db: Executor, tenantId: string) =>
  db.select(liveColumns).from(users).where(eq(users.tenantId, tenantId));
