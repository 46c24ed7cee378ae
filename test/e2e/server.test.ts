import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resetDatabase } from "../helpers/database.ts";
import { until } from "../helpers/edge.ts";
import { alive, commandLine, descendants } from "../helpers/processes.ts";
import {
  SERVER_TEST_TIMEOUT_MS,
  startExpectingFailure,
  startServer,
} from "../helpers/server-process.ts";

// The server is its own process here: on PGlite it gets its own data directory, on
// PostgreSQL it shares the suite's database, emptied first.
const dataDir = mkdtempSync(join(tmpdir(), "dialer-e2e-"));
const env = { DATA_DIR: dataDir, AUTH_JWT_SECRET: "e2e-secret-that-is-long-enough-to-use!!" };

beforeAll(async () => {
  await resetDatabase();
});
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

const login = (baseUrl: string, email: string, password: string) =>
  fetch(`${baseUrl}/api/v1/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email, password }),
  });

describe("the server process", () => {
  test(
    "first start prints the generated admin password once; it logs in; SIGTERM drains and exits 0",
    async () => {
      const first = await startServer(env);
      // A plain block apart from the JSON log lines.
      const match = /^ {4}e-mail: +(\S+)\n {4}password: +(\S+)$/m.exec(first.output());
      expect(match).not.toBeNull();
      const [, email, password] = match as RegExpExecArray;
      const ok = await login(first.baseUrl, email as string, password as string);
      expect(ok.status).toBe(200);
      const body = (await ok.json()) as { data: { token: string } };

      // A request in flight when SIGTERM arrives is still answered. A wrong password takes a
      // verification of tens of milliseconds: the signal comes while it runs, once the request
      // has surely arrived (a request the server never accepted would be refused instead).
      const inFlight = login(first.baseUrl, email as string, "a wrong password");
      await Bun.sleep(20);
      first.process.kill("SIGTERM");
      expect((await inFlight).status).toBe(401);
      expect(await first.process.exited).toBe(0);

      const second = await startServer(env);
      expect(second.output()).not.toContain("password:");
      const me = await fetch(`${second.baseUrl}/api/v1/auth/me`, {
        headers: { authorization: `Bearer ${body.data.token}` },
      });
      expect(me.status).toBe(200);
      second.process.kill("SIGTERM");
      expect(await second.process.exited).toBe(0);
    },
    SERVER_TEST_TIMEOUT_MS,
  );

  test(
    "a bootstrap e-mail and password from the environment are used and not printed",
    async () => {
      await resetDatabase();
      const dir = mkdtempSync(join(tmpdir(), "dialer-e2e-"));
      try {
        const server = await startServer({
          ...env,
          DATA_DIR: dir,
          BOOTSTRAP_ADMIN_EMAIL: "ops@example.test",
          BOOTSTRAP_ADMIN_PASSWORD: "a configured password",
        });
        expect(server.output()).not.toContain("a configured password");
        const response = await login(server.baseUrl, "ops@example.test", "a configured password");
        expect(response.status).toBe(200);
        server.process.kill("SIGTERM");
        expect(await server.process.exited).toBe(0);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    SERVER_TEST_TIMEOUT_MS,
  );

  test(
    "a bad setting stops the start with one line naming it",
    async () => {
      for (const [name, value] of [
        ["AUTH_JWT_SECRET", "too-short"],
        ["PORT", "not-a-port"],
        ["AUTH_JWT_TTL_SECONDS", "-5"],
        ["DATABASE_URL", "mysql://nope"],
      ] as const) {
        const result = await startExpectingFailure({ ...env, [name]: value });
        expect(result.code).toBe(2);
        const lines = result.stderr.trim().split("\n");
        expect(lines).toHaveLength(1);
        expect(lines[0]).toContain(name);
        if (name === "AUTH_JWT_SECRET") expect(lines[0]).not.toContain(value);
      }
    },
    SERVER_TEST_TIMEOUT_MS,
  );

  test(
    // Last: a start that is not the first (the first start's own test comes before).
    "npm start: SIGTERM to npm reaches the server, which drains and is gone",
    async () => {
      const npm = await startServer(env, 60_000, ["npm", "start", "--silent"]);
      const server = descendants(npm.process.pid).find((pid) =>
        commandLine(pid).includes("src/index.ts"),
      );
      expect(server).toBeNumber();
      npm.process.kill("SIGTERM");
      expect(await npm.process.exited).toBe(0);
      await until(() => !alive(server as number) || undefined, "the server to be gone", 5_000);
    },
    SERVER_TEST_TIMEOUT_MS,
  );
});
