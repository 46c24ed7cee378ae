import { beforeEach, describe, expect, test } from "bun:test";
import { createWorkspace } from "../helpers/app.ts";

let w: Awaited<ReturnType<typeof createWorkspace>>;
let adminToken: string;
beforeEach(async () => {
  w = await createWorkspace();
  adminToken = await w.login("admin@acme.test");
});

const createKey = async (body: Record<string, unknown>) =>
  w.request("POST", "/api/v1/api-keys", { token: adminToken, body });
const newKey = async (scopes: Record<string, string>, extra: Record<string, unknown> = {}) => {
  const response = await createKey({ name: "integration", scopes, ...extra });
  expect(response.status).toBe(201);
  return response.body.data as { key: string; api_key: { id: string } };
};

describe("API keys", () => {
  test("the full key is shown once; only a prefix is listed", async () => {
    const response = await createKey({ name: "CRM sync", scopes: { campaigns: "read" } });
    expect(response.status).toBe(201);
    const { key, api_key } = response.body.data;
    expect(key).toMatch(/^svc_key_[A-Za-z0-9_-]{43}$/);
    expect(api_key).toEqual({
      id: expect.any(String),
      name: "CRM sync",
      prefix: key.slice(0, 14),
      scopes: { campaigns: "read", leads: "none", cdrs: "none", users: "none" },
      rate_limit_per_minute: null,
      created_at: expect.stringMatching(/Z$/),
      last_used_at: null,
      revoked_at: null,
    });
    const list = await w.request("GET", "/api/v1/api-keys", { token: adminToken });
    expect(JSON.stringify(list.body)).not.toContain(key);
    expect(list.body.data.items[0].prefix).toBe(key.slice(0, 14));
  });

  test("scopes and limits are validated", async () => {
    for (const body of [
      { name: "x", scopes: { campaigns: "admin" } },
      { name: "x", scopes: { payroll: "read" } },
      { name: "", scopes: {} },
      { name: "x", scopes: {}, rate_limit_per_minute: 0 },
      { name: "x" },
    ]) {
      expect((await createKey(body)).status).toBe(400);
    }
  });

  test("a key reaches what its scopes grant and nothing else", async () => {
    const { key } = await newKey({ campaigns: "read" });
    expect((await w.request("GET", "/api/v1/campaigns", { token: key })).status).toBe(200);
    const write = await w.request("POST", "/api/v1/campaigns", {
      token: key,
      body: { name: "no" },
    });
    expect(write.status).toBe(403);
    expect(write.body.code).toBe("forbidden");
    expect((await w.request("GET", "/api/v1/users", { token: key })).status).toBe(403);
    const writer = await newKey({ campaigns: "write" });
    expect(
      (await w.request("POST", "/api/v1/campaigns", { token: writer.key, body: { name: "yes" } }))
        .status,
    ).toBe(201);
    expect((await w.request("GET", "/api/v1/campaigns", { token: writer.key })).status).toBe(200);
  });

  test("a key never manages keys, passwords or edge nodes", async () => {
    const { key } = await newKey({
      campaigns: "write",
      leads: "write",
      cdrs: "write",
      users: "write",
    });
    expect((await createKey({ name: "x", scopes: {} })).status).toBe(201);
    for (const [method, path, body] of [
      ["POST", "/api/v1/api-keys", { name: "x", scopes: {} }],
      ["GET", "/api/v1/api-keys", undefined],
      [
        "POST",
        "/api/v1/auth/me/password",
        { current_password: "x", new_password: "long enough pass" },
      ],
      ["POST", "/api/v1/edge-nodes", { name: "n", max_concurrent_calls: 5 }],
      ["GET", "/api/v1/edge-nodes", undefined],
    ] as const) {
      const response = await w.request(method, path, { token: key, body });
      expect([path, response.status]).toEqual([path, 403]);
    }
  });

  test("/auth/me with a key names the key and its tenant", async () => {
    const { key, api_key } = await newKey({ leads: "read" });
    const response = await w.request("GET", "/api/v1/auth/me", { token: key });
    expect(response.status).toBe(200);
    expect(response.body.data.api_key.id).toBe(api_key.id);
    expect(response.body.data.tenant.id).toBe(w.acme.id);
    expect(response.body.data.user).toBeUndefined();
    expect(response.body.data.api_key.last_used_at).toMatch(/Z$/);
  });

  test("malformed, unknown and revoked keys all get one identical 401", async () => {
    const { key, api_key } = await newKey({ campaigns: "read" });
    const revoke = await w.request("DELETE", `/api/v1/api-keys/${api_key.id}`, {
      token: adminToken,
    });
    expect(revoke.status).toBe(200);
    expect(revoke.body.data.api_key.revoked_at).toMatch(/Z$/);
    const bodies = [];
    for (const token of [
      key,
      "svc_key_short",
      `svc_key_${"A".repeat(43)}`,
      `${key.slice(0, -1)}B`,
    ]) {
      const response = await w.request("GET", "/api/v1/campaigns", { token });
      expect(response.status).toBe(401);
      expect(response.headers.get("www-authenticate")).toBe("Bearer");
      const { request_id: _id, ...rest } = response.body;
      bodies.push(JSON.stringify(rest));
    }
    expect(new Set(bodies).size).toBe(1);
    expect(
      (await w.request("DELETE", `/api/v1/api-keys/${api_key.id}`, { token: adminToken })).status,
    ).toBe(200);
  });

  test("keys of another tenant are invisible", async () => {
    const { api_key } = await newKey({ campaigns: "read" });
    const other = await w.tenant("other.test");
    await w.user(other.id, "boss@other.test", "admin");
    const otherToken = await w.login("boss@other.test");
    expect(
      (await w.request("DELETE", `/api/v1/api-keys/${api_key.id}`, { token: otherToken })).status,
    ).toBe(404);
    expect((await w.request("GET", "/api/v1/api-keys", { token: otherToken })).body.total).toBe(0);
    const keyOfAcme = (await newKey({ campaigns: "read" })).key;
    const foreign = await w.request("GET", `/api/v1/campaigns?tenant_id=${other.id}`, {
      token: keyOfAcme,
    });
    expect(foreign.status).toBe(403);
  });

  test("last_used_at is written in batches", async () => {
    const { key, api_key } = await newKey({ campaigns: "read" });
    await w.request("GET", "/api/v1/campaigns", { token: key });
    await w.deps.credentials.flush();
    const list = await w.request("GET", "/api/v1/api-keys", { token: adminToken });
    const listed = list.body.data.items.find((item: { id: string }) => item.id === api_key.id);
    expect(listed.last_used_at).toBe(new Date(w.clock.now()).toISOString());
  });
});

test("a revocation's answer shows a use not yet written", async () => {
  const { key, api_key } = await newKey({ campaigns: "read" });
  await w.request("GET", "/api/v1/campaigns", { token: key });
  const revoked = await w.request("DELETE", `/api/v1/api-keys/${api_key.id}`, {
    token: adminToken,
  });
  expect(revoked.body.data.api_key.last_used_at).toBe(new Date(w.clock.now()).toISOString());
});

describe("rate limits", () => {
  test("N requests in a minute are allowed, the next is 429, and the window rolls", async () => {
    const { key } = await newKey({ campaigns: "read" }, { rate_limit_per_minute: 3 });
    for (let i = 0; i < 3; i++) {
      const response = await w.request("GET", "/api/v1/campaigns", { token: key });
      expect(response.status).toBe(200);
      expect(response.headers.get("ratelimit-policy")).toBe('"per-key";q=3;w=60');
      expect(response.headers.get("ratelimit")).toContain(`r=${2 - i}`);
      w.clock.advance(10_000);
    }
    const refused = await w.request("GET", "/api/v1/campaigns", { token: key });
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe("rate_limited");
    expect(Number(refused.headers.get("retry-after"))).toBe(30);
    expect(refused.headers.get("ratelimit")).toContain("r=0");
    w.clock.advance(30_000);
    expect((await w.request("GET", "/api/v1/campaigns", { token: key })).status).toBe(200);
  });

  test("keys are counted independently; the tenant default applies to keys without their own", async () => {
    const patch = await w.request("PATCH", `/api/v1/tenants/${w.acme.id}`, {
      token: adminToken,
      body: { rate_limit_per_minute: 2 },
    });
    expect(patch.status).toBe(200);
    expect(patch.body.data.tenant.rate_limit_per_minute).toBe(2);
    const first = await newKey({ campaigns: "read" });
    const second = await newKey({ campaigns: "read" });
    for (const key of [first.key, first.key, second.key, second.key]) {
      expect((await w.request("GET", "/api/v1/campaigns", { token: key })).status).toBe(200);
    }
    expect((await w.request("GET", "/api/v1/campaigns", { token: first.key })).status).toBe(429);
  });

  test("failed authentications never count against a real key", async () => {
    const { key } = await newKey({ campaigns: "read" }, { rate_limit_per_minute: 1 });
    for (let i = 0; i < 5; i++) {
      expect(
        (await w.request("GET", "/api/v1/campaigns", { token: `${key.slice(0, -2)}zz` })).status,
      ).toBe(401);
    }
    expect((await w.request("GET", "/api/v1/campaigns", { token: key })).status).toBe(200);
  });

  test("a refused scope still counts and still carries the headers", async () => {
    const { key } = await newKey({ campaigns: "read" }, { rate_limit_per_minute: 5 });
    const refused = await w.request("GET", "/api/v1/users", { token: key });
    expect(refused.status).toBe(403);
    expect(refused.headers.get("ratelimit")).toContain("r=4");
  });
});
