import { beforeEach, describe, expect, test } from "bun:test";
import { and, eq } from "drizzle-orm";
import { loginFailures } from "../../db/schema/index.ts";
import { createApp, createServiceDeps } from "../../src/app.ts";
import { loadConfig } from "../../src/config.ts";
import { silentLogger } from "../../src/logger.ts";
import { LOCK_AFTER_FAILURES } from "../../src/modules/auth/lockout.ts";
import { createWorkspace, PASSWORD, TEST_SECRET } from "../helpers/app.ts";
import { testDatabase } from "../helpers/database.ts";

/**
 * Two processes' worth of services on one PostgreSQL database, each with its own per-account
 * gate: wrong passwords sent to both at once lock the account after exactly the configured
 * number of failures, because the count and the lock are decided in the database.
 */
const enabled = Boolean(process.env.DATABASE_URL);
const env = { LOGIN_RATE_LIMIT_PER_MINUTE: "10000" };

type App = ReturnType<typeof createApp>;
let w: Awaited<ReturnType<typeof createWorkspace>>;
let other: App;

/** A fresh workspace behind one app, and a second app (another process) on the same database. */
async function twoProcesses() {
  w = await createWorkspace({ env });
  other = createApp(
    createServiceDeps({
      database: await testDatabase(),
      config: loadConfig({ AUTH_JWT_SECRET: TEST_SECRET, ...env }),
      clock: w.clock,
      logger: silentLogger,
      jwtSecret: TEST_SECRET,
    }),
  );
}

beforeEach(async () => {
  if (enabled) await twoProcesses();
});

const login = async (app: App, password: string) => {
  const response = await app.handle(
    new Request("http://localhost/api/v1/auth/login", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "admin@acme.test", password }),
    }),
  );
  return { status: response.status, body: (await response.json()) as { code?: string } };
};

const failuresRow = async () =>
  (
    await w.deps.db
      .select()
      .from(loginFailures)
      .where(and(eq(loginFailures.tenantId, w.acme.id), eq(loginFailures.email, "admin@acme.test")))
  )[0];

describe.skipIf(!enabled)("login lockout across processes", () => {
  test("wrong passwords sent to two processes at once lock after exactly the limit", async () => {
    // The race is between attempts that finish their password checks together: a few rounds.
    for (let round = 0; round < 5; round++) {
      if (round > 0) await twoProcesses();
      const attempts = 3 * LOCK_AFTER_FAILURES;
      const answers = await Promise.all(
        Array.from({ length: attempts }, (_, i) =>
          login(i % 2 === 0 ? w.app : other, "wrong password!"),
        ),
      );
      const counted = answers.filter((answer) => answer.status === 401).length;
      const locked = answers.filter((answer) => answer.body.code === "account_locked").length;
      expect({ round, counted, locked }).toEqual({
        round,
        counted: LOCK_AFTER_FAILURES,
        locked: attempts - LOCK_AFTER_FAILURES,
      });
      const row = await failuresRow();
      expect(row?.failedCount).toBe(LOCK_AFTER_FAILURES);
      expect(row?.lockedUntil).not.toBeNull();
      // Locked in both: the right password is refused by either process.
      expect((await login(w.app, PASSWORD)).body.code).toBe("account_locked");
      expect((await login(other, PASSWORD)).body.code).toBe("account_locked");
    }
  });

  test("the last failures before the lock, one in each process at once, leave it locked", async () => {
    for (let round = 0; round < 5; round++) {
      if (round > 0) await twoProcesses();
      for (let i = 0; i < LOCK_AFTER_FAILURES - 1; i++)
        expect((await login(w.app, "wrong password!")).status).toBe(401);
      const answers = await Promise.all([
        login(w.app, "wrong password!"),
        login(other, "wrong password!"),
      ]);
      expect(answers.map((answer) => answer.status).sort()).toEqual([401, 403]);
      const row = await failuresRow();
      expect(row?.failedCount).toBe(LOCK_AFTER_FAILURES);
      expect(row?.lockedUntil).not.toBeNull();
    }
  });
});
