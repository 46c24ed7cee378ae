import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import type { DatabaseHandle } from "../../db/client.ts";
import { rowsOf } from "../../db/rows.ts";
import { calls } from "../../db/schema/index.ts";
import { liveCallRow } from "../helpers/campaigns.ts";
import { resetDatabase } from "../helpers/database.ts";

/** The migration that holds a workspace to one live call per number. */
const MIGRATION = join(import.meta.dir, "../../db/migrations/0035_calls_live_phone.sql");

let database: DatabaseHandle;
beforeAll(async () => {
  database = await resetDatabase();
});
afterAll(async () => {
  // Back to the index as migrated on an empty table.
  await database.db.execute(sql`truncate calls`);
  await database.db.execute(sql`drop index if exists calls_live_phone`);
  await database.db.execute(sql.raw(await Bun.file(MIGRATION).text()));
});

const tenantId = Bun.randomUUIDv7();
const call = (phone: string, status: "claimed" | "ended") =>
  liveCallRow({ tenantId, phone, status });
const place = (phone: string, status: "claimed" | "ended" = "claimed") =>
  database.db.insert(calls).values(call(phone, status)).onConflictDoNothing().returning();

describe("one live call to a number", () => {
  test("a second live call is not placed; ended calls are not counted", async () => {
    expect(await place("+14155550101")).toHaveLength(1);
    expect(await place("+14155550101")).toHaveLength(0);
    expect(await place("+14155550101", "ended")).toHaveLength(1);
    expect(await place("+14155550102")).toHaveLength(1);
  });

  test("live calls that broke the rule before the migration are kept, and it holds from then on", async () => {
    await database.db.execute(sql`truncate calls`);
    await database.db.execute(sql`drop index calls_live_phone`);
    const [first, second] = [call("+14155550103", "claimed"), call("+14155550103", "claimed")];
    await database.db.insert(calls).values([first, second]);
    await database.db.execute(sql.raw(await Bun.file(MIGRATION).text()));
    const [index] = rowsOf<{ indexdef: string }>(
      await database.db.execute(
        sql`select indexdef from pg_indexes where indexname = 'calls_live_phone'`,
      ),
    );
    expect(index?.indexdef).toContain("UNIQUE");
    const live = await database.db.select({ id: calls.id }).from(calls);
    expect(live.map((row) => row.id).sort()).toEqual([first.id, second.id].sort());
    expect(await place("+14155550103")).toHaveLength(0);
    expect(await place("+14155550104")).toHaveLength(1);
    expect(await place("+14155550104")).toHaveLength(0);
  });
});
