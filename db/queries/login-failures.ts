import { and, eq, sql } from "drizzle-orm";
import type { Executor } from "../client.ts";
import { loginFailures } from "../schema/index.ts";

export type LoginFailureRow = typeof loginFailures.$inferSelect;

export const findLoginFailures = async (db: Executor, tenantId: string, email: string) =>
  (
    await db
      .select()
      .from(loginFailures)
      .where(and(eq(loginFailures.tenantId, tenantId), eq(loginFailures.email, email)))
      .limit(1)
  )[0];

/**
 * Counts one more consecutive failure in a single statement, so concurrent attempts are
 * counted exactly; a count that had reached its lock starts again from one.
 */
export async function recordLoginFailure(
  db: Executor,
  params: { tenantId: string; email: string; now: Date; lockAfter: number; lockUntil: Date },
) {
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
    })
    .returning();
  return rows[0] as LoginFailureRow;
}

export const clearLoginFailures = (db: Executor, tenantId: string, email: string) =>
  db
    .delete(loginFailures)
    .where(and(eq(loginFailures.tenantId, tenantId), eq(loginFailures.email, email)));
