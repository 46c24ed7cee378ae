import { describe, expect, test } from "bun:test";
import { GroupCommit } from "../../src/lib/group-commit.ts";

/** A writer whose batches finish only when the test says so. */
function heldWriter() {
  const batches: number[][] = [];
  const finish: (() => void)[] = [];
  const write = (items: number[]) => {
    batches.push(items);
    return new Promise<number[]>((resolve) => {
      finish.push(() => resolve(items.map((item) => item * 10)));
    });
  };
  return { batches, finish, write };
}

const turn = () => new Promise((resolve) => setTimeout(resolve, 0));

describe("group commit", () => {
  test("an item alone is written at once; items of one turn go together", async () => {
    const writer = heldWriter();
    const commits = new GroupCommit(writer.write, 2, 100);
    const alone = commits.submit(1);
    await turn();
    expect(writer.batches).toEqual([[1]]);
    const together = [commits.submit(2), commits.submit(3)];
    await turn();
    expect(writer.batches).toEqual([[1], [2, 3]]);
    for (const finish of writer.finish) finish();
    expect(await alone).toBe(10);
    expect(await Promise.all(together)).toEqual([20, 30]);
  });

  test("what arrives while every slot is busy waits, then goes as one batch", async () => {
    const writer = heldWriter();
    const commits = new GroupCommit(writer.write, 1, 100);
    const first = commits.submit(1);
    await turn();
    const waiting = [commits.submit(2)];
    await turn();
    waiting.push(commits.submit(3), commits.submit(4));
    await turn();
    expect(writer.batches).toEqual([[1]]);
    writer.finish[0]?.();
    expect(await first).toBe(10);
    await turn();
    expect(writer.batches).toEqual([[1], [2, 3, 4]]);
    writer.finish[1]?.();
    expect(await Promise.all(waiting)).toEqual([20, 30, 40]);
  });

  test("batches are capped, and a failed batch fails each of its items only", async () => {
    let calls = 0;
    const commits = new GroupCommit(
      async (items: number[]) => {
        calls++;
        if (items.includes(3)) throw new Error("batch failed");
        return items;
      },
      1,
      2,
    );
    const results = await Promise.allSettled([1, 2, 3, 4, 5].map((item) => commits.submit(item)));
    expect(calls).toBe(3);
    expect(results.map((result) => result.status)).toEqual([
      "fulfilled",
      "fulfilled",
      "rejected",
      "rejected",
      "fulfilled",
    ]);
  });
});
