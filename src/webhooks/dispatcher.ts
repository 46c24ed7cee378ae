import type { Database } from "../../db/client.ts";
import { raiseAlert } from "../../db/queries/alerts.ts";
import {
  type AttemptOutcome,
  claimCursors,
  commitWithoutWaitingForDisk,
  deleteOldDeliveries,
  findEndpoints,
  holdEndpointDeliveries,
  type LeasedDelivery,
  leaseDueDeliveries,
  type OutboxPosition,
  type QueuedDelivery,
  readOutbox,
  readyHeads,
  releaseCursors,
  type SettledAttempt,
  settleAttempts,
  type UnreadEvent,
  updateEndpoint,
  vacuumRetryQueue,
  type WebhookEndpointRow,
} from "../../db/queries/webhooks.ts";
import { recordAudit } from "../identity/audit.ts";
import { yieldToEventLoop } from "../lib/event-loop.ts";
import type { Logger } from "../logger.ts";
import { pushAlert } from "../modules/alerts/service.ts";
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
/** How soon a settle that failed (the database away) is tried again. */
const SETTLE_AGAIN_MS = 1_000;
/** How often the log is trimmed: a scan of old rows, not worth more often. */
const TRIM_EVERY_MS = 3_600_000;
/**
 * Sends started before the dispatcher lets other work run: signing and posting a whole read
 * at once held the thread long enough to delay the dialer's requests behind it.
 */
const SEND_SLICE = 16;

export const DISPATCH_LIMITS = {
  /** Deliveries in flight from this process at once. */
  inFlight: 512,
  /** Of which to one endpoint: a slow receiver holds these, never the others'. */
  perEndpoint: 128,
  /**
   * How long a lease holds a delivery of the retry queue, or an endpoint's cursor: past the
   * time-out, so a live attempt keeps it. A killed process's cursors are taken over after it.
   */
  leaseMs: 30_000,
  /** How often a dispatcher renews its cursors' leases and claims those no process holds. */
  claimEveryMs: 1_000,
  /** How often the retry queue is looked at when nothing was queued there meanwhile. */
  retryPollMs: 250,
  /** How often an idle dispatcher looks for new events. */
  pollMs: 50,
  /**
   * A busy one reads the outbox at most this often: a few large reads cost the database less
   * than many small ones. An endpoint gets at most `perEndpoint` events a gap: 2,560 a second
   * here.
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
   * How often the dispatcher vacuums the retry queue (0: never), once this many of its
   * deliveries were settled, each leaving dead row versions behind: see `vacuumRetryQueue`.
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

/** An endpoint's place in the outbox as this process reads it. */
interface CursorState {
  /** Where the next read starts. */
  read: OutboxPosition;
  /** What was read, in order: a chunk ends at `end` and has `open` events not yet settled. */
  chunks: { end: OutboxPosition; open: number }[];
  /** Where the stored cursor is, or is being moved to. */
  committed: OutboxPosition;
  /** How many events the last read found: at least a first ask's worth means a backlog. */
  lastRead: number;
}

/** The events of one endpoint and order key in this process, each sent after the one before. */
interface Chain {
  /** How the last one ended: sent (delivered, or given up), or queued for retry. */
  tail: Promise<"sent" | "queued">;
  /** Those not yet settled. */
  open: number;
  /** The settle that settled its last one. */
  settledIn: number;
}

/** What came of an event or a retry, waiting to be settled. */
interface Ended {
  endpoint: WebhookEndpointRow;
  settled?: SettledAttempt;
  queued?: QueuedDelivery;
  /** For an event read from the outbox: its chunk of the cursor, and its chain. */
  chunk?: { end: OutboxPosition; open: number };
  chain?: Chain;
}

/**
 * Delivers the outbox. Each endpoint's cursor is leased by one process, which reads the events
 * after it in batches, signs and posts each, and moves the cursor past those settled: an event
 * about a call, a lead, a campaign or an agent waits for the one before it. An event the
 * receiver did not take goes to the retry queue, which any process leases row by row, as does
 * every later event of its key until it is delivered. The ended attempts are settled
 * together: logged, queued, and the cursors moved, in one transaction. An endpoint that
 * answers 410 or fails for days is disabled.
 */
export class WebhookDispatcher {
  /** This process's name on the cursors it holds. */
  private readonly holder = Bun.randomUUIDv7();
  private readonly cursors = new Map<string, CursorState>();
  private readonly chains = new Map<string, Chain>();
  private readonly perEndpoint = new Map<string, number>();
  private inFlight = 0;
  /** Which held cursor is asked first at the next read: those asked last go to the back. */
  private firstAsked = 0;
  private stopped = true;
  private wakeUp: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  private readonly running = new Set<Promise<unknown>>();
  /** What ended, waiting to be settled. */
  private ended: Ended[] = [];
  private settling: Promise<void> = Promise.resolve();
  private settleTimer: ReturnType<typeof setTimeout> | undefined;
  /** Settles committed so far: a chain settled before a read began is known to the read. */
  private settles = 0;
  /** Retry-queue deliveries settled since its last vacuum: each left a dead row version. */
  private settledSinceVacuum = 0;
  private leasedAt = Number.NEGATIVE_INFINITY;
  /** Set when the retry queue may have due rows: something was queued or readied there. */
  private retriesWaiting = true;
  /** Set when an endpoint may have been added or enabled: its cursor is to be claimed. */
  private claimWanted = true;
  /** While a settle's transaction runs: its chunks are counted down but not yet committed. */
  private committing = false;

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
   * Stops reading; waits for the attempts in flight and settles them, since their leases
   * would otherwise have to run out.
   */
  async stop() {
    this.stopped = true;
    this.wakeUp?.();
    await this.loop;
    await Promise.allSettled([...this.running]);
    await this.settle();
    // Another process takes them over at once, not when their leases run out.
    await releaseCursors(this.deps.db, this.holder).catch((error) =>
      this.deps.logger.warn("webhook cursors could not be released", { error }),
    );
    this.cursors.clear();
  }

  /**
   * Looks for new events, new endpoints and due retries now, rather than at the next poll.
   */
  wake() {
    this.retriesWaiting = true;
    this.claimWanted = true;
    this.wakeUp?.();
  }

  private async run() {
    let trimmedAt = 0;
    let repairedAt = 0;
    let vacuumedAt = 0;
    // Polling periods, on the machine's clock; what is due and leased is on the service's.
    let claimedAt = Number.NEGATIVE_INFINITY;
    let retriedAt = Number.NEGATIVE_INFINITY;
    while (!this.stopped) {
      const now = this.deps.clock.now();
      if (
        this.limits.vacuumEveryMs > 0 &&
        now - vacuumedAt >= this.limits.vacuumEveryMs &&
        this.settledSinceVacuum >= this.limits.vacuumAfterSettled
      ) {
        vacuumedAt = now;
        this.settledSinceVacuum = 0;
        await vacuumRetryQueue(this.deps.db).catch((error) =>
          this.deps.logger.warn("the webhook retry queue could not be vacuumed", { error }),
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
      if (this.claimWanted || performance.now() - claimedAt >= this.limits.claimEveryMs) {
        claimedAt = performance.now();
        this.claimWanted = false;
        await this.claim().catch((error) =>
          this.deps.logger.warn("webhook cursors could not be claimed", { error }),
        );
      }
      const sinceLease = performance.now() - this.leasedAt;
      if (sinceLease < this.limits.leaseGapMs) await Bun.sleep(this.limits.leaseGapMs - sinceLease);
      this.leasedAt = performance.now();
      let taken = 0;
      try {
        taken += await this.readAndSend();
        if (this.retriesWaiting || performance.now() - retriedAt >= this.limits.retryPollMs) {
          retriedAt = performance.now();
          this.retriesWaiting = false;
          taken += await this.leaseAndSend();
        }
      } catch (error) {
        this.deps.logger.warn("webhook deliveries could not be leased", { error });
      }
      if (taken === 0 || this.inFlight >= this.limits.inFlight) await this.pause();
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

  /**
   * Renews the leases of the cursors this process holds (storing how far each has come) and
   * takes those no process holds; forgets those another process took meanwhile.
   */
  private async claim() {
    const positions = new Map<string, OutboxPosition>();
    for (const [endpointId, state] of this.cursors) {
      if (!this.committing) this.closeChunks(state);
      positions.set(endpointId, state.committed);
    }
    const held = await claimCursors(this.deps.db, {
      holder: this.holder,
      now: new Date(this.deps.clock.now()),
      leaseMs: this.limits.leaseMs,
      positions,
    });
    for (const endpointId of this.cursors.keys())
      if (!held.has(endpointId)) this.cursors.delete(endpointId);
    for (const [endpointId, at] of held)
      if (!this.cursors.has(endpointId))
        this.cursors.set(endpointId, {
          read: at,
          chunks: [],
          committed: at,
          // Taken over, it may be behind: asked for all it may have at once.
          lastRead: Number.POSITIVE_INFINITY,
        });
  }

  /** Drops the settled chunks at the front of a cursor's reads: the cursor can move past them. */
  private closeChunks(state: CursorState) {
    while (state.chunks[0] && state.chunks[0].open === 0) {
      state.committed = state.chunks[0].end;
      state.chunks.shift();
    }
  }

  /**
   * What each held cursor is asked for in a read: the process's room in flight shared fairly
   * (`fairShares`), each endpoint wanting its own room if its last read found a backlog, a
   * first ask's worth if not, so that quiet endpoints cost the busy ones little and every
   * endpoint is read. Who comes first turns with each read, for when the room is short.
   */
  private allot(): { endpointId: string; from: OutboxPosition; room: number }[] {
    const firstAsk = Math.max(1, Math.floor(this.limits.perEndpoint / 4));
    const held = [...this.cursors];
    const turn = this.firstAsked % Math.max(1, held.length);
    const wants = [...held.slice(turn), ...held.slice(0, turn)].map(([endpointId, state]) => {
      const free = this.limits.perEndpoint - (this.perEndpoint.get(endpointId) ?? 0);
      return {
        endpointId,
        from: state.read,
        want: state.lastRead >= firstAsk ? free : Math.min(free, firstAsk),
      };
    });
    const rooms = fairShares(
      wants.map((w) => w.want),
      this.limits.inFlight - this.inFlight,
    );
    const asked = wants.flatMap(({ endpointId, from }, index) => {
      const room = rooms[index] ?? 0;
      return room > 0 ? [{ endpointId, from, room }] : [];
    });
    this.firstAsked = turn + asked.length;
    return asked;
  }

  /** Reads the next events of each held cursor with room, and sends them. */
  private async readAndSend(): Promise<number> {
    const wanted = this.allot();
    if (wanted.length === 0) return 0;
    const readIn = this.settles;
    for (const [key, chain] of this.chains)
      if (settledBefore(chain, readIn)) this.chains.delete(key);
    const read = await readOutbox(this.deps.db, { holder: this.holder, cursors: wanted });
    for (const { endpointId } of wanted) {
      const state = this.cursors.get(endpointId);
      if (state) state.lastRead = read.get(endpointId)?.events.length ?? 0;
    }
    const reads = [...read].map(([endpointId, { events, to }]) => ({
      endpointId,
      to,
      fresh: events.map((event) => freshDelivery(endpointId, event)),
    }));
    const events = reads.flatMap(({ fresh }) => fresh);
    const [endpoints, payloads] = await Promise.all([
      findEndpoints(this.deps.db, [...new Set(events.map((e) => e.delivery.endpoint_id))]),
      completePayloads(
        this.deps.db,
        events.map((e) => e.delivery),
      ),
    ]);
    const endpointOf = new Map(endpoints.map((row) => [row.id, row]));
    let taken = 0;
    for (const { endpointId, to, fresh } of reads) {
      const state = this.cursors.get(endpointId);
      if (!state) continue;
      const chunk = { end: to, open: fresh.length };
      state.chunks.push(chunk);
      state.read = to;
      const endpoint = endpointOf.get(endpointId);
      for (const { delivery, blocked } of fresh) {
        const payload = payloads.get(delivery.id);
        // An endpoint removed meanwhile: its cursor went with it.
        if (!endpoint || !payload) {
          chunk.open--;
          continue;
        }
        this.takeFresh(endpoint, delivery, payload, { blocked, chunk, readIn });
        if (++taken % SEND_SLICE === 0) await yieldToEventLoop();
      }
    }
    return events.length;
  }

  /**
   * Sends an event read from the outbox once the one before it of its key is settled: at once
   * if it was sent, into the retry queue behind it if it was queued there.
   */
  private takeFresh(
    endpoint: WebhookEndpointRow,
    delivery: LeasedDelivery,
    payload: LeasedDelivery["payload"],
    read: { blocked: boolean; chunk: { end: OutboxPosition; open: number }; readIn: number },
  ) {
    const key = `${endpoint.id} ${delivery.order_key}`;
    let chain = this.chains.get(key);
    if (chain && settledBefore(chain, read.readIn)) {
      this.chains.delete(key);
      chain = undefined;
    }
    const before = chain?.tail ?? Promise.resolve("sent" as const);
    const current: Chain = chain ?? { tail: before, open: 0, settledIn: 0 };
    current.open++;
    this.chains.set(key, current);
    const ended = { endpoint, chunk: read.chunk, chain: current };
    // Waits in the queue, not ready: readied when the one before it there is settled (or by
    // the sweep, after an attempt that failed unexpectedly).
    const wait = (): "queued" => {
      this.finish({
        ...ended,
        queued: {
          delivery: { ...delivery, attempts: 0 },
          nextAttemptAt: new Date(this.deps.clock.now()),
          ready: false,
        },
      });
      return "queued";
    };
    current.tail = before.then(async (prior) => {
      if (read.blocked || prior === "queued") return wait();
      let settled: SettledAttempt;
      try {
        settled = { ...(await this.send(endpoint, delivery, payload)), fresh: true };
      } catch (error) {
        this.deps.logger.error("a webhook attempt failed", { error });
        return wait();
      }
      const retry = settled.outcome.kind === "retry" ? settled.outcome : undefined;
      this.finish({
        ...ended,
        settled,
        ...(retry
          ? {
              queued: {
                delivery: { ...delivery, payload, body: settled.body ?? null },
                nextAttemptAt: retry.at,
                ready: true,
              },
            }
          : {}),
      });
      return retry ? "queued" : "sent";
    });
    this.track(endpoint.id, current.tail);
  }

  /** Leases due deliveries of the retry queue and sends them. */
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
    for (const [index, delivery] of leased.entries()) {
      if (index > 0 && index % SEND_SLICE === 0) await yieldToEventLoop();
      const endpoint = endpoints.get(delivery.endpoint_id);
      const payload = payloads.get(delivery.id);
      if (!endpoint || !payload) continue;
      this.track(
        endpoint.id,
        this.send(endpoint, delivery, payload).then((settled) =>
          this.finish({ endpoint, settled }),
        ),
      );
    }
    // More may be due than there was room for.
    this.retriesWaiting = leased.length >= room;
    return leased.length;
  }

  private track(endpointId: string, attempt: Promise<unknown>) {
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
        this.wakeUp?.();
      });
    this.running.add(running);
  }

  /** Sends one delivery: what came of it, to be settled. */
  private async send(
    endpoint: WebhookEndpointRow,
    delivery: LeasedDelivery,
    payload: LeasedDelivery["payload"],
  ): Promise<SettledAttempt> {
    const started = new Date(this.deps.clock.now());
    const startedMs = performance.now();
    // A payload read back from the database has its keys in the database's order.
    const { type, timestamp, data } = payload;
    const body = delivery.body ?? JSON.stringify({ type, timestamp, data });
    // Checked at every attempt: the name may resolve elsewhere than when it was registered.
    const refusal = await Promise.resolve()
      .then(() =>
        refusalOf(new URL(endpoint.url), {
          allowPrivate: this.deps.allowPrivateNetworks,
          resolve: this.deps.resolve,
        }),
      )
      .catch((error) => `could not be checked (${String(error)})`);
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
    return {
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
      body: delivery.body === null ? body : undefined,
    };
  }

  /** Queues what ended to be settled, soon or at once when enough have. */
  private finish(ended: Ended) {
    this.ended.push(ended);
    if (this.ended.length >= this.limits.settleBatch) void this.settle();
    else this.settleTimer ??= setTimeout(() => void this.settle(), this.limits.settleEveryMs);
  }

  /**
   * Settles what ended, in one transaction, one settle at a time, moving each cursor past the
   * chunks it completes; then disables the endpoints a 410 or days of failures condemned.
   */
  private settle(): Promise<void> {
    this.settling = this.settling.then(async () => {
      clearTimeout(this.settleTimer);
      this.settleTimer = undefined;
      const batch = this.ended.splice(0);
      if (batch.length === 0) return;
      // Counted down before the commit, to know how far the cursors get; until it, no cursor
      // is moved past them in memory (see `claim`).
      this.committing = true;
      for (const entry of batch) if (entry.chunk) entry.chunk.open--;
      const positions = new Map<string, OutboxPosition>();
      for (const [endpointId, state] of this.cursors) {
        const reached = settledThrough(state);
        if (reached) positions.set(endpointId, reached);
      }
      try {
        const queued = batch.flatMap((entry) => entry.queued ?? []);
        await this.deps.db.transaction(async (tx) => {
          // An event queued for retry is kept nowhere else once its cursor has passed it.
          if (queued.length === 0) await commitWithoutWaitingForDisk(tx);
          await settleAttempts(tx, {
            settled: batch.flatMap((entry) => entry.settled ?? []),
            queued,
            cursors: { holder: this.holder, positions },
          });
        });
      } catch (error) {
        // Kept to be settled again: nothing of it was written, and the cursors stayed.
        this.committing = false;
        for (const entry of batch) if (entry.chunk) entry.chunk.open++;
        this.ended.unshift(...batch);
        this.settleTimer ??= setTimeout(() => void this.settle(), SETTLE_AGAIN_MS);
        this.deps.logger.error("webhook attempts could not be settled", { error });
        return;
      }
      this.committing = false;
      this.settles++;
      for (const entry of batch) {
        if (entry.chain && --entry.chain.open === 0) entry.chain.settledIn = this.settles;
        if (entry.settled && !entry.settled.fresh) this.settledSinceVacuum++;
      }
      for (const state of this.cursors.values()) this.closeChunks(state);
      // What was queued, or readied behind what was settled, may be due now.
      if (batch.some((entry) => entry.queued || (entry.settled && !entry.settled.fresh))) {
        this.retriesWaiting = true;
        this.wakeUp?.();
      }
      const attempts = batch.flatMap((entry) =>
        entry.settled ? [{ settled: entry.settled, endpoint: entry.endpoint }] : [],
      );
      for (const endpoint of condemned(attempts, this.deps.disableAfterMs))
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
    pushAlert(this.deps, alert);
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

/** An event read from the outbox as a delivery to its endpoint, attempted for the first time. */
function freshDelivery(endpointId: string, event: UnreadEvent) {
  const delivery: LeasedDelivery = {
    id: Bun.randomUUIDv7(),
    event_id: event.event_id,
    tenant_id: event.tenant_id,
    endpoint_id: endpointId,
    type: event.type,
    order_key: event.order_key,
    payload: { type: event.type, timestamp: event.created_at, data: event.data },
    attempts: 1,
    created_at: event.created_at,
    event_seq: event.seq,
    body: null,
  };
  return { delivery, blocked: event.blocked };
}

/**
 * Shares `room` among wants, max-min fairly: none gets more than it wants, and what one does
 * not want goes to the others. When the room is shorter than the wants are many, the first
 * in order get one each.
 */
export function fairShares(wants: readonly number[], room: number): number[] {
  const shares = wants.map(() => 0);
  const wanting = wants.flatMap((want, index) => (want > 0 ? [{ want, index }] : []));
  if (room < wanting.length) {
    for (const { index } of wanting.slice(0, Math.max(0, room))) shares[index] = 1;
    return shares;
  }
  wanting.sort((a, b) => a.want - b.want || a.index - b.index);
  let left = room;
  for (const [position, { want, index }] of wanting.entries()) {
    const share = Math.min(want, Math.floor(left / (wanting.length - position)));
    shares[index] = share;
    left -= share;
  }
  return shares;
}

/** How far a cursor's reads are settled from its start: undefined if no further than stored. */
function settledThrough(state: CursorState): OutboxPosition | undefined {
  let reached: OutboxPosition | undefined;
  for (const chunk of state.chunks) {
    if (chunk.open > 0) break;
    reached = chunk.end;
  }
  return reached;
}

/** Whether a chain was settled by a settle committed before a read began: the read saw it. */
const settledBefore = (chain: Chain, readIn: number) =>
  chain.open === 0 && chain.settledIn <= readIn;
