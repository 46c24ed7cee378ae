import {
  findTenantApiKey,
  insertApiKey,
  listApiKeys,
  revokeApiKey,
} from "../../../db/queries/access.ts";
import type { RequestMeta, ServiceDeps } from "../../deps.ts";
import type { Page } from "../../envelope.ts";
import { notFound } from "../../errors.ts";
import { auditedWrite } from "../../identity/audit.ts";
import type { UserPrincipal } from "../../identity/principal.ts";
import { API_KEY_PREFIX, newSecret } from "../../identity/secrets.ts";
import { isUuid } from "../../identity/tenant-scope.ts";
import { apiKeyView, type CreateApiKeyInput } from "./model.ts";

export async function createApiKey(
  deps: ServiceDeps,
  principal: UserPrincipal,
  tenantId: string,
  input: CreateApiKeyInput,
  meta: RequestMeta,
) {
  const secret = newSecret(API_KEY_PREFIX);
  const now = new Date(deps.clock.now());
  const row = await auditedWrite(
    deps.db,
    (tx) =>
      insertApiKey(tx, {
        id: Bun.randomUUIDv7(),
        tenantId,
        name: input.name.trim(),
        prefix: secret.display,
        keyHash: secret.hash,
        scopes: input.scopes,
        rateLimitPerMinute: input.rate_limit_per_minute ?? null,
        createdBy: principal.user.id,
        createdAt: now,
      }),
    {
      tenantId,
      actor: { actorType: "user", actorId: principal.user.id },
      action: "api_key.created",
      targetType: "api_key",
      requestId: meta.requestId,
      at: now,
      details: (created) => ({ name: created.name, scopes: created.scopes }),
    },
  );
  deps.credentials.apiKeyChanged(row);
  // The full key is in this response only; the service keeps its digest.
  return { api_key: apiKeyView(row), key: secret.value };
}

export async function listTenantApiKeys(deps: ServiceDeps, tenantId: string, page: Page) {
  const { items, total } = await listApiKeys(deps.db, { tenantId, page });
  return {
    items: items.map((row) => apiKeyView(row, deps.credentials.pendingUseOf(row.id))),
    total,
  };
}

/** Revokes a key at once; revoking a revoked key answers with it unchanged. */
export async function revokeTenantApiKey(
  deps: ServiceDeps,
  principal: UserPrincipal,
  tenantId: string,
  id: string,
  meta: RequestMeta,
) {
  const existing = isUuid(id) ? await findTenantApiKey(deps.db, { tenantId, id }) : undefined;
  if (!existing) throw notFound("API key");
  // A use not yet written shows at once, as in the list.
  const lastUse = deps.credentials.pendingUseOf(id);
  if (existing.revokedAt) return { api_key: apiKeyView(existing, lastUse) };
  const now = new Date(deps.clock.now());
  const revoked = await auditedWrite(deps.db, (tx) => revokeApiKey(tx, { tenantId, id, at: now }), {
    tenantId,
    actor: { actorType: "user", actorId: principal.user.id },
    action: "api_key.revoked",
    targetType: "api_key",
    requestId: meta.requestId,
    at: now,
  });
  const row = revoked ?? existing;
  deps.credentials.apiKeyChanged(row);
  deps.rateLimiter.forget(row.id);
  return { api_key: apiKeyView(row, lastUse) };
}
