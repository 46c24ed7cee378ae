import { beforeEach, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { rowsOf } from "../../db/rows.ts";
import {
  countFailure,
  LOCK_AFTER_FAILURES,
  LOCK_MILLISECONDS,
  lockStateOf,
  resetFailures,
} from "../../src/modules/auth/lockout.ts";
import { createWorkspace, PASSWORD } from "../helpers/app.ts";

let w: Awaited<ReturnType<typeof createWorkspace>>;
beforeEach(async () => {
  w = await createWorkspace();
});

const attempt = (password: string, email = "admin@acme.test") =>
  w.request("POST", "/api/v1/auth/login", { body: { email, password } });
const fail = async (times: number, email?: string) => {
  for (let i = 0; i < times; i++)
    expect((await attempt("wrong password!", email)).status).toBe(401);
};
const MINUTE = 60_000;

describe("login lockout", () => {
  test("nine failures then a success resets the count", async () => {
    await fail(9);
    expect((await attempt(PASSWORD)).status).toBe(200);
    await fail(9);
    expect((await attempt(PASSWORD)).status).toBe(200);
  });

  test("the tenth consecutive failure locks for fifteen minutes, even the right password", async () => {
    await fail(10);
    const locked = await attempt(PASSWORD);
    expect(locked.status).toBe(403);
    expect(locked.body).toMatchObject({
      code: "account_locked",
      message: "account temporarily locked",
    });
    expect(Number(locked.headers.get("retry-after"))).toBe(15 * 60);
    w.clock.advance(15 * MINUTE - 1000);
    expect((await attempt(PASSWORD)).status).toBe(403);
    w.clock.advance(1000);
    expect((await attempt(PASSWORD)).status).toBe(200);
  });

  test("after a lock ends the count starts again from zero", async () => {
    await fail(10);
    w.clock.advance(15 * MINUTE);
    await fail(9);
    expect((await attempt(PASSWORD)).status).toBe(200);
  });

  test("a restart keeps the lock", async () => {
    await fail(10);
    w.restart();
    expect((await attempt(PASSWORD)).status).toBe(403);
  });

  test("unknown e-mails lock the same way, revealing nothing", async () => {
    await fail(10, "ghost@acme.test");
    const locked = await attempt("anything at all", "ghost@acme.test");
    expect(locked.status).toBe(403);
    expect(locked.body.code).toBe("account_locked");
  });

  test("the lock is per account: another user of the tenant is unaffected", async () => {
    await w.user(w.acme.id, "agent@acme.test", "agent");
    await fail(10);
    expect((await attempt(PASSWORD, "agent@acme.test")).status).toBe(200);
  });

  test("twenty concurrent wrong attempts lock after exactly ten", async () => {
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => attempt("wrong password!")),
    );
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 401)).toHaveLength(10);
    expect(statuses.filter((status) => status === 403)).toHaveLength(10);
  });

  test("a failure racing the one that locked, as another process's would, leaves the lock", async () => {
    const account = { tenantId: w.acme.id, email: "admin@acme.test" };
    const now = w.clock.now();
    // Both checked the lock before either counted: the count is where the lock is decided.
    for (let i = 0; i < LOCK_AFTER_FAILURES; i++)
      expect(await countFailure(w.deps.db, account, now)).toBeDefined();
    expect(await countFailure(w.deps.db, account, now)).toBeUndefined();
    expect(await lockStateOf(w.deps.db, account, now)).toEqual({
      counted: true,
      lockedUntil: now + LOCK_MILLISECONDS,
    });
    // A success that read the account before the lock clears nothing.
    expect(await resetFailures(w.deps.db, account, now)).toBe(false);
    expect((await attempt(PASSWORD)).body.code).toBe("account_locked");
  });

  test("a wrong current password on password change counts toward the lock", async () => {
    const token = await w.login("admin@acme.test");
    for (let i = 0; i < 5; i++) {
      const response = await w.request("POST", "/api/v1/auth/me/password", {
        token,
        body: { current_password: "not my password", new_password: "a brand new password" },
      });
      expect(response.status).toBe(401);
      expect(response.body.message).toBe("invalid credentials");
    }
    await fail(5);
    expect((await attempt(PASSWORD)).status).toBe(403);
  });
});

describe("a lock reveals nothing, with the e-mail in two workspaces", () => {
  const OTHER_PASSWORD = "another password 123";
  let other: Awaited<ReturnType<typeof w.user>>;
  beforeEach(async () => {
    const tenant = await w.tenant("other.test");
    other = await w.user(tenant.id, "admin@acme.test", "agent", { password: OTHER_PASSWORD });
  });
  const login = (password: string, tenantDomain?: string) =>
    w.request("POST", "/api/v1/auth/login", {
      body: {
        email: "admin@acme.test",
        password,
        ...(tenantDomain ? { tenant_domain: tenantDomain } : {}),
      },
    });
  const lockAcme = async () => {
    for (let i = 0; i < 10; i++)
      expect((await login("wrong password!", "acme.test")).status).toBe(401);
  };
  const answerOf = (response: Awaited<ReturnType<typeof login>>) => ({
    status: response.status,
    code: response.body.code,
    message: response.body.message,
    retryAfter: response.headers.get("retry-after"),
  });
  const failuresOf = async (tenantId: string) => {
    const result = await w.deps.db.execute(
      sql`select failed_count from login_failures where tenant_id = ${tenantId}`,
    );
    return rowsOf<{ failed_count: number }>(result)[0]?.failed_count ?? 0;
  };

  test("the right and a wrong password of the locked account get the same answer", async () => {
    await lockAcme();
    const locked = {
      status: 403,
      code: "account_locked",
      message: "account temporarily locked",
      retryAfter: String(15 * 60),
    };
    expect(answerOf(await login(PASSWORD))).toEqual(locked);
    expect(answerOf(await login("wrong password!"))).toEqual(locked);
    expect(answerOf(await login(PASSWORD, "acme.test"))).toEqual(locked);
    expect(answerOf(await login("wrong password!", "acme.test"))).toEqual(locked);
  });

  test("the other workspace's account still signs in without a domain", async () => {
    await lockAcme();
    const response = await login(OTHER_PASSWORD);
    expect(response.status).toBe(200);
    expect(response.body.data.user.id).toBe(other.id);
  });

  test("guesses while one account is locked still count against the other", async () => {
    await lockAcme();
    for (let i = 0; i < 9; i++) await login(`guess ${i} is wrong`);
    expect(await failuresOf(other.tenantId)).toBe(9);
    expect((await login("the tenth guess")).status).toBe(403);
    expect((await login(OTHER_PASSWORD, "other.test")).body.code).toBe("account_locked");
  });

  test("a password matching both accounts names no account and counts against both", async () => {
    const tenant = await w.tenant("third.test");
    await w.user(tenant.id, "admin@acme.test", "agent");
    const response = await login(PASSWORD);
    expect(response.status).toBe(401);
    expect(await failuresOf(w.acme.id)).toBe(1);
    expect(await failuresOf(tenant.id)).toBe(1);
    expect(await failuresOf(other.tenantId)).toBe(1);
  });
});
