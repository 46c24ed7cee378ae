import { beforeEach, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { rowsOf } from "../../db/rows.ts";
import { createWorkspace, PASSWORD } from "../helpers/app.ts";

let w: Awaited<ReturnType<typeof createWorkspace>>;
beforeEach(async () => {
  w = await createWorkspace();
});

const login = (body: Record<string, unknown>) => w.request("POST", "/api/v1/auth/login", { body });

describe("login", () => {
  test("returns a token, its expiry and the user", async () => {
    const response = await login({
      email: "admin@acme.test",
      password: PASSWORD,
      tenant_domain: "acme.test",
    });
    expect(response.status).toBe(200);
    const { token, expires_at, user } = response.body.data;
    expect(token.split(".")).toHaveLength(3);
    expect(Date.parse(expires_at)).toBe(w.clock.now() + 43_200_000);
    expect(expires_at).toMatch(/Z$/);
    expect(user).toEqual({
      id: w.admin.id,
      tenant_id: w.acme.id,
      email: "admin@acme.test",
      role: "admin",
      status: "active",
      must_change_password: false,
      phone_uri: null,
      created_at: expect.stringMatching(/Z$/),
      updated_at: expect.stringMatching(/Z$/),
    });
    expect(user.password_hash).toBeUndefined();
  });

  test("the token's lifetime follows AUTH_JWT_TTL_SECONDS", async () => {
    const short = await createWorkspace({ env: { AUTH_JWT_TTL_SECONDS: "600" } });
    const response = await short.request("POST", "/api/v1/auth/login", {
      body: { email: "admin@acme.test", password: PASSWORD },
    });
    expect(Date.parse(response.body.data.expires_at)).toBe(short.clock.now() + 600_000);
  });

  test("the e-mail is matched case-insensitively", async () => {
    const response = await login({ email: "ADMIN@Acme.Test", password: PASSWORD });
    expect(response.status).toBe(200);
    expect(response.body.data.user.id).toBe(w.admin.id);
  });

  test("every credential failure is the same 401 invalid credentials", async () => {
    const failures = [
      { email: "admin@acme.test", password: "wrong password!" },
      { email: "nobody@acme.test", password: PASSWORD },
      { email: "admin@acme.test", password: PASSWORD, tenant_domain: "no-such.test" },
      { email: "admin@acme.test", password: PASSWORD, tenant_domain: "platform" },
    ];
    for (const body of failures) {
      const response = await login(body);
      expect(response.status).toBe(401);
      expect(response.body).toMatchObject({
        status: "error",
        code: "unauthenticated",
        message: "invalid credentials",
      });
      expect(response.headers.get("www-authenticate")).toBe("Bearer");
    }
  });

  test("an unknown e-mail costs about as long as a wrong password", async () => {
    const time = async (body: Record<string, unknown>) => {
      const started = performance.now();
      await login(body);
      return performance.now() - started;
    };
    await time({ email: "admin@acme.test", password: "warm up the hasher" });
    const known: number[] = [];
    const unknown: number[] = [];
    for (let i = 0; i < 5; i++) {
      known.push(await time({ email: "admin@acme.test", password: `wrong password ${i}` }));
      unknown.push(await time({ email: `ghost${i}@acme.test`, password: `wrong password ${i}` }));
    }
    const median = (values: number[]) => values.sort((a, b) => a - b)[2] as number;
    // Both pay one argon2id verification; without the decoy the unknown case is ~10x faster.
    expect(median(unknown)).toBeGreaterThan(median(known) * 0.5);
  });

  test("a disabled account with the right password is 403 account_disabled", async () => {
    await w.user(w.acme.id, "gone@acme.test", "agent", { status: "disabled" });
    const right = await login({ email: "gone@acme.test", password: PASSWORD });
    expect(right.status).toBe(403);
    expect(right.body.code).toBe("account_disabled");
    const wrong = await login({ email: "gone@acme.test", password: "not the password" });
    expect(wrong.status).toBe(401);
  });
});

describe("tenant resolution", () => {
  test("tenant_domain names the workspace", async () => {
    const other = await w.tenant("other.test");
    const there = await w.user(other.id, "admin@acme.test", "agent", {
      password: "another password 123",
    });
    const response = await login({
      email: "admin@acme.test",
      password: "another password 123",
      tenant_domain: "other.test",
    });
    expect(response.status).toBe(200);
    expect(response.body.data.user.id).toBe(there.id);
  });

  test("without a domain, the e-mail's only tenant is used", async () => {
    const response = await login({ email: "admin@acme.test", password: PASSWORD });
    expect(response.body.data.user.tenant_id).toBe(w.acme.id);
  });

  test("an e-mail in two tenants is told apart by the password", async () => {
    const other = await w.tenant("other.test");
    const there = await w.user(other.id, "admin@acme.test", "agent", {
      password: "another password 123",
    });
    const first = await login({ email: "admin@acme.test", password: PASSWORD });
    expect(first.body.data.user.id).toBe(w.admin.id);
    const second = await login({ email: "admin@acme.test", password: "another password 123" });
    expect(second.body.data.user.id).toBe(there.id);
    const neither = await login({ email: "admin@acme.test", password: "matches nobody at all" });
    expect(neither.status).toBe(401);
    expect(neither.body.message).toBe("invalid credentials");
  });

  test("an unknown e-mail falls back to the platform default domain", async () => {
    const response = await login({ email: "ghost@nowhere.test", password: PASSWORD });
    expect(response.status).toBe(401);
    const counted = await w.deps.db.execute(
      sql`select tenant_id from login_failures where email = 'ghost@nowhere.test'`,
    );
    const rows = rowsOf<{ tenant_id: string }>(counted);
    expect(rows.map((row) => row.tenant_id)).toEqual([w.platform.id]);
  });
});

describe("audit", () => {
  test("logins, failures and logouts are recorded with the request id", async () => {
    await login({ email: "admin@acme.test", password: "wrong password!" });
    const ok = await login({ email: "admin@acme.test", password: PASSWORD });
    const token = ok.body.data.token;
    const logout = await w.request("POST", "/api/v1/auth/logout", {
      token,
      headers: { "x-request-id": "logout-req-0001" },
    });
    expect(logout.status).toBe(200);
    expect(logout.body).toEqual({ status: "success", data: {} });
    const result = await w.deps.db.execute(
      sql`select action, actor_id, request_id from audit_events where tenant_id = ${w.acme.id} order by created_at, id`,
    );
    const rows = rowsOf<{ action: string; actor_id: string; request_id: string }>(result);
    expect(rows.map((row) => row.action)).toEqual(["login.failed", "login.succeeded", "logout"]);
    expect(rows[2]?.request_id).toBe("logout-req-0001");
    expect(rows.every((row) => row.request_id)).toBe(true);
  });
});
