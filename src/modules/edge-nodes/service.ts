import {
  findTenantNode,
  insertNode,
  listNodes,
  recordHeartbeat,
  revokeNode,
} from "../../../db/queries/access.ts";
import type { RequestMeta, ServiceDeps } from "../../deps.ts";
import { reconcileNodeCalls } from "../../dialer/calls.ts";
import type { Page } from "../../envelope.ts";
import { notFound, unauthenticated } from "../../errors.ts";
import { auditedWrite } from "../../identity/audit.ts";
import type { NodePrincipal, UserPrincipal } from "../../identity/principal.ts";
import { NODE_KEY_PREFIX, newSecret } from "../../identity/secrets.ts";
import { isUuid } from "../../identity/tenant-scope.ts";
import { type CreateEdgeNodeInput, edgeNodeView } from "./model.ts";

export async function registerEdgeNode(
  deps: ServiceDeps,
  principal: UserPrincipal,
  tenantId: string,
  input: CreateEdgeNodeInput,
  meta: RequestMeta,
) {
  const secret = newSecret(NODE_KEY_PREFIX);
  const now = new Date(deps.clock.now());
  const row = await auditedWrite(
    deps.db,
    (tx) =>
      insertNode(tx, {
        id: Bun.randomUUIDv7(),
        tenantId,
        name: input.name.trim(),
        maxConcurrentCalls: input.max_concurrent_calls,
        prefix: secret.display,
        apiKeyHash: secret.hash,
        activeCalls: 0,
        createdAt: now,
        updatedAt: now,
      }),
    {
      tenantId,
      actor: { actorType: "user", actorId: principal.user.id },
      action: "edge_node.registered",
      targetType: "edge_node",
      requestId: meta.requestId,
      at: now,
      details: (created) => ({ name: created.name }),
    },
  );
  deps.credentials.nodeChanged(row);
  return { edge_node: edgeNodeView(row, deps.clock.now()), key: secret.value };
}

export async function listEdgeNodes(deps: ServiceDeps, tenantId: string, page: Page) {
  const { items, total } = await listNodes(deps.db, { tenantId, page });
  const now = deps.clock.now();
  return { items: items.map((row) => edgeNodeView(row, now)), total };
}

export async function revokeEdgeNode(
  deps: ServiceDeps,
  principal: UserPrincipal,
  tenantId: string,
  id: string,
  meta: RequestMeta,
) {
  const existing = isUuid(id) ? await findTenantNode(deps.db, { tenantId, id }) : undefined;
  if (!existing) throw notFound("edge node");
  if (existing.revokedAt) return { edge_node: edgeNodeView(existing, deps.clock.now()) };
  const now = new Date(deps.clock.now());
  const revoked = await auditedWrite(deps.db, (tx) => revokeNode(tx, { tenantId, id, at: now }), {
    tenantId,
    actor: { actorType: "user", actorId: principal.user.id },
    action: "edge_node.revoked",
    targetType: "edge_node",
    requestId: meta.requestId,
    at: now,
  });
  const row = revoked ?? existing;
  deps.credentials.nodeChanged(row);
  return { edge_node: edgeNodeView(row, deps.clock.now()) };
}

export async function heartbeat(
  deps: ServiceDeps,
  node: NodePrincipal,
  report: { activeCalls: number; activeCallIds?: readonly string[] | undefined },
) {
  const row = await recordHeartbeat(deps.db, {
    tenantId: node.tenantId,
    nodeId: node.nodeId,
    activeCalls: report.activeCalls,
    at: new Date(deps.clock.now()),
  });
  if (!row) throw unauthenticated("invalid or revoked key");
  deps.credentials.nodeChanged(row);
  if (report.activeCallIds) await reconcileNodeCalls(deps, node, report.activeCallIds);
  return { edge_node: edgeNodeView(row, deps.clock.now()) };
}
