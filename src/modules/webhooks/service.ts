import { type AlertRow, clearAlert } from "../../../db/queries/alerts.ts";
import {
  countEndpointsLocked,
  deleteEndpoint,
  findAttempt,
  findTenantEndpoint,
  holdEndpointDeliveries,
  insertEndpoint,
  listAttempts,
  listEndpoints,
  readyHeads,
  redeliver,
  startCursor,
  updateEndpoint,
  type WebhookEndpointRow,
} from "../../../db/queries/webhooks.ts";
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from "../../../db/schema/webhooks.ts";
import type { RequestMeta, ServiceDeps } from "../../deps.ts";
import type { Page } from "../../envelope.ts";
import { ApiError, notFound, unprocessable } from "../../errors.ts";
import { auditedWrite } from "../../identity/audit.ts";
import { auditActorOf, type Principal } from "../../identity/principal.ts";
import { isUuid } from "../../identity/tenant-scope.ts";
import { refusalOf } from "../../webhooks/addresses.ts";
import { newWebhookSecret } from "../../webhooks/signing.ts";
import { pushAlert } from "../alerts/service.ts";
import {
  type CreateWebhookInput,
  deliveryView,
  type PatchWebhookInput,
  webhookView,
} from "./model.ts";

/** Endpoints per workspace: each is a stream of requests the service makes. */
export const MAX_WEBHOOKS_PER_WORKSPACE = 20;
const DEFAULT_OVERLAP_SECONDS = 86_400;

const KNOWN_TYPES: ReadonlySet<string> = new Set(WEBHOOK_EVENT_TYPES);

/** The URL as stored, or 422 naming what is wrong with it. */
async function checkedUrl(deps: ServiceDeps, given: string): Promise<string> {
  let url: URL;
  try {
    url = new URL(given.trim());
  } catch {
    throw unprocessable("url", "must be an absolute URL, e.g. https://crm.example/hooks/dialer");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:")
    throw unprocessable("url", "must use https");
  if (url.username || url.password)
    throw unprocessable(
      "url",
      "must not carry a user name or password: the signature authenticates",
    );
  if (url.port === "0") throw unprocessable("url", "must not name port 0: nothing listens there");
  const refusal = await refusalOf(url, {
    allowPrivate: deps.config.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
    resolve: deps.webhooks.resolve,
  });
  if (refusal) throw unprocessable("url", refusal);
  return url.toString();
}

function checkedTypes(given: readonly string[]): WebhookEventType[] {
  const unknown = given.filter((type) => !KNOWN_TYPES.has(type));
  if (unknown.length > 0)
    throw unprocessable(
      "event_types",
      `unknown event type ${unknown.map((type) => JSON.stringify(type)).join(", ")}: expected ${WEBHOOK_EVENT_TYPES.join(", ")}`,
    );
  return [...new Set(given)] as WebhookEventType[];
}

const audit = (
  principal: Principal,
  tenantId: string,
  action: string,
  meta: RequestMeta,
  at: Date,
) => ({
  tenantId,
  actor: auditActorOf(principal),
  action,
  targetType: "webhook",
  requestId: meta.requestId,
  at,
  details: (row: WebhookEndpointRow) => ({ url: row.url, event_types: row.eventTypes }),
});

export async function createWebhook(
  deps: ServiceDeps,
  principal: Principal,
  tenantId: string,
  input: CreateWebhookInput,
  meta: RequestMeta,
) {
  const url = await checkedUrl(deps, input.url);
  const eventTypes = checkedTypes(input.event_types);
  const now = new Date(deps.clock.now());
  const secret = newWebhookSecret();
  const row = await auditedWrite(
    deps.db,
    async (tx) => {
      if ((await countEndpointsLocked(tx, tenantId)) >= MAX_WEBHOOKS_PER_WORKSPACE)
        throw new ApiError(
          409,
          "conflict",
          `a workspace has at most ${MAX_WEBHOOKS_PER_WORKSPACE} webhooks: remove one first`,
        );
      return insertEndpoint(tx, {
        id: Bun.randomUUIDv7(),
        tenantId,
        url,
        description: input.description?.trim() ?? "",
        eventTypes,
        status: "enabled",
        secret,
        createdAt: now,
        updatedAt: now,
      });
    },
    audit(principal, tenantId, "webhook.created", meta, now),
  );
  deps.webhooks.dispatcher.wake();
  // The secret is in this answer only.
  return { webhook: webhookView(row), secret };
}

async function tenantEndpoint(deps: ServiceDeps, tenantId: string, id: string) {
  const row = isUuid(id) ? await findTenantEndpoint(deps.db, { tenantId, id }) : undefined;
  if (!row) throw notFound("webhook");
  return row;
}

export const getWebhook = async (deps: ServiceDeps, tenantId: string, id: string) => ({
  webhook: webhookView(await tenantEndpoint(deps, tenantId, id)),
});

export async function listWebhooks(deps: ServiceDeps, tenantId: string, page: Page) {
  const { items, total } = await listEndpoints(deps.db, { tenantId, page });
  return { items: items.map(webhookView), total };
}

/** Whether a change turns the endpoint on (true) or off (false), given as `enabled` or `status`. */
function switchOf(input: PatchWebhookInput): boolean | undefined {
  const byStatus = input.status === undefined ? undefined : input.status === "enabled";
  if (input.enabled !== undefined && byStatus !== undefined && input.enabled !== byStatus)
    throw unprocessable("status", "says the opposite of enabled: give one of them");
  return input.enabled ?? byStatus;
}

export async function patchWebhook(
  deps: ServiceDeps,
  principal: Principal,
  tenantId: string,
  id: string,
  input: PatchWebhookInput,
  meta: RequestMeta,
) {
  const existing = await tenantEndpoint(deps, tenantId, id);
  const url = input.url === undefined ? undefined : await checkedUrl(deps, input.url);
  const eventTypes = input.event_types === undefined ? undefined : checkedTypes(input.event_types);
  const switched = switchOf(input);
  const now = new Date(deps.clock.now());
  const enabling = switched === true && existing.status === "disabled";
  let cleared: AlertRow | undefined;
  const row = await auditedWrite(
    deps.db,
    async (tx) => {
      const changed = await updateEndpoint(tx, {
        tenantId,
        id,
        set: {
          ...(url !== undefined ? { url } : {}),
          ...(eventTypes !== undefined ? { eventTypes } : {}),
          ...(input.description !== undefined ? { description: input.description.trim() } : {}),
          ...(switched === false
            ? { status: "disabled" as const, disabledReason: "disabled by an admin" }
            : {}),
          // Back on: its failures so far no longer count towards disabling it again.
          ...(enabling
            ? { status: "enabled" as const, disabledReason: null, failingSince: null }
            : {}),
          updatedAt: now,
        },
      });
      if (enabling) {
        cleared = await clearAlert(tx, {
          tenantId,
          kind: "webhook_disabled",
          subjectId: id,
          at: now,
        });
        // What it queued before resumes; what happened while it was off is not sent.
        await readyHeads(tx, id);
        await startCursor(tx, id);
      }
      if (switched === false) await holdEndpointDeliveries(tx, id);
      return changed;
    },
    audit(principal, tenantId, "webhook.updated", meta, now),
  );
  if (!row) throw notFound("webhook");
  pushAlert(deps, cleared);
  if (enabling) deps.webhooks.dispatcher.wake();
  return { webhook: webhookView(row) };
}

/** Removes an endpoint: its pending events are cancelled; its deliveries' log is kept. */
export async function deleteWebhook(
  deps: ServiceDeps,
  principal: Principal,
  tenantId: string,
  id: string,
  meta: RequestMeta,
) {
  await tenantEndpoint(deps, tenantId, id);
  const now = new Date(deps.clock.now());
  let cleared: AlertRow | undefined;
  const row = await auditedWrite(
    deps.db,
    async (tx) => {
      const deleted = await deleteEndpoint(tx, { tenantId, id, at: now });
      // Its alert would otherwise stay open for good: nothing can enable it again.
      if (deleted)
        cleared = await clearAlert(tx, {
          tenantId,
          kind: "webhook_disabled",
          subjectId: id,
          at: now,
        });
      return deleted;
    },
    audit(principal, tenantId, "webhook.deleted", meta, now),
  );
  if (!row) throw notFound("webhook");
  pushAlert(deps, cleared);
  return { webhook: webhookView(row) };
}

/**
 * A new secret, shown this once; the previous one keeps signing beside it for
 * `overlapSeconds`, so that receivers switch over without refusing an event.
 */
export async function rotateWebhookSecret(
  deps: ServiceDeps,
  principal: Principal,
  tenantId: string,
  id: string,
  overlapSeconds: number | undefined,
  meta: RequestMeta,
) {
  const existing = await tenantEndpoint(deps, tenantId, id);
  const now = new Date(deps.clock.now());
  const overlap = overlapSeconds ?? DEFAULT_OVERLAP_SECONDS;
  const secret = newWebhookSecret();
  const row = await auditedWrite(
    deps.db,
    (tx) =>
      updateEndpoint(tx, {
        tenantId,
        id,
        set: {
          secret,
          previousSecret: overlap > 0 ? existing.secret : null,
          previousSecretExpiresAt: overlap > 0 ? new Date(now.getTime() + overlap * 1000) : null,
          updatedAt: now,
        },
      }),
    audit(principal, tenantId, "webhook.secret_rotated", meta, now),
  );
  if (!row) throw notFound("webhook");
  return { webhook: webhookView(row), secret };
}

export async function listDeliveries(deps: ServiceDeps, tenantId: string, id: string, page: Page) {
  const endpoint = await tenantEndpoint(deps, tenantId, id);
  const { items, total } = await listAttempts(deps.db, { endpointId: endpoint.id, page });
  return { items: items.map(deliveryView), total };
}

/** Sends a logged attempt's event again, under its id, as a new delivery due now. */
export async function resendDelivery(
  deps: ServiceDeps,
  principal: Principal,
  tenantId: string,
  id: string,
  attemptId: string,
  meta: RequestMeta,
) {
  const endpoint = await tenantEndpoint(deps, tenantId, id);
  const attempt = isUuid(attemptId)
    ? await findAttempt(deps.db, { endpointId: endpoint.id, id: attemptId })
    : undefined;
  if (!attempt) throw notFound("delivery");
  const { eventSeq, deliveryId } = attempt;
  const now = new Date(deps.clock.now());
  const delivery = await auditedWrite(
    deps.db,
    async (tx) =>
      eventSeq === null
        ? undefined
        : redeliver(tx, { eventSeq, deliveryId, endpointId: endpoint.id, at: now }),
    {
      tenantId,
      actor: auditActorOf(principal),
      action: "webhook.resent",
      targetType: "webhook_delivery",
      requestId: meta.requestId,
      at: now,
      details: { webhook_id: endpoint.id, event_id: attempt.eventId },
    },
  );
  if (!delivery) throw notFound("delivery");
  deps.webhooks.dispatcher.wake();
  return {
    delivery: {
      id: delivery.id,
      event_id: delivery.eventId,
      event_type: delivery.type,
      status: delivery.status,
      created_at: delivery.createdAt.toISOString(),
    },
  };
}
