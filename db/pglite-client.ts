import {
  PGlite,
  parse,
  protocol,
  type QueryOptions,
  type Results,
  type Transaction,
  types,
} from "@electric-sql/pglite";

import type { DatabaseAvailability } from "./availability.ts";

const asText = (value: string) => value;

/**
 * The types Drizzle wants as PGlite's text rather than parsed: dates, timestamps, intervals
 * and their arrays (Drizzle's columns map them themselves).
 */
const DRIZZLE_TEXT_TYPES = [
  types.TIMESTAMP,
  types.TIMESTAMPTZ,
  types.INTERVAL,
  types.DATE,
  1231, // numeric[]
  1115, // timestamp[]
  1185, // timestamptz[]
  1187, // interval[]
  1182, // date[]
];

/**
 * A database in memory dies with the process, so the WAL's protection against a crash is
 * only work: no full-page images, no more WAL than a crash recovery needs (about 15% of the
 * simulator's time).
 */
const IN_MEMORY_SETTINGS = ["full_page_writes=off", "wal_level=minimal", "max_wal_senders=0"];

/** Prepared statements kept at most; the oldest is closed to make room. */
const MAX_STATEMENTS = 500;

/**
 * PGlite as the service uses it, with two departures from its defaults.
 *
 * Prepared queries: PGlite parses, describes and plans every query anew, in five exchanges
 * with the database, which took half the time of a simple update here. Every query with
 * parameters is prepared once under a name and then runs in one exchange (bind, describe,
 * execute, sync), as the PostgreSQL client does with postgres.js.
 *
 * Parsers once: Drizzle's driver hands PGlite its parsers with every query, and PGlite then
 * copies its whole table of parsers to merge them in (7% of the simulator's CPU). The client
 * is created with them instead. Raw queries on this client read those types as text too.
 */
export async function pgliteClient(
  dataDir: string,
  availability?: DatabaseAvailability,
): Promise<PGlite> {
  // A smaller buffer pool than PostgreSQL's default: about 120 MiB less resident memory.
  const settings = ["shared_buffers=16MB"];
  if (dataDir.startsWith("memory://")) settings.push(...IN_MEMORY_SETTINGS);
  const client = await PGlite.create(dataDir, {
    startParams: [...PGlite.defaultStartParams, ...settings.flatMap((setting) => ["-c", setting])],
    parsers: Object.fromEntries(DRIZZLE_TEXT_TYPES.map((type) => [type, asText])),
  });
  const statements = new PreparedStatements(client);
  // A failed write to its files leaves the database's memory and its files apart: after one,
  // every query is refused until a restart recovers from the files.
  const guarded = <T>(run: () => Promise<T>): Promise<T> => {
    availability?.assertAvailable();
    return run().catch((error: unknown) => {
      availability?.report(error);
      throw error;
    });
  };
  return new Proxy(client, {
    get(target, property) {
      if (property === "query") {
        return (text: string, params?: unknown[], options?: QueryOptions) =>
          guarded(() =>
            params?.length && !options?.blob
              ? target._runExclusiveTransaction(() => statements.run(text, params, options, true))
              : target.query(text, params, withoutParsers(options)),
          );
      }
      if (property === "transaction") {
        return <T>(scope: (tx: Transaction) => Promise<T>) =>
          guarded(() => target.transaction((tx) => scope(preparedIn(tx, statements))));
      }
      if (property === "exec") {
        return (text: string, options?: QueryOptions) => guarded(() => target.exec(text, options));
      }
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** A transaction whose queries with parameters run as prepared statements. */
function preparedIn(tx: Transaction, statements: PreparedStatements): Transaction {
  return new Proxy(tx, {
    get(target, property) {
      if (property === "query") {
        return (text: string, params?: unknown[], options?: QueryOptions) => {
          if (!params?.length || options?.blob)
            return target.query(text, params, withoutParsers(options));
          if (target.closed) throw new Error("Transaction is closed");
          return statements.run(text, params, options, false);
        };
      }
      return Reflect.get(target, property, target);
    },
  });
}

/** The client already has Drizzle's parsers: PGlite would copy its table to merge them again. */
function withoutParsers(options?: QueryOptions): QueryOptions | undefined {
  if (!options?.parsers) return options;
  const { parsers: _parsers, ...rest } = options;
  return rest;
}

interface Statement {
  name: string;
  /** PGlite's serializer for each parameter, by the type the database inferred for it. */
  serializers: (((value: unknown) => string) | undefined)[];
}

const { serialize } = protocol;

function concat(parts: Uint8Array[]) {
  let length = 0;
  for (const part of parts) length += part.length;
  const message = new Uint8Array(length);
  let offset = 0;
  for (const part of parts) {
    message.set(part, offset);
    offset += part.length;
  }
  return message;
}

/** Named statements by their text, on the one connection PGlite has. */
class PreparedStatements {
  private readonly byText = new Map<string, Statement>();
  private named = 0;

  constructor(private readonly client: PGlite) {}

  /** Runs under PGlite's query lock; `outside` a transaction, syncs the files as `query` does. */
  run<T>(text: string, params: unknown[], options: QueryOptions | undefined, outside: boolean) {
    return this.client.runExclusive(async (): Promise<Results<T>> => {
      const statement = this.byText.get(text) ?? (await this.prepare(text));
      const values = params.map((value, index) => {
        if (value === null || value === undefined) return null;
        const serializer = statement.serializers[index];
        return serializer ? serializer(value) : String(value);
      });
      const { messages } = await this.client.execProtocol(
        concat([
          serialize.bind({ statement: statement.name, values }),
          serialize.describe({ type: "P" }),
          serialize.execute({}),
          serialize.sync(),
        ]),
        { syncToFs: false },
      );
      if (outside) await this.client.syncToFs();
      const results = parse.parseResults(messages, this.client.parsers, withoutParsers(options));
      return results[0] as Results<T>;
    });
  }

  private async prepare(text: string): Promise<Statement> {
    const name = `p${this.named++}`;
    const parts = [
      serialize.parse({ name, text }),
      serialize.describe({ type: "S", name }),
      serialize.sync(),
    ];
    if (this.byText.size >= MAX_STATEMENTS) {
      const [oldestText, oldest] = this.byText.entries().next().value as [string, Statement];
      this.byText.delete(oldestText);
      parts.unshift(serialize.close({ type: "S", name: oldest.name }));
    }
    const { messages } = await this.client.execProtocol(concat(parts), { syncToFs: false });
    const statement: Statement = {
      name,
      serializers: parse
        .parseDescribeStatementResults(messages)
        .map((type) => this.client.serializers[type]),
    };
    this.byText.set(text, statement);
    return statement;
  }
}
