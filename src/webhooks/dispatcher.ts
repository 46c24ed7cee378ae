import type { Database } from "../../db/client.ts";
import { raiseAlert } from "../../db/queries/alerts.ts";
import {
  type AttemptOutcome,
  deleteOldDeliveries,
  findEndpoints,
  holdEndpointDeliveries,
  type LeasedDelivery,
  leaseDueDeliveries,
  readyHeads,
  type SettledAttempt,
  settleAttempts,
  updateEndpoint,
  vacuumOutbox,
  type WebhookEndpointRow,
} from "../../db/queries/webhooks.ts";
import { recordAudit } from "../identity/audit.ts";
import type { Logger } from "../logger.ts";
import { alertView } from "../modules/alerts/service.ts";
import type { RealtimeHub } from "../realtime/hub.ts";
import { type Resolve, refusalOf } from "./addresses.ts";
import { completePayloads } from "./events.ts";
import { retryAt } from "./retries.ts";
import { postEvent } from "./send.ts";
import { signedHeaders, signingSecrets } from "./signing.ts";

export interface DispatcherDeps {
  db: Database;
  clock: { now(): number };
  logger: Logger;
  realtime: Pick<RealtimeHub, "toSupervisors">;
  resolve: Resolve;
  allowPrivateNetworks: boolean;
  retryWindowMs: number;
  disableAfterMs: number;
}

/** How long delivered and given-up events, and every attempt, stay in the log. */
const KEEP_MS = 35 * 86_400_000;
/**
 * How often events whose predecessor was settled while they were being written are made
 * ready (a scan of the pending rows; the race it repairs is rare).
 */
const REPAIR_EVERY_MS = 5_000;
/** How often the log is trimmed: a scan of old rows, not worth more often. */
const TRIM_EVERY_MS = 3_600_000;

export const DISPATCH_LIMITS = {
  /** Deliveries in flight from this process at once. */
  inFlight: 512,
  /** Of which to one endpoint: a slow receiver holds these, never the others'. */
  perEndpoint: 128,
  /** How long a lease holds a delivery: past the time-out, so a live attempt keeps it. */
  leaseMs: 30_000,
  /** How often an idle dispatcher looks for due deliveries. */
  pollMs: 50,
  /**
   * A busy one leases at most this often: a lease costs a scan of the ready index whatever it
   * returns, so a few large ones cost the database less than many small ones. An endpoint gets
   * at most `perEndpoint` events a gap from a process: 2,560 a second here.
   */
  leaseGapMs: 50,
  /** Ended attempts are settled together, this often or at this many. */
  settleEveryMs: 10,
  settleBatch: 256,
  timeoutMs: 10_000,
  /** At most this much of an answer is read... */
  readBytes: 64 * 1024,
  /** ...and this much kept in the log. */
  keepBytes: 1024,
  /**
   * How often the dispatcher vacuums the outbox (0: never), once this many settled deliveries
   * have left dead row versions behind: see `vacuumOutbox`.
   */
  vacuumEveryMs: 1_000,
  vacuumAfterSettled: 1_000,
};

/**
 * PGlite runs one statement at a time in this process's own thread: larger batches there only
 * lengthen each statement the dialer waits behind, so it keeps a quarter of the room, and
 * leases more often to make up for it (3,200 events a second an endpoint).
 */
export const dispatchLimitsFor = (database: "pglite" | "postgres") =>
  database === "pglite"
    ? { ...DISPATCH_LIMITS, inFlight: 128, perEndpoint: 32, leaseGapMs: 10 }
    : DISPATCH_LIMITS;

/**
 * Delivers the outbox: leases due deliveries in batches (several processes share them, each
 * row going to one), signs and posts each, and settles the ended attempts together: logged,
 * and delivered, due again later, or given up. An endpoint that answers 410 or fails for
 * days is disabled.
 */
export class WebhookDispatcher {
  private readonly perEndpoint = new Map<string, number>();
  private inFlight = 0;
  private stopped = true;
  private wakeUp: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  private readonly running = new Set<Promise<void>>();
  /** Attempts that ended, waiting to be settled. */
  private ended: { settled: SettledAttempt; endpoint: WebhookEndpointRow }[] = [];
  private settling: Promise<void> = Promise.resolve();
  private settleTimer: ReturnType<typeof setTimeout> | undefined;
  /** Deliveries settled since the outbox was last vacuumed: each left a dead row version. */
  private settledSinceVacuum = 0;
  private leasedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly deps: DispatcherDeps,
    private readonly limits = DISPATCH_LIMITS,
  ) {}

  start() {
    if (!this.stopped) return;
    this.stopped = false;
    this.loop = this.run();
  }

  /**
   * Stops leasing; waits for the attempts in flight and settles them, since their leases
   * would otherwise have to run out.
   */
  async stop() {
    this.stopped = true;
    this.wakeUp?.();
    await this.loop;
    await Promise.allSettled([...this.running]);
    await this.settle();
  }

  /** Looks for due deliveries now, rather than at the next poll. */
  wake() {
    this.wakeUp?.();
  }

  private async run() {
    let trimmedAt = 0;
    let repairedAt = 0;
    let vacuumedAt = 0;
    while (!this.stopped) {
      const now = this.deps.clock.now();
      if (
        this.limits.vacuumEveryMs > 0 &&
        now - vacuumedAt >= this.limits.vacuumEveryMs &&
        this.settledSinceVacuum >= this.limits.vacuumAfterSettled
      ) {
        vacuumedAt = now;
        this.settledSinceVacuum = 0;
        await vacuumOutbox(this.deps.db).catch((error) =>
          this.deps.logger.warn("the webhook outbox could not be vacuumed", { error }),
        );
      }
      if (now - repairedAt >= REPAIR_EVERY_MS) {
        repairedAt = now;
        await readyHeads(this.deps.db).catch((error) =>
          this.deps.logger.warn("webhook deliveries could not be made ready", { error }),
        );
      }
      if (now - trimmedAt >= TRIM_EVERY_MS) {
        trimmedAt = now;
        deleteOldDeliveries(this.deps.db, new Date(now - KEEP_MS)).catch((error) =>
          this.deps.logger.warn("old webhook deliveries could not be deleted", { error }),
        );
      }
      const sinceLease = performance.now() - this.leasedAt;
      if (sinceLease < this.limits.leaseGapMs) await Bun.sleep(this.limits.leaseGapMs - sinceLease);
      this.leasedAt = performance.now();
      let leased = 0;
      try {
        leased = await this.leaseAndSend();
      } catch (error) {
        this.deps.logger.warn("webhook deliveries could not be leased", { error });
      }
      if (leased === 0 || this.inFlight >= this.limits.inFlight) await this.pause();
    }
  }

  private pause() {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, this.limits.pollMs);
      const self = this;
      function done() {
        clearTimeout(timer);
        self.wakeUp = undefined;
        resolve();
      }
      this.wakeUp = done;
    });
  }

  private async leaseAndSend(): Promise<number> {
    const room = this.limits.inFlight - this.inFlight;
    if (room <= 0) return 0;
    const busy = [...this.perEndpoint]
      .filter(([, count]) => count >= this.limits.perEndpoint)
      .map(([id]) => id);
    const now = new Date(this.deps.clock.now());
    const leased = await leaseDueDeliveries(this.deps.db, {
      now,
      leaseMs: this.limits.leaseMs,
      limit: room,
      perEndpoint: this.limits.perEndpoint,
      busy,
    });
    if (leased.length === 0) return 0;
    const endpoints = new Map(
      (await findEndpoints(this.deps.db, [...new Set(leased.map((d) => d.endpoint_id))])).map(
        (row) => [row.id, row],
      ),
    );
    const payloads = await completePayloads(this.deps.db, leased);
    for (const delivery of leased) {
      const endpoint = endpoints.get(delivery.endpoint_id);
      const payload = payloads.get(delivery.id);
      if (!endpoint || !payload) continue;
      this.track(endpoint.id, this.attempt(endpoint, delivery, payload));
    }
    return leased.length;
  }

  private track(endpointId: string, attempt: Promise<void>) {
    this.inFlight++;
    this.perEndpoint.set(endpointId, (this.perEndpoint.get(endpointId) ?? 0) + 1);
    const running = attempt
      .catch((error) => this.deps.logger.error("a webhook attempt failed", { error }))
      .finally(() => {
        this.inFlight--;
        const left = (this.perEndpoint.get(endpointId) ?? 1) - 1;
        if (left === 0) this.perEndpoint.delete(endpointId);
        else this.perEndpoint.set(endpointId, left);
        this.running.delete(running);
        this.wake();
      });
    this.running.add(running);
  }

  /** Sends one delivery and queues what came of it to be settled. */
  private async attempt(
    endpoint: WebhookEndpointRow,
    delivery: LeasedDelivery,
    sent: { payload: LeasedDelivery["payload"]; completed: boolean },
  ) {
    const started = new Date(this.deps.clock.now());
    const startedMs = performance.now();
    const url = new URL(endpoint.url);
    // Checked at every attempt: the name may resolve elsewhere than when it was registered.
    const refusal = await refusalOf(url, {
      allowPrivate: this.deps.allowPrivateNetworks,
      resolve: this.deps.resolve,
    });
    const body = JSON.stringify(sent.payload);
    const result = refusal
      ? { error: `not sent: the URL ${refusal}` }
      : await postEvent(
          endpoint.url,
          signedHeaders(signingSecrets(endpoint, started), delivery.event_id, started, body),
          body,
          {
            timeoutMs: this.limits.timeoutMs,
            maxBytes: this.limits.readBytes,
            keepBytes: this.limits.keepBytes,
          },
        );
    const delivered = result.status !== undefined && result.status >= 200 && result.status < 300;
    const outcome: AttemptOutcome = delivered
      ? { kind: "delivered" }
      : result.status === 410
        ? { kind: "failed" }
        : this.retryOf(delivery);
    this.ended.push({
      endpoint,
      settled: {
        delivery,
        outcome,
        attempt: {
          id: Bun.randomUUIDv7(),
          tenantId: delivery.tenant_id,
          endpointId: endpoint.id,
          attempt: delivery.attempts,
          attemptedAt: started,
          durationMs: Math.round(performance.now() - startedMs),
          responseStatus: result.status ?? null,
          responseBody: result.body ?? null,
          error: result.error ?? null,
        },
        payload: sent.completed ? sent.payload : undefined,
      },
    });
    if (this.ended.length >= this.limits.settleBatch) void this.settle();
    else this.settleTimer ??= setTimeout(() => void this.settle(), this.limits.settleEveryMs);
  }

  /**
   * Settles the attempts that ended, in one transaction, one settle at a time; then disables
   * the endpoints a 410 or days of failures condemned.
   */
  private settle(): Promise<void> {
    this.settling = this.settling.then(async () => {
      clearTimeout(this.settleTimer);
      this.settleTimer = undefined;
      const batch = this.ended.splice(0);
      if (batch.length === 0) return;
      try {
        await this.deps.db.transaction((tx) =>
          settleAttempts(
            tx,
            batch.map((entry) => entry.settled),
          ),
        );
        this.settledSinceVacuum += batch.length;
      } catch (error) {
        // Their leases run out and they are attempted again: at least once, never lost.
        this.deps.logger.error("webhook attempts could not be settled", { error });
        return;
      }
      // The next event of each key settled is ready now: lease it without waiting for a poll.
      this.wake();
      for (const endpoint of condemned(batch, this.deps.disableAfterMs))
        await this.disable(endpoint.row, endpoint.reason, endpoint.at).catch((error) =>
          this.deps.logger.error("a webhook endpoint could not be disabled", { error }),
        );
    });
    return this.settling;
  }

  private retryOf(delivery: LeasedDelivery): AttemptOutcome {
    const at = retryAt({
      attempt: delivery.attempts,
      createdAt: new Date(delivery.created_at),
      now: new Date(this.deps.clock.now()),
      windowMs: this.deps.retryWindowMs,
    });
    return at ? { kind: "retry", at } : { kind: "failed" };
  }

  /** Disables an endpoint, audited, and tells the workspace's supervisors and admins. */
  private async disable(endpoint: WebhookEndpointRow, reason: string, at: Date) {
    const alert = await this.deps.db.transaction(async (tx) => {
      const disabled = await updateEndpoint(tx, {
        tenantId: endpoint.tenantId,
        id: endpoint.id,
        set: { status: "disabled", disabledReason: reason, updatedAt: at },
      });
      if (!disabled) return undefined;
      await holdEndpointDeliveries(tx, endpoint.id);
      await recordAudit(tx, {
        tenantId: endpoint.tenantId,
        actorType: "system",
        action: "webhook.disabled",
        targetType: "webhook",
        targetId: endpoint.id,
        details: { url: endpoint.url, reason },
        at,
      });
      return raiseAlert(tx, {
        id: Bun.randomUUIDv7(),
        tenantId: endpoint.tenantId,
        kind: "webhook_disabled",
        subjectId: endpoint.id,
        message: `webhook ${endpoint.url} was disabled: ${reason}`,
        raisedAt: at,
      });
    });
    this.deps.logger.warn("webhook endpoint disabled", { webhook_id: endpoint.id, reason });
    if (alert)
      this.deps.realtime.toSupervisors(alert.tenantId, { type: "alert", alert: alertView(alert) });
  }
}

/** The endpoints of a settled batch to disable: a 410, or failing for `disableAfterMs`. */
function condemned(
  batch: readonly { settled: SettledAttempt; endpoint: WebhookEndpointRow }[],
  disableAfterMs: number,
) {
  const found = new Map<string, { row: WebhookEndpointRow; reason: string; at: Date }>();
  for (const { settled, endpoint } of batch) {
    if (found.has(endpoint.id) || settled.outcome.kind === "delivered") continue;
    const at = settled.attempt.attemptedAt;
    const failingSince = endpoint.failingSince ?? at;
    if (settled.attempt.responseStatus === 410)
      found.set(endpoint.id, { row: endpoint, reason: "the receiver answered 410 Gone", at });
    else if (at.getTime() - failingSince.getTime() >= disableAfterMs)
      found.set(endpoint.id, {
        row: endpoint,
        reason: `no successful delivery since ${failingSince.toISOString()}`,
        at,
      });
  }
  return found.values();
}
