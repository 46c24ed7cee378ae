import { randomBytes } from "node:crypto";
import net from "node:net";
import type { Server } from "bun";
import type { Harness } from "./app.ts";

/**
 * Makes a harness's app listen on a free loopback port and wires the realtime hub to it, as
 * `src/index.ts` does, so that tests can open real sockets against an in-process app.
 */
export function listenOnLoopback(h: Pick<Harness, "app" | "deps">) {
  const app = h.app.listen({ hostname: "127.0.0.1", port: 0 });
  const server = app.server as Server<unknown>;
  h.deps.realtime.attach(server);
  const baseUrl = `http://127.0.0.1:${server.port}`;
  return {
    server,
    baseUrl,
    wsUrl: (path: string, token: string) =>
      `${baseUrl.replace("http", "ws")}${path}?token=${encodeURIComponent(token)}`,
    async stop() {
      h.deps.realtime.attach(undefined);
      await app.stop(true);
    },
  };
}

// biome-ignore lint/suspicious/noExplicitAny: test assertions read arbitrary JSON.
export type Message = Record<string, any>;

/**
 * A browser-like client: it reads every frame. `frames` keeps the text of each as received;
 * `messages` holds the decoded ones not yet taken by `next`.
 */
export async function openSocket(url: string) {
  const socket = new WebSocket(url);
  const frames: string[] = [];
  const messages: Message[] = [];
  socket.addEventListener("message", (event) => {
    frames.push(String(event.data));
    messages.push(JSON.parse(String(event.data)));
  });
  await new Promise<void>((resolve, reject) => {
    socket.addEventListener("open", () => resolve());
    socket.addEventListener("error", () => reject(new Error("socket refused")));
  });
  /** Takes the first unread message of `type`, waiting for it. */
  const next = async (type: string, timeoutMs = 5000): Promise<Message> => {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const index = messages.findIndex((message) => message.type === type);
      if (index !== -1) return messages.splice(index, 1)[0] as Message;
      await Bun.sleep(10);
    }
    throw new Error(`no ${type} message; got ${JSON.stringify(messages)}`);
  };
  return { socket, frames, messages, next, send: (value: unknown) => socket.send(String(value)) };
}

/**
 * A client frame as RFC 6455 wants it: FIN, text, masked. Payloads stay under 64 KiB (the
 * server's frame limit), so the 16-bit length form is the largest needed.
 */
function maskedTextFrame(text: string): Buffer {
  const payload = Buffer.from(text);
  if (payload.length >= 65536) throw new Error("frame too large for this client");
  const header =
    payload.length < 126
      ? Buffer.from([0x81, 0x80 | payload.length])
      : Buffer.from([0x81, 0x80 | 126, payload.length >> 8, payload.length & 0xff]);
  const mask = randomBytes(4);
  const masked = Buffer.alloc(payload.length);
  for (let i = 0; i < payload.length; i++) {
    masked[i] = (payload[i] as number) ^ (mask[i % 4] as number);
  }
  return Buffer.concat([header, mask, masked]);
}

/**
 * A WebSocket client over a plain TCP socket, upgraded by hand, that stops reading as soon as
 * the upgrade is answered: a WebSocket client always drains its socket, so only a raw one can
 * play a stalled reader. It can still write frames.
 */
export async function openStalledSocket(baseUrl: string, path: string, token: string) {
  const { hostname, port } = new URL(baseUrl);
  const socket = net.connect(Number(port), hostname);
  let closed = false;
  const closedPromise = new Promise<void>((resolve) =>
    socket.once("close", () => {
      closed = true;
      resolve();
    }),
  );
  // A reset from the server is how this client learns it was closed; it is expected.
  socket.on("error", () => {});
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  socket.write(
    `GET ${path}?token=${encodeURIComponent(token)} HTTP/1.1\r\nHost: ${hostname}:${port}\r\n` +
      "Upgrade: websocket\r\nConnection: Upgrade\r\n" +
      `Sec-WebSocket-Key: ${randomBytes(16).toString("base64")}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
  );
  const statusLine = await new Promise<string>((resolve, reject) => {
    let head = "";
    const onData = (chunk: Buffer) => {
      head += chunk.toString("latin1");
      if (!head.includes("\r\n\r\n")) return;
      socket.off("data", onData);
      socket.pause();
      resolve(head.slice(0, head.indexOf("\r\n")));
    };
    socket.on("data", onData);
    socket.once("close", () => reject(new Error(`closed during the upgrade: ${head}`)));
  });
  if (!statusLine.includes(" 101 ")) throw new Error(`upgrade refused: ${statusLine}`);
  return {
    socket,
    send: (text: string) => socket.write(maskedTextFrame(text)),
    isClosed: () => closed,
    /** Resolves once the TCP connection is gone; reading resumes so that a FIN or reset is seen. */
    closed: (timeoutMs: number) => {
      socket.resume();
      socket.on("data", () => {});
      return Promise.race([closedPromise.then(() => true), Bun.sleep(timeoutMs).then(() => false)]);
    },
  };
}
