import type { Executor } from "../../db/client.ts";
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
