import net from "node:net";
import postgres from "postgres";
import {
  type DatabaseAvailability,
  DatabaseUnavailableError,
  databaseFailureOf,
} from "./availability.ts";

type Scope = (sql: postgres.Sql) => unknown;

/**
 * postgres.js as the service uses it, with two departures from its defaults.
 *
 * Prepared queries: Drizzle runs its queries unprepared, so PostgreSQL parsed and planned
 * each one every time; on the hot statements planning cost more than executing (a campaign's
 * status change took 0.35 ms of PostgreSQL CPU prepared against 0.8 unprepared). Every query
 * with parameters is prepared: postgres.js names each statement by its text and keeps it per
 * connection, as it does for its own tagged templates. Statement texts are few (batch sizes
 * are bounded, and a list of ids is one array parameter: `isAnyUuid`), and postgres.js renews
 * connections within the hour.
 *
 * Transactions on an idle connection: postgres.js pipelines a transaction's BEGIN onto a busy
 * connection, and when that socket write has to wait it never marks the connection as the
 * transaction's own; the BEGIN then fails as UNSAFE_TRANSACTION after the server has opened
 * the transaction on a shared connection (seen under a few hundred calls per second). Here a
 * transaction first reserves an idle connection and runs BEGIN, COMMIT or ROLLBACK on it.
 *
 * Faults: connecting gives up after `connectTimeoutMs` and is retried without postgres.js's
 * growing back-off (up to 20 s between attempts, which held requests for seconds after the
 * database came back); every statement has `statementTimeoutMs`; while `availability` says
 * the database is down, every query is refused at once instead of queueing on a connection
 * attempt; and the connections of a database gone silent can be cut (`sockets`).
 */
export interface PostgresClientOptions {
  poolSize: number;
  connectTimeoutMs?: number;
  statementTimeoutMs?: number;
  /** How prepared statements are planned; PostgreSQL chooses at each run when not given. */
  plans?: Plans;
  availability?: DatabaseAvailability;
  sockets?: DatabaseSockets;
}

/** What postgres.js tells its `socket` option of where to connect. */
interface Destination {
  host: string[];
  port: number[];
  path?: string | false;
}

/**
 * The sockets of the clients made with it, so that a database gone silent (a hung server, a
 * network dropping its packets) can be cut off: postgres.js waits on a silent socket for
 * ever, and the queries on it with it; a cut socket fails them as a lost connection does, so
 * that their requests answer 503 rather than wait for the database to come back.
 */
export class DatabaseSockets {
  private readonly open = new Set<net.Socket>();
  /** From a cut until the database answers again: a new socket fails at once. */
  private silent = false;
  /** Each connection tries the next host of a URL that names several, as postgres.js does. */
  private attempts = 0;

  /**
   * postgres.js's `socket` option: a socket to the URL's host, handed over while it
   * connects, so that a refusal or postgres.js's own time-out ends it through the usual
   * events (a socket refused here would leave its connection stuck in "connecting").
   */
  readonly connect = (to: Destination): net.Socket => {
    const index = this.attempts++ % Math.max(1, to.host.length);
    const host = to.host[index] ?? "localhost";
    const port = to.port[index] ?? to.port[0] ?? 5432;
    const socket = to.path ? net.connect(to.path) : net.connect(port, host);
    // postgres.js listens from the next turn on; an early error must not go unheard.
    socket.on("error", () => {});
    // A query queued behind those cut would otherwise wait out a connection attempt.
    if (this.silent) setTimeout(() => failSocket(socket, "ETIMEDOUT"), 0);
    this.open.add(socket);
    socket.once("close", () => this.open.delete(socket));
    // TLS names the server by it.
    return Object.assign(socket, { host });
  };

  /**
   * Cuts every open socket; returns how many there were. Each fails with an error, which
   * fails the query waiting for its connection too (a plain close makes postgres.js connect
   * again for it): as a lost connection where the server ever answered, so that a write
   * under way may have happened; as a time-out where it never did, so nothing was run.
   */
  cutAll(): number {
    const cut = this.open.size;
    this.silent = true;
    for (const socket of this.open)
      failSocket(socket, socket.bytesRead > 0 ? "ECONNRESET" : "ETIMEDOUT");
    this.open.clear();
    return cut;
  }

  /** The database answers again: sockets connect as usual. */
  answered(): void {
    this.silent = false;
  }
}

/**
 * Fails a socket with an error of `code`, then closes it. The error is raised by hand: Bun
 * closes a socket still connecting without one, and postgres.js then connects again for the
 * query that waits, for ever.
 */
function failSocket(socket: net.Socket, code: string) {
  socket.emit("error", Object.assign(new Error("the database does not answer"), { code }));
  socket.destroy();
}

/**
 * `custom`: every execution is planned for its parameters and the tables as they are now, never
 * with a generic plan cached once: for a pool of few, long statements over tables that grow
 * fast (a generic plan cached while the webhook outbox was new scanned the whole table at
 * every settle once it had grown). `generic`: one plan per statement and connection, for a
 * short statement PostgreSQL would otherwise plan at every run, planning costing more than
 * running it.
 */
export type Plans = "custom" | "generic";

/** Reconnecting waits this long after a lost connection, whatever the number of attempts. */
const RECONNECT_SECONDS = 0.05;

export function postgresClient(url: string, options: PostgresClientOptions): postgres.Sql {
  const sql = postgres(url, {
    max: options.poolSize,
    onnotice: () => {},
    backoff: () => RECONNECT_SECONDS,
    ...(options.connectTimeoutMs ? { connect_timeout: options.connectTimeoutMs / 1000 } : {}),
    ...(options.sockets ? { socket: options.sockets.connect } : {}),
    connection: {
      ...(options.statementTimeoutMs ? { statement_timeout: options.statementTimeoutMs } : {}),
      ...(options.plans ? { plan_cache_mode: `force_${options.plans}_plan` } : {}),
    },
  });
  return preparing(sql, options.availability);
}

function preparing(
  sql: postgres.Sql,
  availability: DatabaseAvailability | undefined,
): postgres.Sql {
  let savepoints = 0;
  const wrapped: postgres.Sql = new Proxy(sql, {
    get(target, property, receiver) {
      if (property === "unsafe") {
        return (query: string, args?: postgres.ParameterOrJSON<never>[], options = {}) => {
          availability?.assertAvailable();
          return target.unsafe(query, args, { ...options, prepare: true });
        };
      }
      if (property === "begin") {
        return (...args: unknown[]) => {
          availability?.assertAvailable();
          return transaction(target, args, availability);
        };
      }
      if (property === "savepoint") {
        return (scope: Scope) => savepoint(wrapped, `s${savepoints++}`, scope);
      }
      return Reflect.get(target, property, receiver);
    },
  });
  return wrapped;
}

/**
 * `sql.begin([mode], scope)` on a connection of its own. A connection lost before COMMIT was
 * sent rolls the transaction back (the server aborts it), so nothing happened; lost during
 * COMMIT, nobody knows, and the error says so.
 */
async function transaction(
  sql: postgres.Sql,
  args: unknown[],
  availability: DatabaseAvailability | undefined,
) {
  const scope = args.pop() as Scope;
  const mode = typeof args[0] === "string" ? args[0].replace(/[^a-z ]/gi, "") : "";
  const connection = await sql.reserve();
  try {
    await connection.unsafe(`begin ${mode}`);
    let result: unknown;
    try {
      result = await scope(preparing(connection, availability));
    } catch (error) {
      await connection.unsafe("rollback").catch(() => {});
      throw databaseFailureOf(error) === "outcome_unknown"
        ? new DatabaseUnavailableError("unreachable", "database connection lost", { cause: error })
        : error;
    }
    try {
      await connection.unsafe("commit");
    } catch (error) {
      if (databaseFailureOf(error) !== "outcome_unknown") throw error;
      throw new DatabaseUnavailableError(
        "outcome_unknown",
        "database connection lost during COMMIT",
        { cause: error },
      );
    }
    return result;
  } finally {
    connection.release();
  }
}

async function savepoint(tx: postgres.Sql, name: string, scope: Scope) {
  await tx.unsafe(`savepoint ${name}`);
  try {
    const result = await scope(tx);
    await tx.unsafe(`release savepoint ${name}`);
    return result;
  } catch (error) {
    await tx.unsafe(`rollback to savepoint ${name}`);
    throw error;
  }
}
