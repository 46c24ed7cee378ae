import { afterAll, describe, expect, test } from "bun:test";
import postgres from "postgres";
import {
  callServer,
  SERVER_TEST_TIMEOUT_MS,
  type ServerProcess,
  startServer,
} from "../helpers/server-process.ts";

/**
 * Several processes started together on one new PostgreSQL database: one applies the
 * migrations while the others wait for it, and all of them serve.
 */
const url = process.env.DATABASE_URL;
const database = `dialer_start_${process.pid}_${Date.now()}`;
const servers: ServerProcess[] = [];

const urlOf = (name: string) => {
  const parsed = new URL(url as string);
  parsed.pathname = `/${name}`;
  return parsed.toString();
};

afterAll(async () => {
  for (const server of servers) {
    server.process.kill("SIGKILL");
    await server.process.exited;
  }
  if (!url) return;
  const admin = postgres(url, { max: 1, onnotice: () => {} });
  await admin.unsafe(`drop database if exists ${database} with (force)`);
  await admin.end({ timeout: 5 });
});

describe.skipIf(!url)("processes starting together on one database", () => {
  test(
    "three migrate and bootstrap a new database without a race, and each serves",
    async () => {
      const admin = postgres(url as string, { max: 1, onnotice: () => {} });
      await admin.unsafe(`create database ${database}`);
      await admin.end({ timeout: 5 });
      const env = {
        DATABASE_URL: urlOf(database),
        BOOTSTRAP_ADMIN_EMAIL: "ops@example.test",
        BOOTSTRAP_ADMIN_PASSWORD: "a configured password",
      };
      const started = await Promise.allSettled([
        startServer(env),
        startServer(env),
        startServer(env),
      ]);
      for (const result of started) if (result.status === "fulfilled") servers.push(result.value);
      expect(started.map((result) => result.status)).toEqual([
        "fulfilled",
        "fulfilled",
        "fulfilled",
      ]);
      // One signing secret for all: a token from one process is good on the others.
      const login = await callServer(
        servers[0]?.baseUrl as string,
        "POST",
        "/api/v1/auth/login",
        undefined,
        {
          email: "ops@example.test",
          password: "a configured password",
        },
      );
      for (const server of servers) {
        expect((await callServer(server.baseUrl, "GET", "/readyz")).status).toBe(200);
        const me = await callServer(
          server.baseUrl,
          "GET",
          "/api/v1/auth/me",
          login.body.data.token,
        );
        expect(me.status).toBe(200);
      }
    },
    SERVER_TEST_TIMEOUT_MS,
  );
});
