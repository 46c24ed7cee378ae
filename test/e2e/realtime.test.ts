import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resetDatabase } from "../helpers/database.ts";
import {
  SERVER_TEST_TIMEOUT_MS,
  type ServerProcess,
  startServer,
} from "../helpers/server-process.ts";

const dataDir = mkdtempSync(join(tmpdir(), "dialer-ws-"));
let server: ServerProcess;
let token: string;

beforeAll(async () => {
  await resetDatabase();
  server = await startServer({
    DATA_DIR: dataDir,
    AUTH_JWT_SECRET: "realtime-secret-that-is-long-enough-to-use",
    BOOTSTRAP_ADMIN_EMAIL: "ops@example.test",
    BOOTSTRAP_ADMIN_PASSWORD: "a configured password",
    WS_ALLOWED_ORIGINS: "https://dash.example.test",
    AGENT_DISCONNECT_GRACE_SECONDS: "1",
  });
  const login = await fetch(`${server.baseUrl}/api/v1/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: "ops@example.test", password: "a configured password" }),
  });
  token = ((await login.json()) as { data: { token: string } }).data.token;
}, SERVER_TEST_TIMEOUT_MS);

afterAll(async () => {
  server?.process.kill("SIGTERM");
  await server?.process.exited;
  rmSync(dataDir, { recursive: true, force: true });
});

const wsUrl = (path: string, query: string) =>
  `${server.baseUrl.replace("http", "ws")}${path}?${query}`;

/** Opens a socket and collects its messages; resolves once it is open. */
async function connect(path: string, query: string) {
  const socket = new WebSocket(wsUrl(path, query));
  const messages: Record<string, unknown>[] = [];
  socket.addEventListener("message", (event) => messages.push(JSON.parse(String(event.data))));
  await new Promise<void>((resolve, reject) => {
    socket.addEventListener("open", () => resolve());
    socket.addEventListener("error", () => reject(new Error("socket refused")));
  });
  const next = async (type: string, timeoutMs = 3000) => {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const found = messages.find((message) => message.type === type);
      if (found) {
        messages.splice(messages.indexOf(found), 1);
        return found;
      }
      await Bun.sleep(20);
    }
    throw new Error(`no ${type} message; got ${JSON.stringify(messages)}`);
  };
  return { socket, messages, next };
}

/** The status of an upgrade attempt, without a WebSocket client that hides it. */
const upgradeStatus = async (path: string, query: string, headers: Record<string, string> = {}) =>
  (
    await fetch(`${server.baseUrl}${path}?${query}`, {
      headers: {
        connection: "Upgrade",
        upgrade: "websocket",
        "sec-websocket-version": "13",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
        ...headers,
      },
    })
  ).status;

describe("supervisor socket", () => {
  test(
    "bad tokens, keys and foreign origins are refused before the upgrade",
    async () => {
      expect(await upgradeStatus("/ws/supervisor", "")).toBe(401);
      expect(await upgradeStatus("/ws/supervisor", "token=not-a-token")).toBe(401);
      // Credentials are judged before the query, as on every route.
      expect(await upgradeStatus("/ws/supervisor", "foo=1")).toBe(401);
      expect(await upgradeStatus("/ws/agent", "token=%00&foo=1")).toBe(401);
      expect(await upgradeStatus("/ws/supervisor", `token=${token}&foo=1`)).toBe(400);
      expect(await upgradeStatus("/ws/supervisor", `token=svc_key_${"A".repeat(43)}`)).toBe(403);
      expect(
        await upgradeStatus("/ws/supervisor", `token=${token}`, { origin: "https://evil.example" }),
      ).toBe(403);
      // The upgrade's own answer carries a request id, as every response does.
      const { port } = new URL(server.baseUrl);
      const head = await new Promise<string>((resolve, reject) => {
        let received = "";
        Bun.connect({
          hostname: "127.0.0.1",
          port: Number(port),
          socket: {
            open(raw) {
              raw.write(
                `GET /ws/supervisor?token=${token} HTTP/1.1\r\nHost: 127.0.0.1\r\n` +
                  "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n" +
                  "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
              );
            },
            data(raw, chunk) {
              received += chunk.toString("latin1");
              if (received.includes("\r\n\r\n")) {
                raw.end();
                resolve(received.slice(0, received.indexOf("\r\n\r\n")));
              }
            },
            error(_raw, error) {
              reject(error);
            },
          },
        }).catch(reject);
      });
      expect(head).toStartWith("HTTP/1.1 101");
      expect(head.toLowerCase()).toMatch(/\r\nx-request-id: [0-9a-f]{8}-[0-9a-z]+/);
      // A valid token on a request that is no upgrade: a 400 in the envelope.
      const plain = await fetch(`${server.baseUrl}/ws/supervisor?token=${token}`);
      expect(plain.status).toBe(400);
      expect(await plain.json()).toMatchObject({ status: "error", code: "invalid_request" });
    },
    SERVER_TEST_TIMEOUT_MS,
  );

  test(
    "a snapshot on connect, then status and stats pushes; bad messages get an error reply",
    async () => {
      const created = await fetch(`${server.baseUrl}/api/v1/campaigns`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
        body: JSON.stringify({ name: "Live" }),
      });
      const campaign = ((await created.json()) as { data: { campaign: { id: string } } }).data
        .campaign;
      const supervisor = await connect("/ws/supervisor", `token=${token}`);
      const snapshot = await supervisor.next("snapshot");
      expect((snapshot.campaigns as { id: string }[]).map((c) => c.id)).toContain(campaign.id);

      await fetch(`${server.baseUrl}/api/v1/campaigns/${campaign.id}/status`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
        body: JSON.stringify({ action: "start" }),
      });
      expect(await supervisor.next("campaign.status")).toMatchObject({
        campaign_id: campaign.id,
        status: "running",
        from: "draft",
      });
      expect(await supervisor.next("campaign.stats")).toMatchObject({ campaign_id: campaign.id });

      supervisor.socket.send("not json");
      expect(await supervisor.next("error")).toMatchObject({ code: "invalid_request" });
      supervisor.socket.send(JSON.stringify({ type: "subscribe", campaign_ids: [campaign.id] }));
      expect(await supervisor.next("subscribed")).toMatchObject({ campaign_ids: [campaign.id] });
      supervisor.socket.close();
    },
    SERVER_TEST_TIMEOUT_MS,
  );

  test(
    "a frame over 64 KiB closes the socket with 1009",
    async () => {
      const supervisor = await connect("/ws/supervisor", `token=${token}`);
      const closed = new Promise<number>((resolve) =>
        supervisor.socket.addEventListener("close", (event) => resolve(event.code)),
      );
      supervisor.socket.send("x".repeat(70 * 1024));
      expect(await closed).toBe(1009);
    },
    SERVER_TEST_TIMEOUT_MS,
  );
});

describe("tenant isolation", () => {
  test(
    "a supervisor of another tenant hears nothing of this one",
    async () => {
      const post = async (path: string, body: unknown, bearer = token) =>
        (await (
          await fetch(`${server.baseUrl}${path}`, {
            method: "POST",
            headers: { "content-type": "application/json", authorization: `Bearer ${bearer}` },
            body: JSON.stringify(body),
          })
        ).json()) as { data: Record<string, { id: string; token?: string }> & { token?: string } };
      const tenant = (await post("/api/v1/tenants", { name: "Other", domain: "other.example" }))
        .data.tenant;
      await post(`/api/v1/users?tenant_id=${tenant?.id}`, {
        email: "boss@other.example",
        password: "first password 123",
        role: "supervisor",
      });
      const login = async (password: string) =>
        (
          await post("/api/v1/auth/login", {
            email: "boss@other.example",
            password,
            tenant_domain: "other.example",
          })
        ).data.token as string;
      await post(
        "/api/v1/auth/me/password",
        { current_password: "first password 123", new_password: "second password 123" },
        await login("first password 123"),
      );
      const otherToken = await login("second password 123");
      const other = await connect("/ws/supervisor", `token=${otherToken}`);
      const snapshot = await other.next("snapshot");
      expect(snapshot.campaigns).toEqual([]);
      // Only a platform admin may watch a tenant by naming it.
      const ownTenant = (
        (await (
          await fetch(`${server.baseUrl}/api/v1/auth/me`, {
            headers: { authorization: `Bearer ${token}` },
          })
        ).json()) as { data: { user: { tenant_id: string } } }
      ).data.user.tenant_id;
      expect(
        await upgradeStatus("/ws/supervisor", `token=${otherToken}&tenant_id=${ownTenant}`),
      ).toBe(403);
      const watcher = await connect("/ws/supervisor", `token=${token}&tenant_id=${tenant?.id}`);
      expect((await watcher.next("snapshot")).campaigns).toEqual([]);
      const theirs = (await post(`/api/v1/campaigns?tenant_id=${tenant?.id}`, { name: "Theirs" }))
        .data.campaign;
      await post(`/api/v1/campaigns/${theirs?.id}/status?tenant_id=${tenant?.id}`, {
        action: "start",
      });
      for (const socket of [watcher, other])
        expect(await socket.next("campaign.status")).toMatchObject({
          campaign_id: theirs?.id,
          status: "running",
        });
      watcher.socket.close();
      await other.next("campaign.stats");
      other.messages.length = 0;
      const campaign = (await post("/api/v1/campaigns", { name: "Private" })).data.campaign;
      await post(`/api/v1/campaigns/${campaign?.id}/status`, { action: "start" });
      const mine = await connect("/ws/supervisor", `token=${token}`);
      await mine.next("snapshot");
      await post(`/api/v1/campaigns/${campaign?.id}/status`, { action: "pause" });
      await mine.next("campaign.status");
      await Bun.sleep(300);
      expect(
        other.messages.filter((message) => String(message.type).startsWith("campaign.")),
      ).toEqual([]);
      other.socket.close();
      mine.socket.close();
    },
    SERVER_TEST_TIMEOUT_MS,
  );
});

describe("agent socket", () => {
  test(
    "an agent gets its state, sets it by message, and goes offline after the grace period",
    async () => {
      const created = await fetch(`${server.baseUrl}/api/v1/campaigns`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
        body: JSON.stringify({ name: "Agents" }),
      });
      const campaign = ((await created.json()) as { data: { campaign: { id: string } } }).data
        .campaign;
      const agent = await connect("/ws/agent", `token=${token}`);
      expect(await agent.next("agent.state")).toMatchObject({ agent: { state: "offline" } });
      agent.socket.send(JSON.stringify({ type: "ready", campaign_id: campaign.id }));
      expect(await agent.next("ack")).toMatchObject({ for: "ready" });
      expect(await agent.next("agent.state")).toMatchObject({
        agent: { state: "ready", campaign_id: campaign.id },
      });
      agent.socket.send(JSON.stringify({ type: "dance" }));
      expect(await agent.next("error")).toMatchObject({ code: "invalid_request" });
      agent.socket.close();
      // The agent keeps its state through the grace period, then goes offline.
      const state = async () =>
        (
          (await (
            await fetch(`${server.baseUrl}/api/v1/agents/me`, {
              headers: { authorization: `Bearer ${token}` },
            })
          ).json()) as {
            data: { agent: { state: string } };
          }
        ).data.agent.state;
      await Bun.sleep(300);
      expect(await state()).toBe("ready");
      await Bun.sleep(1200);
      expect(await state()).toBe("offline");
    },
    SERVER_TEST_TIMEOUT_MS,
  );
});

/** A server of its own on a new data directory, with its admin signed in. */
async function startSignedIn(env: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), "dialer-ws-own-"));
  const own = await startServer({
    DATA_DIR: dir,
    AUTH_JWT_SECRET: "realtime-secret-that-is-long-enough-to-use",
    BOOTSTRAP_ADMIN_EMAIL: "ops@example.test",
    BOOTSTRAP_ADMIN_PASSWORD: "a configured password",
    ...env,
  });
  const login = await fetch(`${own.baseUrl}/api/v1/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: "ops@example.test", password: "a configured password" }),
  });
  const ownToken = ((await login.json()) as { data: { token: string } }).data.token;
  return {
    server: own,
    supervisorUrl: `${own.baseUrl.replace("http", "ws")}/ws/supervisor?token=${ownToken}`,
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

describe("token expiry", () => {
  test(
    "a socket closes (4001) when its token expires",
    async () => {
      const shortLived = await startSignedIn({ AUTH_JWT_TTL_SECONDS: "2" });
      try {
        const socket = new WebSocket(shortLived.supervisorUrl);
        const closed = new Promise<{ code: number; at: number }>((resolve) =>
          socket.addEventListener("close", (event) =>
            resolve({ code: event.code, at: Date.now() }),
          ),
        );
        await new Promise((resolve) => socket.addEventListener("open", resolve));
        const opened = Date.now();
        const { code, at } = await closed;
        expect(code).toBe(4001);
        expect(at - opened).toBeLessThan(4000);
      } finally {
        shortLived.server.process.kill("SIGTERM");
        await shortLived.server.process.exited;
        shortLived.remove();
      }
    },
    SERVER_TEST_TIMEOUT_MS,
  );
});

describe("stopping", () => {
  test(
    "SIGTERM closes open sockets with 1001 and the process exits 0",
    async () => {
      const stopping = await startSignedIn();
      try {
        const socket = new WebSocket(stopping.supervisorUrl);
        const closed = new Promise<number>((resolve) =>
          socket.addEventListener("close", (event) => resolve(event.code)),
        );
        await new Promise((resolve) => socket.addEventListener("open", resolve));
        stopping.server.process.kill("SIGTERM");
        expect(await closed).toBe(1001);
        const exited = await Promise.race([
          stopping.server.process.exited,
          Bun.sleep(10_000).then(() => "still running"),
        ]);
        expect(exited).toBe(0);
      } finally {
        stopping.server.process.kill("SIGKILL");
        stopping.remove();
      }
    },
    SERVER_TEST_TIMEOUT_MS,
  );
});
