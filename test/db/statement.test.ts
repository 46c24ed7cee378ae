import { beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import type { DatabaseHandle } from "../../db/client.ts";
import { clusterMessagesByIds, insertClusterMessage } from "../../db/queries/cluster-messages.ts";
import { insertTenant } from "../../db/queries/tenants.ts";
import { tenants } from "../../db/schema/index.ts";
import { isAnyUuid } from "../../db/statement.ts";
import { resetDatabase } from "../helpers/database.ts";

let database: DatabaseHandle;
beforeAll(async () => {
  database = await resetDatabase();
});

const uuids = (count: number) => Array.from({ length: count }, () => Bun.randomUUIDv7());

describe("a list of ids in a statement", () => {
  test("is one parameter: the statement's text is the same whatever the number of ids", () => {
    const query = (ids: string[]) =>
      database.db.select().from(tenants).where(isAnyUuid(tenants.id, ids)).toSQL();
    const one = query(uuids(1));
    const many = query(uuids(300));
    expect(many.sql).toBe(one.sql);
    expect(many.params).toHaveLength(1);
  });

  test("finds the rows of exactly those ids; an id carrying a comma or a quote is refused", async () => {
    const [first, second, third] = uuids(3) as [string, string, string];
    for (const [id, domain] of [
      [first, "one.test"],
      [second, "two.test"],
      [third, "three.test"],
    ] as const)
      await insertTenant(database.db, {
        id,
        name: domain,
        domain,
        rateLimitPerMinute: 600,
        createdAt: new Date(),
        updatedAt: new Date(),
      });
    const found = await database.db
      .select({ id: tenants.id })
      .from(tenants)
      .where(isAnyUuid(tenants.id, [first, third, uuids(1)[0] as string]));
    expect(found.map((row) => row.id).sort()).toEqual([first, third].sort());
    // Each id is one element of the array: none can smuggle in another, stored as it is.
    expect(await database.db.select().from(tenants).where(eq(tenants.id, second))).toHaveLength(1);
    for (const smuggled of [`${first},${second}`, `${first}","${second}`]) {
      await expect(
        database.db
          .select()
          .from(tenants)
          .where(isAnyUuid(tenants.id, [smuggled]))
          .execute(),
      ).rejects.toThrow();
    }
  });

  test("of stored pushes, by their numbers", async () => {
    const ids = [
      await insertClusterMessage(database.db, "a"),
      await insertClusterMessage(database.db, "b"),
      await insertClusterMessage(database.db, "c"),
    ];
    const found = await clusterMessagesByIds(database.db, [ids[0] as number, ids[2] as number]);
    expect(found.map((row) => row.payload).sort()).toEqual(["a", "c"]);
  });
});
