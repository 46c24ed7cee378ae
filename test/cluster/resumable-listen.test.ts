import { describe, expect, test } from "bun:test";
import { type ListenClient, resumableListen } from "../../src/cluster/resumable-listen.ts";
import { silentLogger } from "../../src/logger.ts";

/**
 * A channel in memory: `notify` delivers to the current listener, as PostgreSQL does, unless
 * the listen was dropped (`drop`), as postgres.js drops one whose re-listen failed.
 * `reconnect` calls the listener's `onListen` again, as postgres.js does after a reconnection.
 */
function fakeChannel() {
  let listener: { onNotify: (payload: string) => void; onListen?: () => void } | undefined;
  let listens = 0;
  const client: ListenClient = {
    async listen(_channel, onNotify, onListen) {
      listens++;
      const mine = { onNotify, onListen };
      listener = mine;
      onListen?.();
      return {
        async unlisten() {
          if (listener === mine) listener = undefined;
        },
      };
    },
    async notify(_channel, payload) {
      listener?.onNotify(payload);
    },
  };
  return {
    client,
    listens: () => listens,
    drop: () => {
      listener = undefined;
    },
    reconnect: () => listener?.onListen?.(),
  };
}

const start = (channel: ReturnType<typeof fakeChannel>, available = () => true) => {
  const messages: string[] = [];
  let resumed = 0;
  const listening = resumableListen({
    client: channel.client,
    channel: "test",
    onMessage: (payload) => messages.push(payload),
    resumed: () => {
      resumed++;
    },
    available,
    logger: silentLogger,
    checkMs: 20,
  });
  return { listening, messages, resumed: () => resumed };
};

describe("LISTEN that survives the loss of its connection", () => {
  test("messages pass through; its own pings do not; the first listen is not a resumption", async () => {
    const channel = fakeChannel();
    const { listening, messages, resumed } = start(channel);
    const stop = (await listening).stop;
    await channel.client.notify("test", '{"kind":"user"}');
    await channel.client.notify("test", '{"ping":"another process"}');
    await Bun.sleep(70);
    expect(messages).toEqual(['{"kind":"user"}']);
    expect(resumed()).toBe(0);
    expect(channel.listens()).toBe(1);
    await stop();
  });

  test("a reconnection that listens again is a resumption", async () => {
    const channel = fakeChannel();
    const { listening, resumed } = start(channel);
    const stop = (await listening).stop;
    channel.reconnect();
    expect(resumed()).toBe(1);
    await stop();
  });

  test("a listen dropped for good is noticed by its unanswered ping, listened again, and resumed", async () => {
    const channel = fakeChannel();
    const { listening, messages, resumed } = start(channel);
    const stop = (await listening).stop;
    channel.drop();
    await Bun.sleep(100);
    expect(channel.listens()).toBeGreaterThan(1);
    expect(resumed()).toBeGreaterThanOrEqual(1);
    await channel.client.notify("test", '{"kind":"tenant"}');
    expect(messages).toEqual(['{"kind":"tenant"}']);
    await stop();
  });

  test("while the database is away, it does not try to listen again", async () => {
    const channel = fakeChannel();
    let available = true;
    const { listening, resumed } = start(channel, () => available);
    const stop = (await listening).stop;
    available = false;
    channel.drop();
    await Bun.sleep(100);
    expect(channel.listens()).toBe(1);
    expect(resumed()).toBe(0);
    await stop();
  });
});
