import { and, desc, eq, isNull, sql } from "drizzle-orm";
import type { Executor } from "../client.ts";
import { rowsOf } from "../rows.ts";
import { alerts } from "../schema/index.ts";
import { isAnyUuid } from "../statement.ts";

export type AlertRow = typeof alerts.$inferSelect;
type AlertKind = AlertRow["kind"];

/**
 * Opens an alert unless one of its kind is open for the subject, whose message it then brings
 * up to date (the figures it quotes move); the row if this opened or reworded it.
 */
export async function raiseAlert(
  db: Executor,
  row: Omit<AlertRow, "clearedAt">,
): Promise<AlertRow | undefined> {
  const [raised] = await db
    .insert(alerts)
    .values({ ...row, clearedAt: null })
    .onConflictDoUpdate({
      target: [alerts.tenantId, alerts.kind, alerts.subjectId],
      targetWhere: isNull(alerts.clearedAt),
      set: { message: row.message },
      setWhere: sql`${alerts.message} <> excluded.message`,
    })
    .returning();
  return raised;
}

/** Closes the subject's open alert of a kind; the row if this closed it. */
export async function clearAlert(
  db: Executor,
  params: { tenantId: string; kind: AlertKind; subjectId: string; at: Date },
): Promise<AlertRow | undefined> {
  const [cleared] = await db
    .update(alerts)
    .set({ clearedAt: params.at })
    .where(
      and(
        eq(alerts.tenantId, params.tenantId),
        eq(alerts.kind, params.kind),
        eq(alerts.subjectId, params.subjectId),
        isNull(alerts.clearedAt),
      ),
    )
    .returning();
  return cleared;
}

/** A tenant's alerts, newest first: the open ones only, or all. */
export const listAlerts = (
  db: Executor,
  params: { tenantId: string; openOnly: boolean; limit: number },
) =>
  db
    .select()
    .from(alerts)
    .where(
      and(
        eq(alerts.tenantId, params.tenantId),
        params.openOnly ? isNull(alerts.clearedAt) : undefined,
      ),
    )
    .orderBy(desc(alerts.raisedAt), desc(alerts.id))
    .limit(params.limit);

/** Open campaign alerts whose campaign no longer runs: to be closed. */
export async function alertsOfStoppedCampaigns(db: Executor): Promise<AlertRow[]> {
  const result = await db.execute(sql`
    select a.id from alerts a join campaigns c on c.id = a.subject_id
    where a.cleared_at is null and a.kind <> 'node_silent' and c.status <> 'running'`);
  const ids = rowsOf<{ id: string }>(result).map((row) => row.id);
  if (ids.length === 0) return [];
  return db.select().from(alerts).where(isAnyUuid(alerts.id, ids));
}

/**
 * Nodes not revoked, and revoked ones still under an open alert (to close it), with when each
 * last sent a heartbeat (null: never).
 */
export async function nodeHeartbeats(db: Executor) {
  const result = await db.execute(sql`
    select n.id, n.tenant_id, n.name, n.last_heartbeat_at, n.revoked_at is not null as revoked
    from nodes n
    where n.revoked_at is null or exists (
      select 1 from alerts a
      where a.tenant_id = n.tenant_id and a.kind = 'node_silent' and a.subject_id = n.id
        and a.cleared_at is null)`);
  return rowsOf<{
    id: string;
    tenant_id: string;
    name: string;
    last_heartbeat_at: string | Date | null;
    revoked: boolean;
  }>(result).map((row) => ({
    id: row.id,
    tenantId: row.tenant_id,
    name: row.name,
    lastHeartbeatAt: row.last_heartbeat_at === null ? null : new Date(row.last_heartbeat_at),
    revoked: row.revoked,
  }));
}
