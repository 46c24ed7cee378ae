import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { PGlite } from "@electric-sql/pglite";
import { pgliteClient } from "../../db/pglite-client.ts";

// The client's own behaviour, on a PGlite of its own (both runs of the suite).
describe("the PGlite client", () => {
  let client: PGlite;
  beforeAll(async () => {
    client = await pgliteClient("memory://");
    await client.exec(
      "create table probe (id int primary key, note text, at timestamptz, tags text[], doc jsonb)",
    );
  });
  afterAll(async () => {
    await client.close();
  });
  const ids = async () =>
    (await client.query<{ id: number }>("select id from probe order by id")).rows.map(
      (row) => row.id,
    );

  test("prepared queries bind every type as PGlite does, and read timestamps as text", async () => {
    const insert = "insert into probe values ($1, $2, $3, $4, $5) returning *";
    const first = await client.query(insert, [
      1,
      null,
      new Date("2026-03-03T14:00:00Z"),
      ["a", "b"],
      { nested: [1, "two"] },
    ]);
    expect(first.rows).toEqual([
      {
        id: 1,
        note: null,
        at: "2026-03-03 14:00:00+00",
        tags: ["a", "b"],
        doc: { nested: [1, "two"] },
      },
    ]);
    expect(first.affectedRows).toBe(1);
    // The same text again runs the statement prepared the first time.
    const second = await client.query(insert, [2, "x", "2026-03-03T15:00:00Z", [], {}], {
      rowMode: "array",
    });
    expect(second.rows).toEqual([[2, "x", "2026-03-03 15:00:00+00", [], {}]]);
    expect(second.fields.map((field) => field.name)).toEqual(["id", "note", "at", "tags", "doc"]);
  });

  test("errors keep their SQLSTATE, and the statement still works afterwards", async () => {
    await client.exec("truncate probe");
    const insert = "insert into probe (id, note) values ($1, $2)";
    await client.query(insert, [1, "first"]);
    const failure = await client.query(insert, [1, "again"]).catch((error) => error);
    expect(failure.code).toBe("23505");
    const syntax = await client.query("selec $1", [1]).catch((error) => error);
    expect(syntax.code).toBe("42601");
    await client.query(insert, [2, "second"]);
    expect(await ids()).toEqual([1, 2]);
  });

  test("transactions: commit, rollback on a thrown error, and a failed statement inside", async () => {
    await client.exec("truncate probe");
    const insert = "insert into probe (id) values ($1)";
    await client.transaction(async (tx) => {
      await tx.query(insert, [1]);
    });
    await expect(
      client.transaction(async (tx) => {
        await tx.query(insert, [2]);
        throw new Error("abort");
      }),
    ).rejects.toThrow("abort");
    await expect(
      client.transaction(async (tx) => {
        await tx.query(insert, [3]);
        await tx.query(insert, [1]);
      }),
    ).rejects.toMatchObject({ code: "23505" });
    expect(await ids()).toEqual([1]);
  });

  test("a query outside waits for an open transaction instead of running inside it", async () => {
    await client.exec("truncate probe");
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let inserted = () => {};
    const insertDone = new Promise<void>((resolve) => {
      inserted = resolve;
    });
    const transaction = client
      .transaction(async (tx) => {
        await tx.query("insert into probe (id) values ($1)", [7]);
        inserted();
        await held;
        throw new Error("undo");
      })
      .catch(() => "rolled back");
    await insertDone;
    const outside = client.query<{ total: number }>(
      "select count(*)::int as total from probe where id >= $1",
      [0],
    );
    await Bun.sleep(20);
    release();
    expect(await transaction).toBe("rolled back");
    expect((await outside).rows).toEqual([{ total: 0 }]);
  });

  test("past the statement limit the oldest are closed, and come back when asked for", async () => {
    const texts = Array.from({ length: 520 }, (_, i) => `select $1::int + ${i} as n`);
    for (const [i, text] of texts.entries())
      expect((await client.query(text, [1])).rows).toEqual([{ n: 1 + i }]);
    expect((await client.query(texts[0] as string, [5])).rows).toEqual([{ n: 5 }]);
    const open = await client.query<{ total: number }>(
      "select count(*)::int as total from pg_prepared_statements",
    );
    expect(open.rows[0]?.total).toBeLessThanOrEqual(500);
  });
});
