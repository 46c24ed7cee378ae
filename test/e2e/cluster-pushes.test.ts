import { afterAll, describe, expect, test } from "bun:test";
import postgres from "postgres";
import {
  callServer,
  SERVER_TEST_TIMEOUT_MS,
  type ServerProcess,
  startServer,
} from "../helpers/server-process.ts";
import { openSocket } from "../helpers/sockets.ts";

/**
 * Two server processes on one new PostgreSQL database: a supervisor's socket on one hears of
 * a change made through the other.
 */
const url = process.env.DATABASE_URL;
const database = `dialer_pushes_${process.pid}_${Date.now()}`;
const servers: ServerProcess[] = [];

const urlOf = (name: string) => {
  const parsed = new URL(url as string);
  parsed.pathname = `/${name}`;
  return parsed.toString();
};

afterAll(async () => {
  for (const server of servers) {
    server.process.kill("SIGTERM");
    await server.process.exited;
  }
  if (!url) return;
  const admin = postgres(url, { max: 1, onnotice: () => {} });
  await admin.unsafe(`drop database if exists ${database} with (force)`);
  await admin.end({ timeout: 5 });
});

describe.skipIf(!url)("pushes across server processes", () => {
  test(
    "a status change made through one process reaches a supervisor connected to the other",
    async () => {
      const admin = postgres(url as string, { max: 1, onnotice: () => {} });
      await admin.unsafe(`create database ${database}`);
      await admin.end({ timeout: 5 });
      const env = {
        DATABASE_URL: urlOf(database),
        BOOTSTRAP_ADMIN_EMAIL: "ops@example.test",
        BOOTSTRAP_ADMIN_PASSWORD: "a configured password",
      };
      servers.push(await startServer(env));
      servers.push(await startServer(env));
      const [first, second] = servers.map((server) => server.baseUrl) as [string, string];
      const login = await callServer(first, "POST", "/api/v1/auth/login", undefined, {
        email: "ops@example.test",
        password: "a configured password",
      });
      const token = login.body.data.token as string;
      const created = await callServer(first, "POST", "/api/v1/campaigns", token, {
        name: "Across",
      });
      const campaignId = created.body.data.campaign.id as string;
      // The processes learn of each other within a round trip of the second's start.
      await Bun.sleep(200);

      const supervisor = await openSocket(
        `${second.replace("http", "ws")}/ws/supervisor?token=${encodeURIComponent(token)}`,
      );
      await supervisor.next("snapshot");
      const changed = await callServer(
        first,
        "POST",
        `/api/v1/campaigns/${campaignId}/status`,
        token,
        { action: "start" },
      );
      expect(changed.status).toBe(200);
      expect(await supervisor.next("campaign.status", 1_000)).toMatchObject({
        campaign_id: campaignId,
        status: "running",
      });
      expect(await supervisor.next("campaign.stats", 1_000)).toMatchObject({
        campaign_id: campaignId,
      });
      supervisor.socket.close();
    },
    SERVER_TEST_TIMEOUT_MS,
  );
});
