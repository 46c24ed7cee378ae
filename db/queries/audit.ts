import { and, count, desc, eq } from "drizzle-orm";
import type { Executor } from "../client.ts";
import { auditEvents } from "../schema/index.ts";

export type AuditEventRow = typeof auditEvents.$inferSelect;
export type NewAuditEvent = Omit<typeof auditEvents.$inferInsert, "id">;

export const insertAuditEvent = (db: Executor, event: NewAuditEvent) =>
  db.insert(auditEvents).values({ id: Bun.randomUUIDv7(), ...event });

export async function listTenantAuditEvents(
  db: Executor,
  tenantId: string,
  page: { limit: number; offset: number },
) {
  const where = eq(auditEvents.tenantId, tenantId);
  const [items, totals] = await Promise.all([
    db
      .select()
      .from(auditEvents)
      .where(and(where))
      .orderBy(desc(auditEvents.createdAt), desc(auditEvents.id))
      .limit(page.limit)
      .offset(page.offset),
    db.select({ total: count() }).from(auditEvents).where(where),
  ]);
  return { items, total: totals[0]?.total ?? 0 };
}
