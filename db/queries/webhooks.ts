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
 * Whether an event being written (`ev`, for `endpoint`) may be sent at once: it has no
 * order key, or nothing of its key is pending before it.
 */
const READY_SQL = `(ev.order_key is null or not exists (
      select 1 from webhook_deliveries earlier
      where earlier.endpoint_id = endpoint.id and earlier.order_key = ev.order_key
        and earlier.status = 'pending'))`;

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
      payload, next_attempt_at, created_at, ready)
    select gen_random_uuid(), ev.event_id, ev.tenant_id, endpoint.id, '${spec.type}',
      coalesce(ev.order_key, ev.event_id),
      jsonb_build_object('type', '${spec.type}', 'timestamp', ${STAMP_SQL("ev.at")}, 'data', ev.data),
      ev.at, ev.at, ${READY_SQL}
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
    payload, next_attempt_at, created_at, ready)
  select gen_random_uuid(), ev.event_id, ev.tenant_id, endpoint.id, ev.type,
    coalesce(ev.order_key, ev.event_id),
    jsonb_build_object('type', ev.type, 'timestamp', ${STAMP_SQL("ev.at")}, 'data', ev.data),
    ev.at, ev.at, ${READY_SQL}
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
  order_key: string;
  payload: { type: string; timestamp: string; data: Record<string, unknown> };
  /** This attempt's number, from 1. */
  attempts: number;
  created_at: string;
}

/**
 * Leases due deliveries for one attempt each: at most `perEndpoint` of one endpoint and none
 * of `busy` ones (at their share of this process), skipping rows another process holds
 * (`skip locked`, the lease re-checked on a row just changed). Only `ready` rows are due, the
 * oldest pending event of an endpoint's call, lead, campaign or agent, so that retries never
 * reorder them; the index of ready rows makes a lease cost what it takes, not the backlog.
 * A lease that runs out (a killed process) makes a row due again.
 */
export async function leaseDueDeliveries(
  db: Executor,
  params: {
    now: Date;
    leaseMs: number;
    limit: number;
    perEndpoint: number;
    busy: readonly string[];
  },
): Promise<LeasedDelivery[]> {
  const now = params.now.toISOString();
  const until = new Date(params.now.getTime() + params.leaseMs).toISOString();
  const busy = `{${params.busy.join(",")}}`;
  const result = await db.execute(sql`
    with due as (
      select d.id, d.endpoint_id, d.next_attempt_at, d.seq from webhook_deliveries d
      where d.status = 'pending' and d.ready and d.next_attempt_at <= ${now}::timestamptz
        and (d.leased_until is null or d.leased_until <= ${now}::timestamptz)
        and d.endpoint_id <> all(${busy}::uuid[])
      order by d.next_attempt_at
      limit ${params.limit * 4}),
    ranked as (
      select due.id, due.next_attempt_at, due.seq,
        row_number() over (partition by due.endpoint_id order by due.next_attempt_at, due.seq) as turn
      from due),
    picked as (
      select d.id from webhook_deliveries d
      where d.id in (
          select id from ranked where turn <= ${params.perEndpoint}
          order by next_attempt_at, seq limit ${params.limit})
        and d.status = 'pending'
        and (d.leased_until is null or d.leased_until <= ${now}::timestamptz)
      for update of d skip locked)
    update webhook_deliveries d set leased_until = ${until}::timestamptz, attempts = d.attempts + 1
    from picked where d.id = picked.id
    returning d.id, d.event_id, d.tenant_id, d.endpoint_id, d.type, d.order_key, d.payload,
      d.attempts, ${sql.raw(STAMP_SQL("d.created_at"))} as created_at`);
  return rowsOf<LeasedDelivery>(result).map((row) => ({
    ...row,
    payload: typeof row.payload === "string" ? JSON.parse(row.payload) : row.payload,
  }));
}

/**
 * Makes the oldest pending event of each (endpoint, order key) ready where none is: after an
 * event was settled while the next of its key was being written (neither saw the other), or
 * when an endpoint is enabled again. `endpointId` narrows it to one endpoint.
 */
export async function readyHeads(db: Executor, endpointId?: string) {
  await db.execute(sql`
    update webhook_deliveries set ready = true
    where id in (
      select distinct on (endpoint_id, order_key) id from webhook_deliveries
      where status = 'pending' ${endpointId ? sql`and endpoint_id = ${endpointId}::uuid` : sql``}
        and endpoint_id in (select id from webhook_endpoints where status = 'enabled')
      order by endpoint_id, order_key, seq)
      and not ready`);
}

/** A disabled endpoint's pending events leave the ready index, so leases never scan them. */
export const holdEndpointDeliveries = (db: Executor, endpointId: string) =>
  db
    .update(webhookDeliveries)
    .set({ ready: false })
    .where(
      and(eq(webhookDeliveries.endpointId, endpointId), eq(webhookDeliveries.status, "pending")),
    );

/** What became of one attempt. */
export type AttemptOutcome =
  | { kind: "delivered" }
  | { kind: "retry"; at: Date }
  | { kind: "failed" };

/** One attempt as it ended, to be settled with others. */
export interface SettledAttempt {
  delivery: LeasedDelivery;
  outcome: AttemptOutcome;
  attempt: Omit<typeof webhookAttempts.$inferInsert, "deliveryId" | "eventId" | "eventType">;
  /** Replaces the stored payload: the data read for its first attempt. */
  payload?: LeasedDelivery["payload"] | undefined;
}

/**
 * Logs attempts and settles their deliveries (done, due again later, or given up) in three
 * statements whatever their number: run it in one transaction. An endpoint's
 * `failing_since` starts at its first failure and clears at its next success.
 */
export async function settleAttempts(db: Executor, settled: readonly SettledAttempt[]) {
  if (settled.length === 0) return;
  // One JSON parameter rather than a parameter per value: a batch is hundreds of rows.
  const logged = settled.map(({ delivery, attempt }) => ({
    id: attempt.id,
    tenant_id: attempt.tenantId,
    endpoint_id: attempt.endpointId,
    delivery_id: delivery.id,
    event_id: delivery.event_id,
    event_type: delivery.type,
    attempt: attempt.attempt,
    attempted_at: attempt.attemptedAt.toISOString(),
    duration_ms: attempt.durationMs,
    response_status: attempt.responseStatus ?? null,
    response_body: attempt.responseBody ?? null,
    error: attempt.error ?? null,
  }));
  await db.execute(sql`
    insert into webhook_attempts (id, tenant_id, endpoint_id, delivery_id, event_id, event_type,
      attempt, attempted_at, duration_ms, response_status, response_body, error)
    select * from jsonb_to_recordset(${JSON.stringify(logged)}::jsonb) as a(id uuid,
      tenant_id uuid, endpoint_id uuid, delivery_id uuid, event_id text, event_type text,
      attempt int, attempted_at timestamptz, duration_ms int, response_status int,
      response_body text, error text)`);
  const rows = settled.map(({ delivery, outcome, attempt, payload }) => ({
    id: delivery.id,
    attempts: delivery.attempts,
    status: outcome.kind === "retry" ? "pending" : outcome.kind,
    next_at: outcome.kind === "retry" ? outcome.at.toISOString() : null,
    finished_at: outcome.kind === "retry" ? null : attempt.attemptedAt.toISOString(),
    payload: payload ?? null,
  }));
  await db.execute(sql`
    update webhook_deliveries d set status = r.status,
      next_attempt_at = coalesce(r.next_at, d.next_attempt_at), leased_until = null,
      finished_at = r.finished_at, payload = coalesce(r.payload, d.payload)
    from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
      as r(id uuid, attempts int, status text, next_at timestamptz, finished_at timestamptz,
        payload jsonb)
    -- A lease that ran out before its attempt was settled may have been taken again: the
    -- later attempt settles the row.
    where d.id = r.id and d.attempts = r.attempts`);
  // The next event of each key whose event is done may go now.
  const finished = settled
    .filter((s) => s.outcome.kind !== "retry")
    .map((s) => ({ endpoint_id: s.delivery.endpoint_id, order_key: s.delivery.order_key }));
  if (finished.length > 0)
    await db.execute(sql`
      update webhook_deliveries set ready = true
      where id in (
        select (
          select next.id from webhook_deliveries next
          where next.endpoint_id = f.endpoint_id and next.order_key = f.order_key
            and next.status = 'pending'
          order by next.seq limit 1)
        from jsonb_to_recordset(${JSON.stringify(finished)}::jsonb)
          as f(endpoint_id uuid, order_key text))`);
  const succeeded = new Set(
    settled.filter((s) => s.outcome.kind === "delivered").map((s) => s.delivery.endpoint_id),
  );
  const failing = new Set(
    settled.map((s) => s.delivery.endpoint_id).filter((id) => !succeeded.has(id)),
  );
  const at = settled[0]?.attempt.attemptedAt.toISOString();
  await db.execute(sql`
    update webhook_endpoints set failing_since = case
        when id = any(${`{${[...succeeded].join(",")}}`}::uuid[]) then null
        else ${at}::timestamptz end
    where (id = any(${`{${[...succeeded].join(",")}}`}::uuid[]) and failing_since is not null)
      or (id = any(${`{${[...failing].join(",")}}`}::uuid[]) and failing_since is null)`);
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
  const waiting = await db
    .select({ id: webhookDeliveries.id })
    .from(webhookDeliveries)
    .where(
      and(
        eq(webhookDeliveries.endpointId, source.endpointId),
        eq(webhookDeliveries.orderKey, source.orderKey ?? source.eventId),
        eq(webhookDeliveries.status, "pending"),
      ),
    )
    .limit(1);
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
        ready: waiting.length === 0,
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

/**
 * Reclaims the dead row versions a lease and a settle leave of each delivery. Without it they
 * pile up until every lease wades through them, and delivery at a thousand events a second
 * falls behind: PGlite has no autovacuum, and PostgreSQL's comes a minute apart and only once
 * a fifth of the table is dead. A vacuum another process runs is not waited for. The attempts'
 * log is only ever appended to.
 */
export const vacuumOutbox = (db: Executor) =>
  db.execute(sql`vacuum (skip_locked) webhook_deliveries`);
