import { and, count, desc, eq, sql } from "drizzle-orm";
import type { Executor } from "../client.ts";
import { jsonOf, rowsOf } from "../rows.ts";
import {
  tenants,
  type WebhookEventType,
  webhookAttempts,
  webhookDeliveries,
  webhookEndpoints,
  webhookEvents,
} from "../schema/index.ts";
import { isAnyUuid } from "../statement.ts";
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

/**
 * A lead event for each lead a change outside its calls ended (a listing, a lower
 * `max_attempts`): ordered by the lead; the dispatcher adds the lead's record when it sends.
 */
export const leadEvents = (
  type: "lead.completed" | "lead.exhausted",
  tenantId: string,
  leadIds: readonly string[],
  at: Date,
): OutboxEvent[] =>
  leadIds.map((id) => ({ type, tenantId, orderKey: id, data: { lead_id: id }, at }));

/** A Standard Webhooks message id: `msg_` and 32 hex digits, the same on every retry. */
const EVENT_ID_SQL = `'msg_' || replace(gen_random_uuid()::text, '-', '')`;
/** An instant as the API writes it (RFC 3339, UTC, milliseconds); null stays null. */
export const STAMP_SQL = (at: string) =>
  `to_char(${at} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** Whether the workspace `tenant` has an enabled endpoint that takes events of `type`. */
const SUBSCRIBED_SQL = (tenant: string, type: string) => `exists (
      select 1 from webhook_endpoints endpoint
      where endpoint.tenant_id = ${tenant} and endpoint.status = 'enabled'
        and ${type} = any(endpoint.event_types))`;

/**
 * A fragment of a statement (a CTE named `name`) that writes an event for each row of
 * `source` into the outbox, in the statement of the change itself, when an endpoint of the
 * tenant takes `type`: one narrow row, whatever the number of endpoints. The expressions are
 * SQL over `source`'s columns.
 */
export function outboxStatement(
  name: string,
  spec: {
    type: WebhookEventType;
    source: string;
    /** Which of `source`'s rows are events. */
    where?: string;
    tenantId: string;
    orderKey: string;
    data: string;
    at: string;
  },
): string {
  return `
  ${name} as (
    insert into webhook_events (event_id, tenant_id, type, order_key, data, created_at)
    select ${EVENT_ID_SQL}, ${spec.tenantId}, '${spec.type}', ${spec.orderKey}, ${spec.data}, ${spec.at}
    from ${spec.source}
    where ${spec.where ? `(${spec.where}) and ` : ""}${SUBSCRIBED_SQL(spec.tenantId, `'${spec.type}'`)})`;
}

/**
 * The statement that writes events (`$1`, their JSON array, see `eventsParam`) into the
 * outbox. An event no endpoint takes writes nothing.
 */
export const ENQUEUE_EVENTS_SQL = `
  insert into webhook_events (event_id, tenant_id, type, order_key, data, created_at)
  select ${EVENT_ID_SQL}, e.tenant_id::uuid, e.type, e.order_key, e.data, e.at::timestamptz
  from jsonb_to_recordset($1::jsonb) as e(type text, tenant_id text, order_key text, data jsonb, at text)
  where ${SUBSCRIBED_SQL("e.tenant_id::uuid", "e.type")}`;

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

/** A new endpoint, with its cursor at the outbox's end: it gets the events from now on. */
/**
 * The tenant's endpoints, counted under a lock on its row until the transaction ends: creates
 * take turns, so that a cap checked on the count holds under a burst.
 */
export async function countEndpointsLocked(tx: Executor, tenantId: string): Promise<number> {
  await tx.select({ id: tenants.id }).from(tenants).where(eq(tenants.id, tenantId)).for("update");
  const [row] = await tx
    .select({ total: count() })
    .from(webhookEndpoints)
    .where(eq(webhookEndpoints.tenantId, tenantId));
  return row?.total ?? 0;
}

export async function insertEndpoint(db: Executor, row: typeof webhookEndpoints.$inferInsert) {
  const inserted = (await db.insert(webhookEndpoints).values(row).returning())[0];
  await startCursor(db, row.id);
  return inserted as WebhookEndpointRow;
}

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
    : db.select().from(webhookEndpoints).where(isAnyUuid(webhookEndpoints.id, ids));

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
  /** The outbox's event (null for a delivery queued before the outbox was read by cursor). */
  event_seq: number | null;
  /** The message as first sent, for a retry: sent again as it is. */
  body: string | null;
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
        and d.endpoint_id in (select id from webhook_endpoints where status = 'enabled')
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
      d.attempts, ${sql.raw(STAMP_SQL("d.created_at"))} as created_at, d.event_seq, d.body`);
  return rowsOf<LeasedDelivery>(result).map((row) => ({
    ...row,
    payload: jsonOf(row.payload),
    event_seq: row.event_seq === null ? null : Number(row.event_seq),
  }));
}

/** A place in the outbox, in commit order: after every event before (`xid`, `seq`). */
export interface OutboxPosition {
  xid: number;
  seq: number;
}

/** Cursors' positions as one JSON parameter. */
const positionsParam = (positions: ReadonlyMap<string, OutboxPosition>) =>
  JSON.stringify(
    [...positions].map(([endpoint_id, at]) => ({ endpoint_id, xid: at.xid, seq: at.seq })),
  );

/** Whether `a` is further along the outbox than `b`. */
const positionAfter = (a: OutboxPosition, b: OutboxPosition) =>
  a.xid > b.xid || (a.xid === b.xid && a.seq > b.seq);

/** The position every event committed from now on comes after: the oldest running transaction. */
const HORIZON_SQL = "pg_snapshot_xmin(pg_current_snapshot())::text::bigint";

/** Starts an endpoint's cursor at the outbox's end: it gets the events committed from now on. */
export async function startCursor(db: Executor, endpointId: string) {
  await db.execute(sql`
    insert into webhook_cursors (endpoint_id, xid, seq)
    values (${endpointId}::uuid, ${sql.raw(HORIZON_SQL)}, 0)
    on conflict (endpoint_id) do update set xid = excluded.xid, seq = excluded.seq`);
}

/**
 * Renews the leases of the cursors `holder` holds, moving them forward to `positions` (never
 * back), and leases to it those of enabled endpoints that no process holds. Returns each held
 * cursor as stored. A cursor being moved by the holder's own settle is waited for, not
 * skipped: skipped, it would look taken by another process.
 */
export async function claimCursors(
  db: Executor,
  params: {
    holder: string;
    now: Date;
    leaseMs: number;
    positions: ReadonlyMap<string, OutboxPosition>;
  },
): Promise<Map<string, OutboxPosition>> {
  const now = params.now.toISOString();
  const until = new Date(params.now.getTime() + params.leaseMs).toISOString();
  const positions = positionsParam(params.positions);
  const renewed = await db.execute(sql`
    with held as (${lockedCursors(params.holder)})
    update webhook_cursors c set leased_until = ${until}::timestamptz,
      xid = case when (m.xid, m.seq) > (c.xid, c.seq) then m.xid else c.xid end,
      seq = case when (m.xid, m.seq) > (c.xid, c.seq) then m.seq else c.seq end
    from held
    left join jsonb_to_recordset(${positions}::jsonb) as m(endpoint_id uuid, xid bigint, seq bigint)
      on m.endpoint_id = held.endpoint_id
    where c.endpoint_id = held.endpoint_id and c.holder = ${params.holder}
    returning c.endpoint_id, c.xid, c.seq`);
  const taken = await db.execute(sql`
    update webhook_cursors c set holder = ${params.holder}, leased_until = ${until}::timestamptz
    where c.endpoint_id in (
      select free.endpoint_id from webhook_cursors free
      join webhook_endpoints e on e.id = free.endpoint_id and e.status = 'enabled'
      where free.holder is null or free.leased_until <= ${now}::timestamptz
      for update of free skip locked)
    returning c.endpoint_id, c.xid, c.seq`);
  type Row = { endpoint_id: string; xid: string | number; seq: string | number };
  return new Map(
    [...rowsOf<Row>(renewed), ...rowsOf<Row>(taken)].map((row) => [
      row.endpoint_id,
      { xid: Number(row.xid), seq: Number(row.seq) },
    ]),
  );
}

/**
 * The cursors `holder` holds, locked in their endpoints' order: its lease renewal and its
 * settles move the same cursors at the same time, and in one order they never wait in a circle.
 */
const lockedCursors = (holder: string) => sql`
  select endpoint_id from webhook_cursors where holder = ${holder}
  order by endpoint_id for update`;

/** Lets go of `holder`'s cursors, for another process to take at once. */
export const releaseCursors = (db: Executor, holder: string) =>
  db.execute(
    sql`update webhook_cursors set holder = null, leased_until = null where holder = ${holder}`,
  );

/** An outbox event as an endpoint reads it. */
export interface UnreadEvent {
  seq: number;
  xid: number;
  event_id: string;
  tenant_id: string;
  type: string;
  order_key: string;
  data: Record<string, unknown>;
  created_at: string;
  /** Whether an earlier event of its order key waits in the endpoint's retry queue. */
  blocked: boolean;
}

/**
 * The next events of each endpoint's cursor that it takes, `room` at most, read from `from`
 * (or from the stored cursor if another process moved it further), and only those committed
 * by transactions that have ended: `to` is where the read stopped, after the last event read,
 * or at the horizon when fewer than `room` were found. Cursors `holder` no longer holds read
 * nothing.
 */
export async function readOutbox(
  db: Executor,
  params: {
    holder: string;
    cursors: readonly { endpointId: string; from: OutboxPosition; room: number }[];
  },
): Promise<Map<string, { events: UnreadEvent[]; to: OutboxPosition }>> {
  const cursors = JSON.stringify(
    params.cursors.map((c) => ({
      endpoint_id: c.endpointId,
      xid: c.from.xid,
      seq: c.from.seq,
      room: c.room,
    })),
  );
  const result = await db.execute(sql`
    with horizon as materialized (select ${sql.raw(HORIZON_SQL)} as xid),
    wanted as (
      select r.endpoint_id, r.room, e.tenant_id, e.event_types,
        case when (w.xid, w.seq) > (r.xid, r.seq) then w.xid else r.xid end as xid,
        case when (w.xid, w.seq) > (r.xid, r.seq) then w.seq else r.seq end as seq,
        exists (select 1 from webhook_deliveries d
          where d.endpoint_id = r.endpoint_id and d.status = 'pending') as queueing
      from jsonb_to_recordset(${cursors}::jsonb) as r(endpoint_id uuid, xid bigint, seq bigint, room int)
      join webhook_cursors w on w.endpoint_id = r.endpoint_id and w.holder = ${params.holder}
      join webhook_endpoints e on e.id = r.endpoint_id and e.status = 'enabled')
    select wanted.endpoint_id, (select xid from horizon) as horizon, wanted.room,
      wanted.xid as start_xid, wanted.seq as start_seq,
      ev.seq, ev.xid as event_xid, ev.event_id, ev.tenant_id, ev.type,
      coalesce(ev.order_key, ev.event_id) as order_key, ev.data,
      ${sql.raw(STAMP_SQL("ev.created_at"))} as created_at,
      -- Looked up only for an endpoint with a retry queue, which is seldom.
      wanted.queueing and exists (select 1 from webhook_deliveries d
        where d.endpoint_id = wanted.endpoint_id
          and d.order_key = coalesce(ev.order_key, ev.event_id) and d.status = 'pending')
        as blocked
    from wanted
    left join lateral (
      select ev.* from webhook_events ev
      where ev.tenant_id = wanted.tenant_id and (ev.xid, ev.seq) > (wanted.xid, wanted.seq)
        and ev.xid < (select xid from horizon) and ev.type = any(wanted.event_types)
      order by ev.xid, ev.seq limit wanted.room) ev on true
    order by wanted.endpoint_id, ev.xid, ev.seq`);
  type Row = Omit<UnreadEvent, "seq" | "xid" | "data"> & {
    endpoint_id: string;
    horizon: string | number;
    room: number;
    start_xid: string | number;
    start_seq: string | number;
    seq: string | number | null;
    event_xid: string | number | null;
    data: UnreadEvent["data"] | string;
  };
  const rows = new Map<string, Row[]>();
  for (const row of rowsOf<Row>(result)) {
    const of = rows.get(row.endpoint_id) ?? [];
    of.push(row);
    rows.set(row.endpoint_id, of);
  }
  const read = new Map<string, { events: UnreadEvent[]; to: OutboxPosition }>();
  for (const [endpointId, found] of rows) {
    const first = found[0] as Row;
    const events = found.flatMap((row) =>
      row.seq === null
        ? []
        : [
            {
              seq: Number(row.seq),
              xid: Number(row.event_xid),
              event_id: row.event_id,
              tenant_id: row.tenant_id,
              type: row.type,
              order_key: row.order_key,
              data: jsonOf(row.data),
              created_at: row.created_at,
              blocked: row.blocked === true,
            },
          ],
    );
    const last = events.at(-1);
    const start = { xid: Number(first.start_xid), seq: Number(first.start_seq) };
    const horizon = { xid: Number(first.horizon), seq: 0 };
    read.set(endpointId, {
      events,
      to:
        last && events.length >= first.room
          ? { xid: last.xid, seq: last.seq }
          : positionAfter(start, horizon)
            ? start
            : horizon,
    });
  }
  return read;
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
  attempt: Omit<
    typeof webhookAttempts.$inferInsert,
    "deliveryId" | "eventId" | "eventType" | "eventSeq"
  >;
  /** The message sent at a delivery's first attempt, to be sent as it is by its retries. */
  body?: string | undefined;
  /** A first attempt read from the outbox: its delivery has no row in the retry queue. */
  fresh?: boolean;
}

/** An event of the outbox that enters the retry queue: its first attempt failed, or it waits. */
export interface QueuedDelivery {
  delivery: LeasedDelivery;
  /** When it is due: after its first attempt's back-off, or now for one that waits its turn. */
  nextAttemptAt: Date;
  /** False for an event that waits behind an earlier one of its order key. */
  ready: boolean;
}

/**
 * Lets the transaction it runs in commit without waiting for the disk (`synchronous_commit`
 * off until its end), for the dispatcher's settles that queue nothing for retry: lost to a
 * crash of the database, such a settle loses no event, since every event it settled was
 * delivered, given up, or is still in the retry queue to be sent again; only the log of its
 * attempts. Every settle waiting for the disk made the dialer's commits wait longer for
 * theirs. The next commit that does wait writes it to the disk too.
 */
export async function commitWithoutWaitingForDisk(tx: Executor) {
  await tx.execute(sql`set local synchronous_commit = off`);
}

/**
 * Settles a batch of the dispatcher's work in six statements at most, whatever its size: logs
 * the attempts; queues for retry the outbox's events that need it; settles the retry queue's
 * deliveries (done, due again later, or given up) and readies the next of each key; keeps
 * each endpoint's `failing_since` (set at its first failure, cleared at its next success);
 * and moves `holder`'s cursors forward. Run it in a transaction.
 */
export async function settleAttempts(
  db: Executor,
  batch: {
    settled: readonly SettledAttempt[];
    queued?: readonly QueuedDelivery[];
    cursors?: { holder: string; positions: ReadonlyMap<string, OutboxPosition> };
  },
) {
  const { settled, queued = [], cursors } = batch;
  // One JSON parameter rather than a parameter per value: a batch is hundreds of rows.
  if (settled.length > 0) {
    const logged = settled.map(({ delivery, attempt }) => ({
      id: attempt.id,
      tenant_id: attempt.tenantId,
      endpoint_id: attempt.endpointId,
      delivery_id: delivery.id,
      event_id: delivery.event_id,
      event_seq: delivery.event_seq,
      event_type: delivery.type,
      attempt: attempt.attempt,
      attempted_at: attempt.attemptedAt.toISOString(),
      duration_ms: attempt.durationMs,
      response_status: attempt.responseStatus ?? null,
      response_body: attempt.responseBody ?? null,
      error: attempt.error ?? null,
    }));
    await db.execute(sql`
      insert into webhook_attempts (id, tenant_id, endpoint_id, delivery_id, event_id, event_seq,
        event_type, attempt, attempted_at, duration_ms, response_status, response_body, error)
      select * from jsonb_to_recordset(${JSON.stringify(logged)}::jsonb) as a(id uuid,
        tenant_id uuid, endpoint_id uuid, delivery_id uuid, event_id text, event_seq bigint,
        event_type text, attempt int, attempted_at timestamptz, duration_ms int,
        response_status int, response_body text, error text)`);
  }
  if (queued.length > 0) {
    const rows = queued.map(({ delivery, nextAttemptAt, ready }, order) => ({
      order,
      id: delivery.id,
      event_id: delivery.event_id,
      event_seq: delivery.event_seq,
      tenant_id: delivery.tenant_id,
      endpoint_id: delivery.endpoint_id,
      type: delivery.type,
      order_key: delivery.order_key,
      payload: delivery.payload,
      body: delivery.body,
      attempts: delivery.attempts,
      next_attempt_at: nextAttemptAt.toISOString(),
      created_at: delivery.created_at,
      ready,
    }));
    // In the batch's order, so that `seq` keeps each key's events in the order they came.
    await db.execute(sql`
      insert into webhook_deliveries (id, event_id, event_seq, tenant_id, endpoint_id, type,
        order_key, payload, body, attempts, next_attempt_at, created_at, ready)
      select q.id, q.event_id, q.event_seq, q.tenant_id, q.endpoint_id, q.type, q.order_key,
        q.payload, q.body, q.attempts, q.next_attempt_at, q.created_at, q.ready
      from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as q("order" int, id uuid,
        event_id text, event_seq bigint, tenant_id uuid, endpoint_id uuid, type text,
        order_key text, payload jsonb, body text, attempts int, next_attempt_at timestamptz,
        created_at timestamptz, ready boolean)
      order by q."order"
      on conflict (id) do nothing`);
  }
  const retried = settled.filter((s) => !s.fresh);
  if (retried.length > 0) {
    const rows = retried.map(({ delivery, outcome, attempt, body }) => ({
      id: delivery.id,
      attempts: delivery.attempts,
      status: outcome.kind === "retry" ? "pending" : outcome.kind,
      next_at: outcome.kind === "retry" ? outcome.at.toISOString() : null,
      finished_at: outcome.kind === "retry" ? null : attempt.attemptedAt.toISOString(),
      body: outcome.kind === "retry" ? (body ?? null) : null,
    }));
    await db.execute(sql`
      update webhook_deliveries d set status = r.status,
        next_attempt_at = coalesce(r.next_at, d.next_attempt_at), leased_until = null,
        finished_at = r.finished_at, body = coalesce(d.body, r.body)
      from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
        as r(id uuid, attempts int, status text, next_at timestamptz, finished_at timestamptz,
          body text)
      -- A lease that ran out before its attempt was settled may have been taken again: the
      -- later attempt settles the row.
      where d.id = r.id and d.attempts = r.attempts`);
    // The next event of each key whose event is done may go now.
    const finished = retried
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
  }
  if (settled.length > 0) {
    const succeeded = new Set(
      settled.filter((s) => s.outcome.kind === "delivered").map((s) => s.delivery.endpoint_id),
    );
    const failing = new Set(
      settled.map((s) => s.delivery.endpoint_id).filter((id) => !succeeded.has(id)),
    );
    const at = settled[0]?.attempt.attemptedAt.toISOString();
    await db.execute(sql`
      update webhook_endpoints set failing_since = case
          when ${isAnyUuid(webhookEndpoints.id, [...succeeded])} then null
          else ${at}::timestamptz end
      where (${isAnyUuid(webhookEndpoints.id, [...succeeded])} and failing_since is not null)
        or (${isAnyUuid(webhookEndpoints.id, [...failing])} and failing_since is null)`);
  }
  if (cursors && cursors.positions.size > 0) {
    await db.execute(sql`
      with held as (${lockedCursors(cursors.holder)})
      update webhook_cursors c set xid = p.xid, seq = p.seq
      from held join jsonb_to_recordset(${positionsParam(cursors.positions)}::jsonb)
        as p(endpoint_id uuid, xid bigint, seq bigint) on p.endpoint_id = held.endpoint_id
      where c.endpoint_id = held.endpoint_id and c.holder = ${cursors.holder}
        and (p.xid, p.seq) > (c.xid, c.seq)`);
  }
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

/**
 * The outbox's event `eventSeq`, due again now for `endpointId` under the same id, with the
 * body its delivery `deliveryId` first sent if that was kept (the event was tried again, or
 * sent again before); else the body is made anew.
 */
export async function redeliver(
  db: Executor,
  params: { eventSeq: number; deliveryId: string; endpointId: string; at: Date },
) {
  const event = (
    await db.select().from(webhookEvents).where(eq(webhookEvents.seq, params.eventSeq))
  )[0];
  if (!event) return undefined;
  const orderKey = event.orderKey ?? event.eventId;
  const [sent] = await db
    .select({ body: webhookDeliveries.body })
    .from(webhookDeliveries)
    .where(
      and(
        eq(webhookDeliveries.id, params.deliveryId),
        eq(webhookDeliveries.endpointId, params.endpointId),
      ),
    );
  const waiting = await db
    .select({ id: webhookDeliveries.id })
    .from(webhookDeliveries)
    .where(
      and(
        eq(webhookDeliveries.endpointId, params.endpointId),
        eq(webhookDeliveries.orderKey, orderKey),
        eq(webhookDeliveries.status, "pending"),
      ),
    )
    .limit(1);
  return (
    await db
      .insert(webhookDeliveries)
      .values({
        id: Bun.randomUUIDv7(),
        eventId: event.eventId,
        eventSeq: event.seq,
        tenantId: event.tenantId,
        endpointId: params.endpointId,
        type: event.type,
        orderKey,
        payload: { type: event.type, timestamp: event.createdAt.toISOString(), data: event.data },
        body: sent?.body ?? null,
        nextAttemptAt: params.at,
        createdAt: params.at,
        ready: waiting.length === 0,
      })
      .returning()
  )[0];
}

/**
 * Deliveries finished before `before`, attempts logged before it, and the outbox's events
 * written before it: kept 35 days. The outbox is trimmed from its start, where its oldest are.
 */
export async function deleteOldDeliveries(db: Executor, before: Date) {
  await db.execute(sql`
    delete from webhook_events where seq < coalesce((
      select seq from webhook_events where created_at >= ${before.toISOString()}::timestamptz
      order by seq limit 1), (select max(seq) + 1 from webhook_events))`);
  await db.execute(
    sql`delete from webhook_deliveries where status <> 'pending' and finished_at < ${before.toISOString()}::timestamptz`,
  );
  await db.execute(
    sql`delete from webhook_attempts where attempted_at < ${before.toISOString()}::timestamptz`,
  );
}

/**
 * Reclaims the dead row versions a lease and a settle leave of each delivery in the retry
 * queue. Without it they pile up until every lease wades through them while a receiver is
 * back from an outage: PGlite has no autovacuum, and PostgreSQL's comes a minute apart and
 * only once a fifth of the table is dead. A vacuum another process runs is not waited for.
 * The outbox and the attempts' log are only ever appended to.
 */
export const vacuumRetryQueue = (db: Executor) =>
  db.execute(sql`vacuum (skip_locked) webhook_deliveries`);
