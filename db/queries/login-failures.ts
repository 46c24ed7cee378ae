import { and, eq, isNull, lte, or, sql } from "drizzle-orm";
import type { Executor } from "../client.ts";
import { loginFailures } from "../schema/index.ts";

export type LoginFailureRow = typeof loginFailures.$inferSelect;

export const findLoginFailures = async (
  db: Executor,
  { tenantId, email }: { tenantId: string; email: string },
) =>
  (
    await db
      .select()
      .from(loginFailures)
      .where(and(eq(loginFailures.tenantId, tenantId), eq(loginFailures.email, email)))
      .limit(1)
  )[0];

/**
 * Counts one more consecutive failure in a single statement, so that attempts in any number
 * of processes are counted exactly; a count that had reached a lock now over starts again
 * from one. An account locked at `now` is left as it is and nothing is returned: the check of
 * the lock and the count are one step, so a failure racing the one that set the lock (in
 * another process) can never count past it and undo it.
 */
export async function recordLoginFailure(
  db: Executor,
  params: { tenantId: string; email: string; now: Date; lockAfter: number; lockUntil: Date },
): Promise<LoginFailureRow | undefined> {
  const now = params.now.toISOString();
  const rows = await db
    .insert(loginFailures)
    .values({
      tenantId: params.tenantId,
      email: params.email,
      failedCount: 1,
      lockedUntil: params.lockAfter <= 1 ? params.lockUntil : null,
      lastFailedAt: params.now,
    })
    .onConflictDoUpdate({
      target: [loginFailures.tenantId, loginFailures.email],
      set: {
        failedCount: sql`case when ${loginFailures.failedCount} >= ${params.lockAfter} then 1 else ${loginFailures.failedCount} + 1 end`,
        lockedUntil: sql`case when ${loginFailures.failedCount} + 1 = ${params.lockAfter} then ${params.lockUntil.toISOString()}::timestamptz else null end`,
        lastFailedAt: params.now,
      },
      setWhere: sql`${loginFailures.lockedUntil} is null or ${loginFailures.lockedUntil} <= ${now}::timestamptz`,
    })
    .returning();
  return rows[0];
}

/**
 * Clears an account's failures unless it is locked at `now`, in one statement, so that a
 * success never erases a lock another process set after the success checked for one.
 * Returns whether a row was deleted.
 */
export async function clearLoginFailures(
  db: Executor,
  params: { tenantId: string; email: string; now: Date },
): Promise<boolean> {
  const rows = await db
    .delete(loginFailures)
    .where(
      and(
        eq(loginFailures.tenantId, params.tenantId),
        eq(loginFailures.email, params.email),
        or(isNull(loginFailures.lockedUntil), lte(loginFailures.lockedUntil, params.now)),
      ),
    )
    .returning({ email: loginFailures.email });
  return rows.length > 0;
}
