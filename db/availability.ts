/**
 * How a database failure bears on a request:
 * - `unreachable`: no connection, or one lost before anything was committed; nothing happened.
 * - `timeout`: a statement ran past its time-out and was cancelled; nothing happened.
 * - `outcome_unknown`: the connection was lost while a write or its COMMIT was under way; the
 *   change may or may not be in the database.
 * - `storage`: the embedded database could not write its files; it must not be trusted again
 *   before a restart.
 * - `conflict`: the database undid the transaction because it met another at the same moment
 *   (a deadlock, or a serialization failure); nothing happened, and trying again will do.
 */
export type DatabaseFailure =
  | "unreachable"
  | "timeout"
  | "outcome_unknown"
  | "storage"
  | "conflict";

/** A failure the database layer has already classified (the breaker's fast refusals among them). */
export class DatabaseUnavailableError extends Error {
  constructor(
    readonly failure: DatabaseFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "DatabaseUnavailableError";
  }
}

/** Errors raised while connecting: the statement never reached the server. */
const CONNECT_CODES = new Set([
  "ECONNREFUSED",
  "CONNECT_TIMEOUT",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "CONNECTION_ENDED",
  "57P03", // cannot_connect_now: the server is starting or shutting down
  "53300", // too_many_connections
  "08001", // sqlclient_unable_to_establish_sqlconnection
  "08004", // sqlserver_rejected_establishment_of_sqlconnection
]);

/** Errors of a connection lost while in use: a statement may have been executing. */
const LOST_CODES = new Set([
  "CONNECTION_CLOSED",
  "CONNECTION_DESTROYED",
  "ECONNRESET",
  "EPIPE",
  "57P01", // admin_shutdown
  "57P02", // crash_shutdown
  "08000", // connection_exception
  "08003", // connection_does_not_exist
  "08006", // connection_failure
]);

/** query_canceled (statement_timeout) and lock_not_available (lock_timeout). */
const TIMEOUT_CODES = new Set(["57014", "55P03"]);

/** deadlock_detected and serialization_failure: the transaction was rolled back. */
const CONFLICT_CODES = new Set(["40P01", "40001"]);

const STORAGE_MESSAGE =
  /ENOSPC|no space left on device|EIO\b|input\/output error|EROFS|read-only file system/i;

const codesOf = (error: unknown) => {
  const codes: string[] = [];
  for (let current = error, depth = 0; current && depth < 5; depth++) {
    const { code, errno } = current as { code?: unknown; errno?: unknown };
    if (typeof code === "string") codes.push(code);
    if (typeof errno === "string") codes.push(errno);
    current = (current as { cause?: unknown }).cause;
  }
  return codes;
};

const messagesOf = (error: unknown) => {
  const messages: string[] = [];
  for (let current = error, depth = 0; current && depth < 5; depth++) {
    const { message } = current as { message?: unknown };
    if (typeof message === "string") messages.push(message);
    current = (current as { cause?: unknown }).cause;
  }
  return messages.join("\n");
};

/**
 * What kind of database failure an error is, looking through Drizzle's wrappers; undefined for
 * every other error (constraint violations, bugs). A lost connection counts as
 * `outcome_unknown`: nothing here knows whether the statement was a write that committed, so
 * the caller narrows it (a read, or a transaction rolled back by the loss, is `unreachable`).
 */
export function databaseFailureOf(error: unknown): DatabaseFailure | undefined {
  for (let current = error, depth = 0; current && depth < 5; depth++) {
    if (current instanceof DatabaseUnavailableError) return current.failure;
    current = (current as { cause?: unknown }).cause;
  }
  const codes = codesOf(error);
  if (codes.some((code) => CONNECT_CODES.has(code))) return "unreachable";
  if (codes.some((code) => TIMEOUT_CODES.has(code))) return "timeout";
  if (codes.some((code) => CONFLICT_CODES.has(code))) return "conflict";
  if (codes.some((code) => LOST_CODES.has(code))) return "outcome_unknown";
  if (codes.includes("ENOSPC") || codes.includes("EIO") || STORAGE_MESSAGE.test(messagesOf(error)))
    return "storage";
  return undefined;
}

/** No answer came in time: the database is silent (hung, or the network drops its packets). */
export class NoAnswerError extends Error {
  constructor(ms: number) {
    super(`no answer within ${ms} ms`);
    this.name = "NoAnswerError";
  }
}

/** How late a timer may fire before the thread is taken as having been held meanwhile. */
const HELD_AFTER_MS = 100;
/** How many times a bound starts again after the thread was held. */
const MAX_RESTARTS = 3;

/**
 * Rejects when `answer` has not settled within `ms` of time this thread could have heard it.
 * A bound whose timer fires late starts again (at most `MAX_RESTARTS` times): the thread was
 * held by other work, with the question perhaps unsent or the answer unread, and that must not
 * pass for the database's silence, which refuses every request until the next probe.
 */
export function answeredWithin<T>(answer: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    let restarts = 0;
    const arm = () => {
      const due = performance.now() + ms;
      timer = setTimeout(() => {
        const held = performance.now() - due > HELD_AFTER_MS;
        if (held && restarts++ < MAX_RESTARTS) arm();
        else reject(new NoAnswerError(ms));
      }, ms);
    };
    arm();
  });
  return Promise.race([answer, late]).finally(() => clearTimeout(timer));
}

export interface AvailabilityOptions {
  /** A cheap round trip to the database; rejects when it does not answer. */
  probe: () => Promise<unknown>;
  /** How often to probe while the database answers, and while it does not. */
  upIntervalMs: number;
  downIntervalMs: number;
  onChange?: (available: boolean, reason?: string) => void;
  /**
   * Hears each probe that got no answer at all: the connections already open wait on the
   * same silence, their queries with them, until they are cut.
   */
  onSilent?: () => void;
}

/**
 * Whether the database answers, as a circuit breaker: a connection failure (seen by a request
 * or by the probe) opens it, and while it is open every query is refused at once instead of
 * waiting on connection attempts, so that requests answer 503 in milliseconds. The probe keeps
 * trying and closes it when the database answers again. A storage failure of the embedded
 * database keeps it open for good: its files and its memory may no longer agree.
 */
export class DatabaseAvailability {
  private down: { since: number; reason: string } | undefined;
  private broken = false;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private probing = false;
  private readonly recoveredListeners = new Set<() => void>();

  constructor(private readonly options?: AvailabilityOptions) {}

  get available(): boolean {
    return this.down === undefined;
  }

  /** Why the database is taken as unavailable, for the log. */
  get reason(): string | undefined {
    return this.down?.reason;
  }

  /** Throws the breaker's refusal while the database is taken as unavailable. */
  assertAvailable(): void {
    if (this.down) {
      throw new DatabaseUnavailableError(
        "unreachable",
        `database unavailable: ${this.down.reason}`,
      );
    }
  }

  /** Takes note of an error a query met; a database failure opens the breaker. */
  report(error: unknown): DatabaseFailure | undefined {
    const failure = databaseFailureOf(error);
    if (failure === "storage") this.broken = true;
    // Without a probe (the embedded database) nothing would close the breaker again, and
    // nothing can cut an in-process database's connection: only its storage opens it.
    const connectionLost = failure === "unreachable" || failure === "outcome_unknown";
    if (failure === "storage" || (connectionLost && this.options)) {
      this.open(messagesOf(error).split("\n")[0] ?? failure);
    }
    return failure;
  }

  /** Hears the database come back, after an outage. */
  onRecovered(listener: () => void): () => void {
    this.recoveredListeners.add(listener);
    return () => this.recoveredListeners.delete(listener);
  }

  /** Starts probing on the options' intervals. */
  start(): void {
    if (!this.options || this.timer) return;
    this.schedule();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private open(reason: string): void {
    if (this.down) return;
    this.down = { since: Date.now(), reason };
    this.options?.onChange?.(false, reason);
    // Probe at the fast interval at once rather than at the end of a slow one, and probe
    // even where periodic probing was never started: only the probe closes the breaker.
    if (this.probing) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.schedule();
  }

  private close(): void {
    if (!this.down || this.broken) return;
    this.down = undefined;
    this.options?.onChange?.(true);
    for (const listener of this.recoveredListeners) listener();
  }

  private schedule(): void {
    const options = this.options;
    if (!options) return;
    const wait = this.down ? options.downIntervalMs : options.upIntervalMs;
    this.timer = setTimeout(() => void this.probeOnce(), wait);
    this.timer.unref?.();
  }

  private async probeOnce(): Promise<void> {
    if (!this.options || this.probing) return;
    this.probing = true;
    try {
      await this.options.probe();
      this.close();
    } catch (error) {
      this.open(messagesOf(error).split("\n")[0] || "the database does not answer");
      if (error instanceof NoAnswerError) this.options.onSilent?.();
    } finally {
      this.probing = false;
      if (this.timer) this.schedule();
    }
  }
}
