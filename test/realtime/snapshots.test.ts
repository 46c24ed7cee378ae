import { describe, expect, test } from "bun:test";
import { SnapshotBatcher } from "../../src/realtime/snapshots.ts";

describe("snapshot batching", () => {
  test("requests of one turn share a build; a request after the build started waits for the next", async () => {
    const builds: string[] = [];
    let state = "before";
    const batcher = new SnapshotBatcher(async (tenantId) => {
      builds.push(tenantId);
      return `${tenantId}:${state}`;
    });
    const together = [batcher.of("t1"), batcher.of("t1"), batcher.of("t2")];
    // A change made after those requests but before the build runs is in their snapshot.
    state = "changed";
    expect(await Promise.all(together)).toEqual(["t1:changed", "t1:changed", "t2:changed"]);
    expect(builds).toEqual(["t1", "t2"]);

    const first = batcher.of("t1");
    await new Promise((resolve) => setImmediate(resolve));
    state = "later";
    // The first build has started: this request must not be answered by it.
    const second = batcher.of("t1");
    expect(await first).toBe("t1:changed");
    expect(await second).toBe("t1:later");
    expect(builds).toEqual(["t1", "t2", "t1", "t1"]);
  });
});
