import { beforeEach, describe, expect, test } from "bun:test";
import { createWorkspace, TEST_SECRET } from "../helpers/app.ts";
import { forgeToken } from "../helpers/jwt.ts";

let w: Awaited<ReturnType<typeof createWorkspace>>;
beforeEach(async () => {
  w = await createWorkspace();
});

const me = (token: string) => w.request("GET", "/api/v1/auth/me", { token });
const claimsFor = (overrides: Record<string, unknown> = {}) => {
  const now = Math.floor(w.clock.now() / 1000);
  return {
    sub: w.admin.id,
    tid: w.acme.id,
    email: "admin@acme.test",
    role: "admin",
    iat: now,
    exp: now + 3600,
    ...overrides,
  };
};
const expectRejected = async (token: string) => {
  const response = await me(token);
  expect(response.status).toBe(401);
  expect(response.body.code).toBe("unauthenticated");
  expect(response.headers.get("www-authenticate")).toBe("Bearer");
};

describe("bearer tokens", () => {
  test("a correctly signed HS256 token with exp is accepted", async () => {
    const response = await me(forgeToken(claimsFor(), { secret: TEST_SECRET }));
    expect(response.status).toBe(200);
    expect(response.body.data.user.id).toBe(w.admin.id);
    expect(response.body.data.tenant).toMatchObject({ id: w.acme.id, domain: "acme.test" });
  });

  test("alg none is refused", () => expectRejected(forgeToken(claimsFor(), { alg: "none" })));
  test("HS512 with the right secret is refused", () =>
    expectRejected(forgeToken(claimsFor(), { alg: "HS512", secret: TEST_SECRET })));
  test("another secret is refused", () =>
    expectRejected(forgeToken(claimsFor(), { secret: "another-secret-that-is-32-bytes-long!!" })));
  test("a token without exp is refused", () =>
    expectRejected(forgeToken(claimsFor({ exp: undefined }), { secret: TEST_SECRET })));
  test("a tampered payload is refused", async () => {
    const [header, , signature] = forgeToken(claimsFor(), { secret: TEST_SECRET }).split(".");
    const payload = Buffer.from(JSON.stringify(claimsFor({ role: "platform_admin" }))).toString(
      "base64url",
    );
    await expectRejected(`${header}.${payload}.${signature}`);
  });
  test("a token naming a user of another tenant is refused", async () => {
    await expectRejected(forgeToken(claimsFor({ tid: w.platform.id }), { secret: TEST_SECRET }));
  });
  test("a token naming no user is refused", async () => {
    await expectRejected(
      forgeToken(claimsFor({ sub: crypto.randomUUID() }), { secret: TEST_SECRET }),
    );
  });
  test("the scheme's name is read in any case, as HTTP's schemes are", async () => {
    const token = forgeToken(claimsFor(), { secret: TEST_SECRET });
    for (const scheme of ["Bearer", "bearer", "BEARER", "bEaReR"]) {
      const response = await w.request("GET", "/api/v1/auth/me", {
        headers: { authorization: `${scheme} ${token}` },
      });
      expect({ scheme, status: response.status }).toEqual({ scheme, status: 200 });
    }
  });

  test("garbage and non-bearer headers are refused with the header message", async () => {
    for (const authorization of ["Basic abc", "Bearer", "Bearer a b", "token"]) {
      const response = await w.request("GET", "/api/v1/auth/me", { headers: { authorization } });
      expect(response.status).toBe(401);
      expect(response.body.message).toBe("missing or invalid authorization header");
    }
    const missing = await w.request("GET", "/api/v1/auth/me");
    expect(missing.body.message).toBe("missing or invalid authorization header");
    await expectRejected("not.a.jwt");
  });

  test("expiry is enforced with 30 seconds of leeway, even for a cached token", async () => {
    const token = await w.login("admin@acme.test");
    expect((await me(token)).status).toBe(200);
    w.clock.advance(43_200_000 + 29_000);
    expect((await me(token)).status).toBe(200);
    w.clock.advance(2_000);
    await expectRejected(token);
  });

  test("an expired token is refused on first sight", async () => {
    const token = forgeToken(claimsFor({ exp: Math.floor(w.clock.now() / 1000) - 31 }), {
      secret: TEST_SECRET,
    });
    await expectRejected(token);
  });
});

describe("live user state", () => {
  test("a disabled user's token is 403 account_disabled on its next request", async () => {
    const agent = await w.user(w.acme.id, "agent@acme.test", "agent");
    const agentToken = await w.login("agent@acme.test");
    const adminToken = await w.login("admin@acme.test");
    expect((await me(agentToken)).status).toBe(200);
    const patch = await w.request("PATCH", `/api/v1/users/${agent.id}`, {
      token: adminToken,
      body: { status: "disabled" },
    });
    expect(patch.status).toBe(200);
    const after = await me(agentToken);
    expect(after.status).toBe(403);
    expect(after.body.code).toBe("account_disabled");
  });

  test("a role change applies to existing tokens at once", async () => {
    const other = await w.user(w.acme.id, "boss@acme.test", "admin");
    const bossToken = await w.login("boss@acme.test");
    expect((await w.request("GET", "/api/v1/users", { token: bossToken })).status).toBe(200);
    const adminToken = await w.login("admin@acme.test");
    await w.request("PATCH", `/api/v1/users/${other.id}`, {
      token: adminToken,
      body: { role: "agent" },
    });
    expect((await w.request("GET", "/api/v1/users", { token: bossToken })).status).toBe(403);
  });
});
