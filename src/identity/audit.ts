import type { Database, Executor, Transaction } from "../../db/client.ts";
import { insertAuditEvent, type NewAuditEvent } from "../../db/queries/audit.ts";

export type AuditInput = Omit<NewAuditEvent, "details" | "createdAt"> & {
  details?: Record<string, unknown>;
  at: Date;
};

/** Appends one audit record. Audit writes share the caller's transaction when given one. */
export const recordAudit = (db: Executor, input: AuditInput) =>
  insertAuditEvent(db, {
    tenantId: input.tenantId ?? null,
    actorType: input.actorType,
    actorId: input.actorId ?? null,
    action: input.action,
    targetType: input.targetType ?? null,
    targetId: input.targetId ?? null,
    requestId: input.requestId ?? null,
    details: input.details ?? {},
    createdAt: input.at,
  });

export interface AuditedChange<T> {
  tenantId: string;
  actor: { actorType: AuditInput["actorType"]; actorId: string | null };
  action: string;
  targetType: string;
  requestId: string;
  at: Date;
  details?: Record<string, unknown> | ((row: T) => Record<string, unknown>);
}

/**
 * Runs a write and its audit record in one transaction; the record names the written row.
 * A write that finds nothing to change (undefined) records nothing.
 */
export function auditedWrite<R extends { id: string } | undefined>(
  db: Database,
  write: (tx: Transaction) => Promise<R>,
  change: AuditedChange<NonNullable<R>>,
): Promise<R> {
  return db.transaction(async (tx) => {
    const row = await write(tx);
    if (row) {
      await recordAudit(tx, {
        tenantId: change.tenantId,
        ...change.actor,
        action: change.action,
        targetType: change.targetType,
        targetId: row.id,
        requestId: change.requestId,
        details: typeof change.details === "function" ? change.details(row) : change.details,
        at: change.at,
      });
    }
    return row;
  });
}
