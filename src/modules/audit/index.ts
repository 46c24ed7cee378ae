import { Elysia, type Static, t } from "elysia";
import { type AuditEventRow, listTenantAuditEvents } from "../../../db/queries/audit.ts";
import type { ServiceDeps } from "../../deps.ts";
import { okList } from "../../envelope.ts";
import { documentedList } from "../../openapi-bodies.ts";
import { PageQuery, parsePage } from "../../pagination.ts";
import type { AuthGuard } from "../../plugins/auth.ts";
import { TenantQuery, Timestamp } from "../users/model.ts";

export const AuditEventSchema = t.Object({
  id: t.String({ format: "uuid" }),
  tenant_id: t.Union([t.String({ format: "uuid" }), t.Null()]),
  actor_type: t.String(),
  actor_id: t.Union([t.String(), t.Null()]),
  action: t.String(),
  target_type: t.Union([t.String(), t.Null()]),
  target_id: t.Union([t.String(), t.Null()]),
  request_id: t.Union([t.String(), t.Null()]),
  details: t.Record(t.String(), t.Unknown()),
  created_at: Timestamp,
});
export type AuditEventView = Static<typeof AuditEventSchema>;

const auditEventView = (row: AuditEventRow): AuditEventView => ({
  id: row.id,
  tenant_id: row.tenantId,
  actor_type: row.actorType,
  actor_id: row.actorId,
  action: row.action,
  target_type: row.targetType,
  target_id: row.targetId,
  request_id: row.requestId,
  details: row.details,
  created_at: row.createdAt.toISOString(),
});

export const auditModule = (deps: ServiceDeps, auth: AuthGuard) =>
  new Elysia({ prefix: "/api/v1/audit-events", detail: { tags: ["audit"] } }).use(auth).get(
    "",
    async ({ tenantId, query }) => {
      const page = parsePage(query);
      const { items, total } = await listTenantAuditEvents(deps.db, { tenantId, page });
      return okList(items.map(auditEventView), total, page);
    },
    {
      auth: "audit.read",
      query: t.Object({ ...PageQuery, ...TenantQuery }),
      detail: {
        summary: "The tenant's audit trail, newest first",
        ...documentedList(AuditEventSchema),
      },
    },
  );
