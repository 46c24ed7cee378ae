import { expect, test } from "bun:test";
import { type Socket, type SocketHandlers, watchedForLife } from "../../src/realtime/routes.ts";

/** A socket as the watch sees it: what it was sent, and whether it was dropped. */
function fakeSocket() {
  const seen = { pings: 0, terminated: false, closed: 0 };
  const ws = {
    data: {},
    ping: () => {
      seen.pings++;
    },
    terminate: () => {
      seen.terminated = true;
    },
  } as unknown as Socket;
  return { ws, seen };
}

const routeHandlers = (seen: { closed: number }): SocketHandlers => ({
  open: () => {},
  message: () => {},
  close: () => {
    seen.closed++;
  },
});

const LIMITS = { silenceMs: 120, checkMs: 20 };

test("a client that never answers is pinged, then dropped, however busy the server keeps its socket", async () => {
  const { ws, seen } = fakeSocket();
  const handlers = watchedForLife(routeHandlers(seen), LIMITS);
  await handlers.open(ws);
  await Bun.sleep(LIMITS.silenceMs + 3 * LIMITS.checkMs);
  expect(seen.pings).toBeGreaterThan(0);
  expect(seen.terminated).toBe(false);
  await Bun.sleep(LIMITS.silenceMs);
  expect(seen.terminated).toBe(true);
  handlers.close(ws);
  expect(seen.closed).toBe(1);
});

test("a client that answers the pings, or sends, stays", async () => {
  const { ws, seen } = fakeSocket();
  const handlers = watchedForLife(routeHandlers(seen), LIMITS);
  await handlers.open(ws);
  for (let round = 0; round < 8; round++) {
    await Bun.sleep(LIMITS.silenceMs / 2);
    if (round % 2 === 0) handlers.pong?.(ws);
    else await handlers.message(ws, "{}");
  }
  expect(seen.terminated).toBe(false);
  handlers.close(ws);
});
