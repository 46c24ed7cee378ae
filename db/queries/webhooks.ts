import { and, count, desc, eq, inArray, sql } from "drizzle-orm";
import type { Executor } from "../client.ts";
import { rowsOf } from "../rows.ts";
import {
  type WebhookEventType,
  webhookAttempts,
  webhookDeliveries,
  webhookEndpoints,
} from "../schema/index.ts";
import { paged } from "./paged.ts";

export type WebhookEndpointRow = typeof webhookEndpoints.$inferSelect;
export type WebhookAttemptRow = typeof webhookAttempts.$inferSelect;

/** An event to report, written beside the change it reports. */
export interface OutboxEvent {
  type: WebhookEventType;
  tenantId: string;
  /** The call or lead whose events an endpoint gets in order; null for none. */
  orderKey: string | null;
  data: Record<string, unknown>;
  at: Date;
}

/** A Standard Webhooks message id: `msg_` and 32 hex digits, the same on every retry. */
const EVENT_ID_SQL = `'msg_' || replace(gen_random_uuid()::text, '-', '')`;
/** An instant as the API writes it (RFC 3339, UTC, milliseconds); null stays null. */
export const STAMP_SQL = (at: string) =>
  `to_char(${at} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * A fragment of a statement (a CTE named `name`) that writes an event for each row of
 * `source` into the outbox of each enabled endpoint of the tenant that takes `type`, in the
 * statement of the change itself. The event's id is drawn once per row (the materialized
 * CTE), so every endpoint gets the same. The expressions are SQL over `source`'s columns.
 */
export function outboxStatement(
  name: string,
  spec: {
    type: WebhookEventType;
    source: string;
    tenantId: string;
    orderKey: string;
    data: string;
    at: string;
  },
): string {
  return `
  ${name}_events as materialized (
    select ${EVENT_ID_SQL} as event_id, ${spec.tenantId} as tenant_id,
      ${spec.orderKey} as order_key, ${spec.data} as data, ${spec.at} as at
    from ${spec.source}),
  ${name} as (
    insert into webhook_deliveries (id, event_id, tenant_id, endpoint_id, type, order_key,
      payload, next_attempt_at, created_at)
    select gen_random_uuid(), ev.event_id, ev.tenant_id, endpoint.id, '${spec.type}', ev.order_key,
      jsonb_build_object('type', '${spec.type}', 'timestamp', ${STAMP_SQL("ev.at")}, 'data', ev.data),
      ev.at, ev.at
    from ${name}_events ev
    join webhook_endpoints endpoint on endpoint.tenant_id = ev.tenant_id
      and endpoint.status = 'enabled' and '${spec.type}' = any(endpoint.event_types))`;
}

/**
 * The statement that writes events (`$1`, their JSON array, see `eventsParam`) into the
 * outbox of the endpoints that take them. An event no endpoint takes writes nothing.
 */
export const ENQUEUE_EVENTS_SQL = `
  with ev as materialized (
    select ${EVENT_ID_SQL} as event_id, e.type, e.tenant_id::uuid as tenant_id,
      e.order_key, e.data, e.at::timestamptz as at
    from jsonb_to_recordset($1::jsonb) as e(type text, tenant_id text, order_key text, data jsonb, at text))
  insert into webhook_deliveries (id, event_id, tenant_id, endpoint_id, type, order_key,
    payload, next_attempt_at, created_at)
  select gen_random_uuid(), ev.event_id, ev.tenant_id, endpoint.id, ev.type, ev.order_key,
    jsonb_build_object('type', ev.type, 'timestamp', ${STAMP_SQL("ev.at")}, 'data', ev.data),
    ev.at, ev.at
  from ev
  join webhook_endpoints endpoint on endpoint.tenant_id = ev.tenant_id
    and endpoint.status = 'enabled' and ev.type = any(endpoint.event_types)`;

export const eventsParam = (events: readonly OutboxEvent[]) =>
  JSON.stringify(
    events.map((event) => ({
      type: event.type,
      tenant_id: event.tenantId,
      order_key: event.orderKey,
      data: event.data,
      at: event.at.toISOString(),
    })),
  );

const [BEFORE_EVENTS, AFTER_EVENTS] = ENQUEUE_EVENTS_SQL.split("$1");

/** Writes events into the outbox; run it in the transaction of the change they report. */
export async function enqueueEvents(db: Executor, events: readonly OutboxEvent[]) {
  if (events.length === 0) return;
  await db.execute(
    sql`${sql.raw(BEFORE_EVENTS ?? "")}${eventsParam(events)}${sql.raw(AFTER_EVENTS ?? "")}`,
  );
}

export const insertEndpoint = async (db: Executor, row: typeof webhookEndpoints.$inferInsert) =>
  (await db.insert(webhookEndpoints).values(row).returning())[0] as WebhookEndpointRow;

export const findTenantEndpoint = async (db: Executor, params: { tenantId: string; id: string }) =>
  (
    await db
      .select()
      .from(webhookEndpoints)
      .where(
        and(eq(webhookEndpoints.tenantId, params.tenantId), eq(webhookEndpoints.id, params.id)),
      )
  )[0];

export const findEndpoints = (db: Executor, ids: string[]) =>
  ids.length === 0
    ? Promise.resolve([])
    : db.select().from(webhookEndpoints).where(inArray(webhookEndpoints.id, ids));

export function listEndpoints(
  db: Executor,
  params: { tenantId: string; page: { limit: number; offset: number } },
) {
  const mine = eq(webhookEndpoints.tenantId, params.tenantId);
  return paged(
    db
      .select()
      .from(webhookEndpoints)
      .where(mine)
      .orderBy(desc(webhookEndpoints.createdAt), desc(webhookEndpoints.id))
      .limit(params.page.limit)
      .offset(params.page.offset),
    db.select({ total: count() }).from(webhookEndpoints).where(mine),
  );
}

export const updateEndpoint = async (
  db: Executor,
  params: { tenantId: string; id: string; set: Partial<typeof webhookEndpoints.$inferInsert> },
) =>
  (
    await db
      .update(webhookEndpoints)
      .set(params.set)
      .where(
        and(eq(webhookEndpoints.tenantId, params.tenantId), eq(webhookEndpoints.id, params.id)),
      )
      .returning()
  )[0];

/** Removes an endpoint; its events not yet delivered are cancelled, its log kept. */
export async function deleteEndpoint(
  db: Executor,
  params: { tenantId: string; id: string; at: Date },
) {
  await db
    .update(webhookDeliveries)
    .set({ status: "cancelled", finishedAt: params.at, leasedUntil: null })
    .where(
      and(eq(webhookDeliveries.endpointId, params.id), eq(webhookDeliveries.status, "pending")),
    );
  return (
    await db
      .delete(webhookEndpoints)
      .where(
        and(eq(webhookEndpoints.tenantId, params.tenantId), eq(webhookEndpoints.id, params.id)),
      )
      .returning()
  )[0];
}

/** A delivery leased for one attempt. */
export interface LeasedDelivery {
  id: string;
  event_id: string;
  tenant_id: string;
  endpoint_id: string;
  type: string;
  payload: { type: string; timestamp: string; data: Record<string, unknown> };
  /** This attempt's number, from 1. */
  attempts: number;
  created_at: string;
}

/**
 * Leases up to `limit` due deliveries for one attempt each, skipping rows another process
 * holds (`skip locked`) and endpoints at their share of this process (`busy`). Only the
 * oldest pending event per endpoint and call or lead is due: the next waits for it, so
 * retries never reorder them. A lease that runs out (a killed process) makes a row due again.
 */
export async function leaseDueDeliveries(
  db: Executor,
  params: { now: Date; leaseMs: number; limit: number; busy: readonly string[] },
): Promise<LeasedDelivery[]> {
  const now = params.now.toISOString();
  const until = new Date(params.now.getTime() + params.leaseMs).toISOString();
  const busy = `{${params.busy.join(",")}}`;
  const result = await db.execute(sql`
    with due as (
      select d.id from webhook_deliveries d
      join webhook_endpoints endpoint on endpoint.id = d.endpoint_id and endpoint.status = 'enabled'
      where d.status = 'pending' and d.next_attempt_at <= ${now}::timestamptz
        and (d.leased_until is null or d.leased_until <= ${now}::timestamptz)
        and d.endpoint_id <> all(${busy}::uuid[])
        and not exists (
          select 1 from webhook_deliveries earlier
          where earlier.endpoint_id = d.endpoint_id and earlier.order_key = d.order_key
            and earlier.status = 'pending' and earlier.seq < d.seq)
      order by d.next_attempt_at, d.seq
      limit ${params.limit}
      for update of d skip locked)
    update webhook_deliveries d set leased_until = ${until}::timestamptz, attempts = d.attempts + 1
    from due where d.id = due.id
    returning d.id, d.event_id, d.tenant_id, d.endpoint_id, d.type, d.payload, d.attempts,
      ${sql.raw(STAMP_SQL("d.created_at"))} as created_at`);
  return rowsOf<LeasedDelivery>(result).map((row) => ({
    ...row,
    payload: typeof row.payload === "string" ? JSON.parse(row.payload) : row.payload,
  }));
}

/** What became of one attempt. */
export type AttemptOutcome =
  | { kind: "delivered" }
  | { kind: "retry"; at: Date }
  | { kind: "failed" };

/**
 * Logs an attempt and settles its delivery: done, due again later, or given up. The
 * endpoint's `failing_since` starts at its first failure and clears at its next success.
 */
export async function settleAttempt(
  db: Executor,
  params: {
    delivery: LeasedDelivery;
    outcome: AttemptOutcome;
    attempt: Omit<typeof webhookAttempts.$inferInsert, "deliveryId" | "eventId" | "eventType">;
    /** Replaces the stored payload: the data read for its first attempt. */
    payload?: LeasedDelivery["payload"];
  },
) {
  const { delivery, outcome, attempt } = params;
  const at = attempt.attemptedAt;
  await db.insert(webhookAttempts).values({
    ...attempt,
    deliveryId: delivery.id,
    eventId: delivery.event_id,
    eventType: delivery.type,
  });
  await db
    .update(webhookDeliveries)
    .set({
      status: outcome.kind === "retry" ? "pending" : outcome.kind,
      nextAttemptAt:
        outcome.kind === "retry" ? outcome.at : sql`${webhookDeliveries.nextAttemptAt}`,
      leasedUntil: null,
      finishedAt: outcome.kind === "retry" ? null : at,
      ...(params.payload ? { payload: params.payload } : {}),
    })
    .where(eq(webhookDeliveries.id, delivery.id));
  await db
    .update(webhookEndpoints)
    .set({
      failingSince:
        outcome.kind === "delivered"
          ? null
          : sql`coalesce(${webhookEndpoints.failingSince}, ${at.toISOString()}::timestamptz)`,
    })
    .where(eq(webhookEndpoints.id, delivery.endpoint_id));
}

export function listAttempts(
  db: Executor,
  params: { endpointId: string; page: { limit: number; offset: number } },
) {
  const mine = eq(webhookAttempts.endpointId, params.endpointId);
  return paged(
    db
      .select()
      .from(webhookAttempts)
      .where(mine)
      .orderBy(desc(webhookAttempts.attemptedAt), desc(webhookAttempts.id))
      .limit(params.page.limit)
      .offset(params.page.offset),
    db.select({ total: count() }).from(webhookAttempts).where(mine),
  );
}

export const findAttempt = async (db: Executor, params: { endpointId: string; id: string }) =>
  (
    await db
      .select()
      .from(webhookAttempts)
      .where(
        and(eq(webhookAttempts.endpointId, params.endpointId), eq(webhookAttempts.id, params.id)),
      )
  )[0];

/** The event of an attempt, due again now for its endpoint under the same id. */
export async function redeliver(db: Executor, params: { deliveryId: string; at: Date }) {
  const source = (
    await db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, params.deliveryId))
  )[0];
  if (!source) return undefined;
  return (
    await db
      .insert(webhookDeliveries)
      .values({
        id: Bun.randomUUIDv7(),
        eventId: source.eventId,
        tenantId: source.tenantId,
        endpointId: source.endpointId,
        type: source.type,
        orderKey: source.orderKey,
        payload: source.payload,
        nextAttemptAt: params.at,
        createdAt: params.at,
      })
      .returning()
  )[0];
}

/** Deliveries finished before `before`, and attempts logged before it: kept 35 days. */
export async function deleteOldDeliveries(db: Executor, before: Date) {
  await db.execute(
    sql`delete from webhook_deliveries where status <> 'pending' and finished_at < ${before.toISOString()}::timestamptz`,
  );
  await db.execute(
    sql`delete from webhook_attempts where attempted_at < ${before.toISOString()}::timestamptz`,
  );
}
