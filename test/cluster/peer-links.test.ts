import { describe, expect, test } from "bun:test";
import { FrameBatcher, parseFrame } from "../../src/cluster/peer-links.ts";

describe("frames between processes", () => {
  test("messages sent in one turn go as one frame; one alone goes as itself; each is read back", async () => {
    const frames: string[] = [];
    const batcher = new FrameBatcher((frame) => frames.push(frame));
    batcher.send({ id: 1 });
    batcher.send({ id: 2 });
    batcher.send({ id: 3 });
    expect(frames).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    batcher.send({ id: 4 });
    await new Promise((resolve) => setImmediate(resolve));
    expect(frames).toHaveLength(2);
    expect(frames.map((frame) => parseFrame(frame))).toEqual([
      [{ id: 1 }, { id: 2 }, { id: 3 }],
      [{ id: 4 }],
    ]);
    expect(frames[1]).toBe('{"id":4}');
  });
});
