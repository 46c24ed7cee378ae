import { beforeEach, describe, expect, test } from "bun:test";
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
