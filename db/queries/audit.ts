import { count, desc, eq } from "drizzle-orm";
import type { Executor } from "../client.ts";
import { auditEvents } from "../schema/index.ts";
import { paged } from "./paged.ts";

export type AuditEventRow = typeof auditEvents.$inferSelect;
export type NewAuditEvent = Omit<typeof auditEvents.$inferInsert, "id">;

export const insertAuditEvent = (db: Executor, event: NewAuditEvent) =>
  db.insert(auditEvents).values({ id: Bun.randomUUIDv7(), ...event });

export function listTenantAuditEvents(
  db: Executor,
  { tenantId, page }: { tenantId: string; page: { limit: number; offset: number } },
) {
  const where = eq(auditEvents.tenantId, tenantId);
  return paged(
    db
      .select()
      .from(auditEvents)
      .where(where)
      .orderBy(desc(auditEvents.createdAt), desc(auditEvents.id))
      .limit(page.limit)
      .offset(page.offset),
    db.select({ total: count() }).from(auditEvents).where(where),
  );
}
