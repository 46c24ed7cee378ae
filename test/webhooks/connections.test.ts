import { afterEach, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { closeIdleConnections, post, TimeoutError } from "../../src/webhooks/connections.ts";

const LIMITS = { timeoutMs: 2_000, maxBytes: 64 * 1024, keepBytes: 1024 };
const fixture = (name: string) =>
  readFileSync(join(import.meta.dir, "../fixtures/tls", name), "utf8");

const stops: (() => void)[] = [];
afterEach(() => {
  closeIdleConnections();
  for (const stop of stops.splice(0)) stop();
});

/** A receiver answering with `answer`; records each request's body and client port. */
function receiver(
  answer: (request: Request) => Response | Promise<Response> = () =>
    new Response(null, { status: 204 }),
  tls?: { cert: string; key: string },
) {
  const requests: { body: string; port: number; headers: Headers }[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    ...(tls ? { tls } : {}),
    async fetch(request, server) {
      requests.push({
        body: await request.text(),
        port: server.requestIP(request)?.port ?? 0,
        headers: request.headers,
      });
      return answer(request);
    },
  });
  stops.push(() => server.stop(true));
  return {
    url: new URL(`${tls ? "https" : "http"}://127.0.0.1:${server.port}/hooks?x=1`),
    server,
    requests,
  };
}

interface RawState {
  n: number;
  requests: number;
  got: string;
}

/**
 * A TCP server that plays `script` for each whole request, given the connection's number and
 * the request's on it, for answers no HTTP server would give.
 */
function rawServer(
  script: (socket: Bun.Socket<RawState>, connection: number, request: number) => void,
) {
  let accepted = 0;
  const listener = Bun.listen<RawState>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(socket) {
        socket.data = { n: accepted++, requests: 0, got: "" };
      },
      data(socket, bytes) {
        socket.data.got += bytes.toString("latin1");
        const end = socket.data.got.indexOf("\r\n\r\n");
        const length = Number(/content-length: (\d+)/i.exec(socket.data.got)?.[1] ?? 0);
        if (end >= 0 && socket.data.got.length >= end + 4 + length) {
          socket.data.got = "";
          script(socket, socket.data.n, socket.data.requests++);
        }
      },
    },
  });
  stops.push(() => listener.stop(true));
  return { url: new URL(`http://127.0.0.1:${listener.port}/`), accepted: () => accepted };
}

describe("posting a delivery", () => {
  test("sends the body and headers, and keeps the connection for the next post", async () => {
    const r = receiver();
    const body = JSON.stringify({ type: "dnc.added", note: "é ✓" });
    const first = await post(
      r.url,
      { "webhook-id": "msg_1", "content-type": "application/json" },
      body,
      LIMITS,
    );
    const second = await post(r.url, { "webhook-id": "msg_2" }, body, LIMITS);
    expect(first).toEqual({ status: 204, body: "" });
    expect(second.status).toBe(204);
    expect(r.requests.map((request) => request.body)).toEqual([body, body]);
    expect(r.requests[0]?.headers.get("webhook-id")).toBe("msg_1");
    expect(r.requests[0]?.headers.get("host")).toBe(r.url.host);
    expect(r.requests[1]?.port).toBe(r.requests[0]?.port ?? -1);
  });

  test("a large body is written whole", async () => {
    const r = receiver();
    const body = "x".repeat(4 * 1024 * 1024);
    expect((await post(r.url, {}, body, LIMITS)).status).toBe(204);
    expect(r.requests[0]?.body.length).toBe(body.length);
  });

  test("keeps the first bytes of an answer, and follows no redirect", async () => {
    const r = receiver((request) =>
      new URL(request.url).searchParams.has("x") && request.headers.get("webhook-id") === "moved"
        ? new Response(null, { status: 301, headers: { location: "http://127.0.0.1:1/" } })
        : new Response("y".repeat(5_000), { status: 200 }),
    );
    const answer = await post(r.url, {}, "{}", LIMITS);
    expect(answer.status).toBe(200);
    expect(answer.body).toBe("y".repeat(1024));
    expect((await post(r.url, { "webhook-id": "moved" }, "{}", LIMITS)).status).toBe(301);
    expect(r.requests.length).toBe(2);
  });

  test("reads an endless answer no further than the limit", async () => {
    const r = receiver(
      () =>
        new Response(
          new ReadableStream({
            pull(controller) {
              controller.enqueue(new Uint8Array(16 * 1024).fill(122));
            },
          }),
        ),
    );
    const answer = await post(r.url, {}, "{}", LIMITS);
    expect(answer.status).toBe(200);
    expect(answer.body).toBe("z".repeat(1024));
  });

  test("gives up on a receiver that does not answer in time", async () => {
    const r = receiver(() => new Promise<Response>(() => {}));
    const started = performance.now();
    const failure = await post(r.url, {}, "{}", { ...LIMITS, timeoutMs: 300 }).catch(
      (error) => error,
    );
    expect(failure).toBeInstanceOf(TimeoutError);
    expect(performance.now() - started).toBeLessThan(1_500);
  });

  test("fails when nothing listens", async () => {
    const r = receiver();
    const port = r.server.port;
    r.server.stop(true);
    await expect(post(new URL(`http://127.0.0.1:${port}/`), {}, "{}", LIMITS)).rejects.toThrow();
  });

  test("reads answers in pieces, chunked, and after an interim answer", async () => {
    const raw = rawServer((socket, _connection, request) => {
      if (request === 0) {
        socket.write("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 202 Accepted\r\ncontent-le");
        setTimeout(() => socket.write("ngth: 5\r\n\r\nhel"), 20);
        setTimeout(() => socket.write("lo"), 40);
      } else {
        socket.write(
          "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nx-trailer: 1\r\n\r\n",
        );
      }
    });
    expect(await post(raw.url, {}, "{}", LIMITS)).toEqual({ status: 202, body: "hello" });
    // The first connection ended its answer cleanly, so the second post reuses it.
    expect(await post(raw.url, {}, "{}", LIMITS)).toEqual({ status: 200, body: "abcde" });
    expect(raw.accepted()).toBe(1);
  });

  test("an answer ended by closing the connection is whole; one cut short is not", async () => {
    const raw = rawServer((socket, n) => {
      if (n === 0) socket.end("HTTP/1.1 500 Oops\r\n\r\nbroken");
      else socket.end("HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nshort");
    });
    expect(await post(raw.url, {}, "{}", LIMITS)).toEqual({ status: 500, body: "broken" });
    await expect(post(raw.url, {}, "{}", LIMITS)).rejects.toThrow("before the answer ended");
  });

  test("refuses what is not an HTTP/1.1 answer", async () => {
    const raw = rawServer((socket, n) => {
      if (n === 0) socket.write("SSH-2.0-OpenSSH\r\n\r\n");
      else socket.write(`HTTP/1.1 200 OK\r\n${"x-filler: yes\r\n".repeat(2_000)}`);
    });
    await expect(post(raw.url, {}, "{}", LIMITS)).rejects.toThrow("not an HTTP/1.1 answer");
    await expect(post(raw.url, {}, "{}", LIMITS)).rejects.toThrow("headers too long");
  });

  test("a kept connection the receiver dropped is replaced, once", async () => {
    const raw = rawServer((socket, connection, request) => {
      // The first connection answers once, then drops the next request unanswered.
      if (connection === 0 && request > 0) socket.end();
      else socket.write("HTTP/1.1 204 No Content\r\n\r\n");
    });
    expect((await post(raw.url, {}, "{}", LIMITS)).status).toBe(204);
    expect((await post(raw.url, {}, "{}", LIMITS)).status).toBe(204);
    expect(raw.accepted()).toBe(2);
  });
});

describe("posting over TLS", () => {
  const localhost = { cert: fixture("localhost.pem"), key: fixture("localhost.key") };

  test("checks the certificate against the trusted authorities", async () => {
    const r = receiver(undefined, localhost);
    const trusted = await post(r.url, {}, "{}", LIMITS, { ca: fixture("ca.pem") });
    expect(trusted.status).toBe(204);
    // The system's authorities do not know the tests' own.
    await expect(
      post(new URL(`https://localhost:${r.server.port}/`), {}, "{}", LIMITS),
    ).rejects.toThrow(/verify/);
    expect(r.requests.length).toBe(1);
  });

  test("refuses a certificate for another name", async () => {
    const r = receiver(undefined, { cert: fixture("other.pem"), key: fixture("other.key") });
    await expect(
      post(new URL(`https://localhost:${r.server.port}/`), {}, "{}", LIMITS, {
        ca: fixture("ca.pem"),
      }),
    ).rejects.toThrow(/does not match/);
    expect(r.requests.length).toBe(0);
  });
});
