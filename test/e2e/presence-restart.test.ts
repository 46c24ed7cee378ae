import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resetDatabase } from "../helpers/database.ts";
import { callServer, type ServerProcess, startServer } from "../helpers/server-process.ts";
import { openSocket } from "../helpers/sockets.ts";

const GRACE_SECONDS = 10;
const dataDir = mkdtempSync(join(tmpdir(), "dialer-presence-"));
const env = {
  DATA_DIR: dataDir,
  AUTH_JWT_SECRET: "presence-secret-that-is-long-enough-to-use",
  BOOTSTRAP_ADMIN_EMAIL: "ops@example.test",
  BOOTSTRAP_ADMIN_PASSWORD: "a configured password",
  AGENT_DISCONNECT_GRACE_SECONDS: String(GRACE_SECONDS),
};
const servers: ServerProcess[] = [];

beforeAll(async () => {
  await resetDatabase();
});
afterAll(async () => {
  for (const server of servers) {
    server.process.kill("SIGTERM");
    await server.process.exited;
  }
  rmSync(dataDir, { recursive: true, force: true });
});

const start = async () => {
  const server = await startServer(env);
  servers.push(server);
  return server;
};

async function login(baseUrl: string, email: string, password: string) {
  const response = await callServer(baseUrl, "POST", "/api/v1/auth/login", undefined, {
    email,
    password,
  });
  return response.body.data.token as string;
}

const agentSocket = (baseUrl: string, token: string) =>
  openSocket(`${baseUrl.replace("http", "ws")}/ws/agent?token=${encodeURIComponent(token)}`);

const agentOf = async (baseUrl: string, token: string) =>
  (await callServer(baseUrl, "GET", "/api/v1/agents/me", token)).body.data.agent;

describe("kill -9 with agents signed in", () => {
  test("within the grace every agent keeps its state; one whose socket comes back carries on, the other is signed out after the grace", async () => {
    const first = await start();
    const admin = await login(first.baseUrl, "ops@example.test", "a configured password");
    const campaign = (
      await callServer(first.baseUrl, "POST", "/api/v1/campaigns", admin, { name: "Agents" })
    ).body.data.campaign.id as string;
    await callServer(first.baseUrl, "POST", "/api/v1/users", admin, {
      email: "agent@example.test",
      password: "a first password for the agent",
      role: "agent",
    });
    const pending = await login(
      first.baseUrl,
      "agent@example.test",
      "a first password for the agent",
    );
    await callServer(first.baseUrl, "POST", "/api/v1/auth/me/password", pending, {
      current_password: "a first password for the agent",
      new_password: "the agent's own password",
    });
    const leaving = await login(first.baseUrl, "agent@example.test", "the agent's own password");

    const before = new Map<string, Record<string, unknown>>();
    for (const token of [admin, leaving]) {
      const socket = await agentSocket(first.baseUrl, token);
      await socket.next("agent.state");
      socket.send(JSON.stringify({ type: "ready", campaign_id: campaign }));
      expect(await socket.next("ack")).toMatchObject({ for: "ready" });
      before.set(token, await agentOf(first.baseUrl, token));
    }
    expect(before.get(leaving)).toMatchObject({ state: "ready", campaign_id: campaign });

    first.process.kill("SIGKILL");
    await first.process.exited;
    const killedAt = Date.now();

    const second = await start();
    expect(second.output()).toMatch(/agents restored.*"agents":2/);
    // Both agents are where they were, the one whose socket is not back included.
    expect(await agentOf(second.baseUrl, admin)).toEqual(before.get(admin));
    expect(await agentOf(second.baseUrl, leaving)).toEqual(before.get(leaving));
    expect(Date.now() - killedAt).toBeLessThan(GRACE_SECONDS * 1000);

    const back = await agentSocket(second.baseUrl, admin);
    expect(await back.next("agent.state")).toMatchObject({
      agent: { state: "ready", campaign_id: campaign },
    });
    back.send(JSON.stringify({ type: "pause" }));
    expect(await back.next("ack")).toMatchObject({ for: "pause" });
    back.send(JSON.stringify({ type: "ready", campaign_id: campaign }));
    expect(await back.next("ack")).toMatchObject({ for: "ready" });

    // The deadline is at least the grace after the kill, at most a renewal later, and the
    // sweep runs every 5 s.
    const deadline = killedAt + (GRACE_SECONDS + 5 + 5 + 5) * 1000;
    let state = (await agentOf(second.baseUrl, leaving)).state;
    while (state !== "offline" && Date.now() < deadline) {
      await Bun.sleep(250);
      state = (await agentOf(second.baseUrl, leaving)).state;
    }
    expect(state).toBe("offline");
    expect(Date.now() - killedAt).toBeGreaterThanOrEqual(GRACE_SECONDS * 1000);
    expect(await agentOf(second.baseUrl, admin)).toMatchObject({
      state: "ready",
      campaign_id: campaign,
    });
    back.socket.close();
  }, 120_000);
});
