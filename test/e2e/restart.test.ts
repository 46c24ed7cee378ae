import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resetDatabase } from "../helpers/database.ts";
import { callServer, SERVER_TEST_TIMEOUT_MS, startServer } from "../helpers/server-process.ts";

const dataDir = mkdtempSync(join(tmpdir(), "dialer-restart-"));
const env = {
  DATA_DIR: dataDir,
  AUTH_JWT_SECRET: "restart-secret-that-is-long-enough-to-use",
  BOOTSTRAP_ADMIN_EMAIL: "ops@example.test",
  BOOTSTRAP_ADMIN_PASSWORD: "a configured password",
};

beforeAll(async () => {
  await resetDatabase();
});
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

const call = callServer;

describe("kill -9 right after a 2xx", () => {
  test(
    "the status and the idempotent reply survive",
    async () => {
      const first = await startServer(env);
      const login = await call(first.baseUrl, "POST", "/api/v1/auth/login", undefined, {
        email: "ops@example.test",
        password: "a configured password",
      });
      const token = login.body.data.token as string;
      const created = await call(first.baseUrl, "POST", "/api/v1/campaigns", token, {
        name: "Durable",
      });
      const id = created.body.data.campaign.id as string;
      const started = await call(
        first.baseUrl,
        "POST",
        `/api/v1/campaigns/${id}/status`,
        token,
        { action: "start" },
        { "idempotency-key": "k-1" },
      );
      expect(started.status).toBe(200);
      first.process.kill("SIGKILL");
      await first.process.exited;

      const second = await startServer(env);
      try {
        expect(second.output()).toMatch(/"campaigns":1/);
        const replay = await call(
          second.baseUrl,
          "POST",
          `/api/v1/campaigns/${id}/status`,
          token,
          { action: "start" },
          { "idempotency-key": "k-1" },
        );
        expect(replay.status).toBe(200);
        expect(replay.headers.get("idempotent-replayed")).toBe("true");
        expect(replay.body).toEqual(started.body);
        const current = await call(second.baseUrl, "GET", `/api/v1/campaigns/${id}`, token);
        expect(current.body.data.campaign.status).toBe("running");
      } finally {
        second.process.kill("SIGTERM");
        await second.process.exited;
      }
    },
    SERVER_TEST_TIMEOUT_MS,
  );
});
