import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import net from "node:net";
import { sql as drizzleSql } from "drizzle-orm";
import type postgres from "postgres";
import { DatabaseAvailability, databaseFailureOf } from "../../db/availability.ts";
import { withBulkTransaction } from "../../db/bulk.ts";
import { openDatabase } from "../../db/client.ts";
import { DatabaseSockets, postgresClient } from "../../db/postgres-client.ts";
import { rowsOf } from "../../db/rows.ts";
import { runStatement } from "../../db/statement.ts";

const url = process.env.DATABASE_URL;

// The client's own behaviour: only on a PostgreSQL server (the suite's second run).
describe.skipIf(!url)("the postgres.js client", () => {
  let sql: postgres.Sql;
  beforeAll(async () => {
    sql = postgresClient(url as string, { poolSize: 10 });
    await sql.unsafe("create table if not exists client_probe (id int primary key, note text)");
  });
  afterAll(async () => {
    await sql.unsafe("drop table if exists client_probe");
    await sql.end({ timeout: 5 });
  });
  const ids = async () =>
    (await sql.unsafe("select id from client_probe order by id")).map((row) => row.id as number);

  test("a transaction commits; a failing one rolls back; a failed savepoint undoes only itself", async () => {
    await sql.unsafe("truncate client_probe");
    await sql.begin(async (tx) => {
      await tx.unsafe("insert into client_probe values ($1, $2)", [1, "kept"]);
    });
    await expect(
      sql.begin(async (tx) => {
        await tx.unsafe("insert into client_probe values ($1, $2)", [2, "undone"]);
        throw new Error("abort");
      }),
    ).rejects.toThrow("abort");
    await sql.begin(async (tx) => {
      await tx.unsafe("insert into client_probe values ($1, $2)", [3, "kept"]);
      await expect(
        tx.savepoint(async (inner) => {
          await inner.unsafe("insert into client_probe values ($1, $2)", [4, "undone"]);
          throw new Error("inner");
        }),
      ).rejects.toThrow("inner");
    });
    expect(await ids()).toEqual([1, 3]);
  });

  test("transactions among many concurrent queries all commit and leave no connection in a transaction", async () => {
    await sql.unsafe("truncate client_probe");
    // Large parameters fill the sockets' write buffers, as a busy dialer does.
    const note = "x".repeat(64 * 1024);
    const work: Promise<unknown>[] = [];
    for (let i = 0; i < 200; i++) {
      work.push(sql.unsafe("select length($1::text) as n", [note]));
      work.push(
        sql.begin(async (tx) => {
          await tx.unsafe("insert into client_probe values ($1, $2)", [i, note]);
          await tx.unsafe("update client_probe set note = $2 where id = $1", [i, "done"]);
        }),
      );
    }
    await Promise.all(work);
    const rows = await sql.unsafe(
      "select count(*)::int as n from client_probe where note = 'done'",
    );
    expect(rows[0]?.n).toBe(200);
    const open = await sql.unsafe(
      "select count(*)::int as n from pg_stat_activity where state = 'idle in transaction'",
    );
    expect(open[0]?.n).toBe(0);
  });
});

describe.skipIf(!url)("the pool for long work", () => {
  test("reports run while the main pool's connections are all taken", async () => {
    const handle = await openDatabase({ databaseUrl: url, dataDir: "unused", poolSize: 1 });
    try {
      const held = Promise.withResolvers<void>();
      const opened = Promise.withResolvers<void>();
      const busy = handle.db.transaction(async (tx) => {
        await tx.execute(drizzleSql`select 1`);
        opened.resolve();
        await held.promise;
      });
      await opened.promise;
      const answer = await Promise.race([
        handle.longWork.execute(drizzleSql`select 1 as one`),
        Bun.sleep(2000).then(() => "blocked"),
      ]);
      expect(answer).not.toBe("blocked");
      held.resolve();
      await busy;
    } finally {
      await handle.close();
    }
  });

  test("an import's long transaction never holds a connection of the main pool", async () => {
    const handle = await openDatabase({ databaseUrl: url, dataDir: "unused", poolSize: 1 });
    try {
      const held = Promise.withResolvers<void>();
      const opened = Promise.withResolvers<void>();
      const importing = withBulkTransaction(handle.raw, async (session) => {
        await session.query("select 1");
        opened.resolve();
        await held.promise;
        return "imported";
      });
      await opened.promise;
      // The main pool's only connection is free while the bulk transaction stays open.
      const answer = await Promise.race([
        runStatement<{ one: number }>(handle.raw, "select 1 as one", []),
        Bun.sleep(2000).then(() => "blocked"),
      ]);
      expect(answer).toEqual([{ one: 1 }]);
      held.resolve();
      expect(await importing).toBe("imported");
    } finally {
      await handle.close();
    }
  });
});

describe.skipIf(!url)("plans", () => {
  test("the pool for long work plans every execution afresh; the request path's keeps generic plans", async () => {
    const handle = await openDatabase({ databaseUrl: url, dataDir: "unused", poolSize: 1 });
    try {
      const mode = async (db: typeof handle.db) =>
        rowsOf<{ mode: string }>(
          await db.execute(drizzleSql`select current_setting('plan_cache_mode') as mode`),
        )[0]?.mode;
      expect(await mode(handle.longWork)).toBe("force_custom_plan");
      expect(await mode(handle.db)).toBe("auto");
    } finally {
      await handle.close();
    }
  });
});

describe.skipIf(!url)("the postgres.js client's time-outs and breaker", () => {
  test("a statement past its time-out is cancelled and reads as a time-out", async () => {
    const sql = postgresClient(url as string, { poolSize: 1, statementTimeoutMs: 100 });
    try {
      const error = await sql.unsafe("select pg_sleep(1)").catch((caught: unknown) => caught);
      expect(databaseFailureOf(error)).toBe("timeout");
    } finally {
      await sql.end({ timeout: 5 });
    }
  });

  test("while the breaker is open, queries and transactions are refused without a round trip", async () => {
    const availability = new DatabaseAvailability({
      probe: async () => {},
      upIntervalMs: 60_000,
      downIntervalMs: 60_000,
    });
    const sql = postgresClient(url as string, { poolSize: 1, availability });
    try {
      availability.report(Object.assign(new Error("refused"), { code: "ECONNREFUSED" }));
      const started = performance.now();
      const query = await Promise.resolve()
        .then(() => sql.unsafe("select 1"))
        .catch((caught: unknown) => caught);
      const transaction = await Promise.resolve()
        .then(() => sql.begin(async (tx) => tx.unsafe("select 1")))
        .catch((caught: unknown) => caught);
      expect(performance.now() - started).toBeLessThan(50);
      expect(databaseFailureOf(query)).toBe("unreachable");
      expect(databaseFailureOf(transaction)).toBe("unreachable");
    } finally {
      await sql.end({ timeout: 5 });
    }
  });
});

describe.skipIf(!url)("a transaction whose connection is lost", () => {
  let sql: postgres.Sql;
  let killer: postgres.Sql;
  beforeAll(async () => {
    sql = postgresClient(url as string, { poolSize: 2 });
    killer = postgresClient(url as string, { poolSize: 1 });
    await sql.unsafe("create table if not exists lost_probe (id int primary key)");
  });
  afterAll(async () => {
    await sql.unsafe("drop table if exists lost_probe");
    await sql.end({ timeout: 5 });
    await killer.end({ timeout: 5 });
  });

  /**
   * Writes a row, has its backend killed between two statements, lets `meanwhile` run (other
   * work on the pool, which reconnects the lost connection), then tries a second statement.
   */
  async function lostBetweenStatements(id: number, meanwhile: () => Promise<unknown>) {
    let secondRan = false;
    const outcome = await sql
      .begin(async (tx) => {
        const [row] = await tx.unsafe(
          "insert into lost_probe values ($1) returning pg_backend_pid() as pid",
          [id],
        );
        await killer.unsafe("select pg_terminate_backend($1::int)", [row?.pid]);
        await Bun.sleep(50);
        await meanwhile();
        await tx.unsafe("insert into lost_probe values ($1)", [id + 1]);
        secondRan = true;
      })
      .then(
        () => "committed",
        (error: unknown) => databaseFailureOf(error),
      );
    const kept = await sql.unsafe("select id from lost_probe where id in ($1, $2)", [id, id + 1]);
    return { outcome, secondRan, kept: kept.map((row) => row.id) };
  }

  test("fails its next statement, keeps nothing, and never sends it on another session", async () => {
    // Without other work, the statement waited for ever on the dead connection (or the
    // process died of a write to its closed socket).
    expect(await lostBetweenStatements(10, async () => {})).toEqual({
      outcome: "unreachable",
      secondRan: false,
      kept: [],
    });
    // With other work reconnecting it, the statement ran outside the transaction and
    // committed alone, and the transaction reported success.
    const others = () => Promise.all([1, 2, 3].map((n) => sql.unsafe("select $1::int", [n])));
    expect(await lostBetweenStatements(20, others)).toEqual({
      outcome: "unreachable",
      secondRan: false,
      kept: [],
    });
    // The pool serves on, and transactions commit again.
    await sql.begin((tx) => tx.unsafe("insert into lost_probe values (30)"));
    expect((await sql.unsafe("select id from lost_probe")).map((row) => row.id)).toEqual([30]);
  });
});

describe("a database gone silent", () => {
  test("its connections are cut: a query waiting on it fails as unreachable, and so does one made anew until it answers", async () => {
    // A server that takes connections and never says a word, as a hung one.
    const silent = net.createServer(() => {}).listen(0, "127.0.0.1");
    await new Promise((resolve) => silent.once("listening", resolve));
    const { port } = silent.address() as net.AddressInfo;
    const sockets = new DatabaseSockets();
    const sql = postgresClient(`postgres://nobody@127.0.0.1:${port}/none`, {
      poolSize: 1,
      sockets,
    });
    try {
      const waiting = sql.unsafe("select 1").catch((caught: unknown) => caught);
      await Bun.sleep(100);
      const started = performance.now();
      expect(sockets.cutAll()).toBe(1);
      // It never answered, so nothing it was sent was run.
      expect(databaseFailureOf(await waiting)).toBe("unreachable");
      const anew = await sql.unsafe("select 2").catch((caught: unknown) => caught);
      expect(databaseFailureOf(anew)).toBe("unreachable");
      expect(performance.now() - started).toBeLessThan(1_000);
    } finally {
      await sql.end({ timeout: 0 });
      silent.close();
    }
  });

  test.skipIf(!url)(
    "a statement the server was running when cut may have happened; once it answers, the pool serves again",
    async () => {
      const sockets = new DatabaseSockets();
      const sql = postgresClient(url as string, { poolSize: 1, sockets });
      try {
        await sql.unsafe("select 1");
        const running = sql.unsafe("select pg_sleep(5)").catch((caught: unknown) => caught);
        await Bun.sleep(100);
        expect(sockets.cutAll()).toBe(1);
        expect(databaseFailureOf(await running)).toBe("outcome_unknown");
        // The cut socket's close reaches the pool a turn later (the breaker refuses meanwhile).
        await Bun.sleep(50);
        sockets.answered();
        expect((await sql.unsafe("select 2 as n"))[0]?.n).toBe(2);
      } finally {
        await sql.end({ timeout: 5 });
      }
    },
  );
});
