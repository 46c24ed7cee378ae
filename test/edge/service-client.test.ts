import { afterEach, describe, expect, test } from "bun:test";
import { type RetryPolicy, ServiceClient, ServiceError } from "../../edge/service-client.ts";

/** A stand-in service on loopback whose replies each test scripts. */
function standIn(
  reply: (request: Request, body: unknown, n: number) => Response | Promise<Response>,
  retry: RetryPolicy = { firstMs: 10, maxMs: 50, giveUpAfterMs: 2_000 },
) {
  const seen: { path: string; headers: Headers; body: unknown }[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const body = await request.json();
      seen.push({ path: new URL(request.url).pathname, headers: request.headers, body });
      return reply(request, body, seen.length);
    },
  });
  stops.push(() => server.stop(true));
  const client = new ServiceClient(`http://127.0.0.1:${server.port}`, "svc_node_test", retry);
  return { client, seen };
}
const stops: (() => void)[] = [];
afterEach(() => {
  for (const stop of stops.splice(0)) stop();
});

const CALL = "01a21300-0000-7000-8000-000000000001";
const json = (value: unknown, status = 200) => Response.json(value, { status });
const callReply = {
  status: "success",
  data: {
    call: { id: CALL, status: "answered", agent_id: null, action: "hangup", agent_uri: null },
  },
};

const heartbeatReply = {
  status: "success",
  data: {
    edge_node: {
      id: CALL,
      tenant_id: CALL,
      name: "edge",
      prefix: "svc_node_abcd",
      max_concurrent_calls: 42,
      active_calls: 1,
      online: true,
      last_heartbeat_at: "2026-11-25T10:00:00.000Z",
      created_at: "2026-11-25T10:00:00.000Z",
      updated_at: "2026-11-25T10:00:00.000Z",
      revoked_at: null,
    },
  },
};

describe("service client", () => {
  test("a failed post is retried with back-off, the event's `at` unchanged", async () => {
    const { client, seen } = standIn((_r, _b, n) =>
      n < 3 ? json({ status: "error" }, 503) : json(callReply),
    );
    const reply = await client.report(CALL, { type: "answered", at: "2026-11-25T10:00:00.000Z" });
    expect(reply.action).toBe("hangup");
    expect(seen).toHaveLength(3);
    expect(seen.map((s) => (s.body as { at: string }).at)).toEqual([
      "2026-11-25T10:00:00.000Z",
      "2026-11-25T10:00:00.000Z",
      "2026-11-25T10:00:00.000Z",
    ]);
    expect(seen[0]?.headers.get("authorization")).toBe("Bearer svc_node_test");
  });

  test("a retried claim carries the same Idempotency-Key; each claim a new one", async () => {
    const { client, seen } = standIn((_r, _b, n) =>
      n === 1 ? json({}, 502) : json({ status: "success", data: { jobs: [] } }),
    );
    expect(await client.claim(5, 0)).toEqual([]);
    expect(await client.claim(5, 0)).toEqual([]);
    const keys = seen.map((s) => s.headers.get("idempotency-key"));
    expect(keys[0]).toBeTruthy();
    expect(keys[1]).toBe(keys[0] as string);
    expect(keys[2]).not.toBe(keys[0] as string);
  });

  test("replies that do not match the published schema are refused, not retried", async () => {
    const bad = [
      { status: "success", data: { jobs: [{ call_id: "not-a-uuid" }] } },
      { status: "success", data: {} },
      { status: "error", data: { jobs: [] } },
    ];
    for (const body of bad) {
      const { client, seen } = standIn(() => json(body));
      const error = await client.claim(1, 0).catch((e) => e);
      expect(error).toBeInstanceOf(ServiceError);
      expect((error as ServiceError).retryable).toBe(false);
      expect(seen).toHaveLength(1);
    }
    const { client } = standIn(() => json({ status: "success", data: { call: { id: CALL } } }));
    await expect(client.report(CALL, { type: "ringing", at: "x" })).rejects.toThrow(/schema/);
  });

  test("a 4xx is final: a call the service does not know is not retried", async () => {
    const { client, seen } = standIn(() => json({ status: "error", code: "not_found" }, 404));
    await expect(client.report(CALL, { type: "ended", at: "x" })).rejects.toThrow(/404/);
    expect(seen).toHaveLength(1);
  });

  test("heartbeats carry the ids of the calls held and return the node's capacity", async () => {
    const { client, seen } = standIn(() => json(heartbeatReply));
    expect(await client.heartbeat([CALL])).toEqual({ maxConcurrentCalls: 42 });
    expect(seen[0]?.body).toEqual({ active_calls: 1, active_call_ids: [CALL] });
  });

  test("the first heartbeat is sent until the service answers; a refused key is final", async () => {
    const { client, seen } = standIn((_r, _b, n) =>
      n < 3 ? json({ status: "error" }, 503) : json(heartbeatReply),
    );
    const waits: number[] = [];
    const never = new AbortController().signal;
    const onRetry = (_error: unknown, waitMs: number) => waits.push(waitMs);
    expect(await client.firstHeartbeat({ signal: never, onRetry })).toEqual({
      maxConcurrentCalls: 42,
    });
    expect(seen).toHaveLength(3);
    // 1 s, then 2 s, each drawn between half and all of it.
    expect(waits[0]).toBeWithin(500, 1_001);
    expect(waits[1]).toBeWithin(1_000, 2_001);

    const refused = standIn(() => json({ status: "error", code: "unauthenticated" }, 401));
    const error = await refused.client.firstHeartbeat({ signal: never, onRetry }).catch((e) => e);
    expect(error).toBeInstanceOf(ServiceError);
    expect((error as ServiceError).status).toBe(401);
    expect(refused.seen).toHaveLength(1);
  }, 10_000);

  test("a claim stops retrying once its signal fires (the node is stopping)", async () => {
    const { client, seen } = standIn(() => json({}, 503));
    const stop = new AbortController();
    setTimeout(() => stop.abort(), 100);
    await expect(client.claim(1, 0, { stop: stop.signal })).rejects.toThrow(/503/);
    expect(seen.length).toBeGreaterThan(1);
    expect(seen.length).toBeLessThan(20);
  });

  test("a stop during a claim's back-off ends it at once", async () => {
    const { client, seen } = standIn(() => json({}, 503), {
      firstMs: 10_000,
      maxMs: 10_000,
      giveUpAfterMs: 60_000,
    });
    const stop = new AbortController();
    setTimeout(() => stop.abort(), 100);
    const started = performance.now();
    await expect(client.claim(1, 0, { stop: stop.signal })).rejects.toThrow(/503/);
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(seen).toHaveLength(1);
  });

  test("a claim given up is abandoned while it waits, and not tried again", async () => {
    const { client, seen } = standIn(async (_r, body) => {
      await Bun.sleep((body as { wait_ms: number }).wait_ms);
      return json({ status: "success", data: { jobs: [] } });
    });
    const abandon = new AbortController();
    setTimeout(() => abandon.abort(), 100);
    const started = performance.now();
    await expect(client.claim(1, 3_000, { abandon: abandon.signal })).rejects.toThrow(/abort/i);
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(seen).toHaveLength(1);
  });
});
