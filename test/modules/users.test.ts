import { beforeEach, describe, expect, test } from "bun:test";
import { createWorkspace, PASSWORD } from "../helpers/app.ts";

let w: Awaited<ReturnType<typeof createWorkspace>>;
let adminToken: string;
let rootToken: string;
beforeEach(async () => {
  w = await createWorkspace();
  adminToken = await w.login("admin@acme.test");
  rootToken = await w.login("root@platform.test");
});

const createUser = (token: string, body: Record<string, unknown>, query = "") =>
  w.request("POST", `/api/v1/users${query}`, { token, body });

describe("users", () => {
  test("an admin creates a user who must change the password", async () => {
    const response = await createUser(adminToken, {
      email: "New@Acme.test",
      password: "twelve chars!",
      role: "agent",
    });
    expect(response.status).toBe(201);
    expect(response.body.data.user).toMatchObject({
      tenant_id: w.acme.id,
      email: "New@Acme.test",
      role: "agent",
      status: "active",
      must_change_password: true,
    });
  });

  test("e-mails are unique per tenant, case-insensitively", async () => {
    const response = await createUser(adminToken, {
      email: "ADMIN@acme.test",
      password: "twelve chars!",
      role: "agent",
    });
    expect(response.status).toBe(409);
    expect(response.body.code).toBe("conflict");
    const elsewhere = await createUser(
      rootToken,
      { email: "admin@acme.test", password: "twelve chars!", role: "admin" },
      `?tenant_id=${w.platform.id}`,
    );
    expect(elsewhere.status).toBe(201);
  });

  test("the body is validated field by field", async () => {
    const response = await createUser(adminToken, {
      email: "not-an-email",
      password: "short",
      role: "owner",
    });
    expect(response.status).toBe(400);
    const fields = response.body.field_errors.map((e: { field: string }) => e.field).sort();
    expect(fields).toEqual(["email", "password", "role"]);
  });

  test("a password's 12–256 characters are code points: six emoji are six, 256 emoji are 256", async () => {
    const lengths = [];
    for (const [password, email] of [
      ["😀".repeat(6), "six@acme.test"],
      ["😀".repeat(11), "eleven@acme.test"],
      ["a".repeat(11), "short@acme.test"],
      ["a".repeat(257), "long@acme.test"],
      ["😀".repeat(257), "long-emoji@acme.test"],
      ["😀".repeat(12), "twelve@acme.test"],
      ["😀".repeat(256), "most@acme.test"],
      ["a".repeat(256), "most-ascii@acme.test"],
    ] as const) {
      const response = await createUser(adminToken, { email, password, role: "agent" });
      lengths.push([email, response.status, response.body.field_errors?.[0]?.message]);
    }
    expect(lengths).toEqual([
      ["six@acme.test", 400, "must be 12 to 256 characters"],
      ["eleven@acme.test", 400, "must be 12 to 256 characters"],
      ["short@acme.test", 400, "must be at least 12 characters"],
      ["long@acme.test", 400, "must be 12 to 256 characters"],
      ["long-emoji@acme.test", 400, "must be 12 to 256 characters"],
      ["twelve@acme.test", 201, undefined],
      ["most@acme.test", 201, undefined],
      ["most-ascii@acme.test", 201, undefined],
    ]);
    const token = await w.login("twelve@acme.test", "😀".repeat(12));
    const changed = await w.request("POST", "/api/v1/auth/me/password", {
      token,
      body: { current_password: "😀".repeat(12), new_password: "😀".repeat(6) },
    });
    expect([changed.status, changed.body.field_errors]).toEqual([
      400,
      [{ field: "new_password", message: "must be 12 to 256 characters" }],
    ]);
  });

  test("a new user can only reach the password endpoints until the password is changed", async () => {
    await createUser(adminToken, {
      email: "fresh@acme.test",
      password: "first password",
      role: "admin",
    });
    const token = await w.login("fresh@acme.test", "first password");
    const blocked = await w.request("GET", "/api/v1/users", { token });
    expect(blocked.status).toBe(403);
    expect(blocked.body.code).toBe("password_change_required");
    expect((await w.request("GET", "/api/v1/auth/me", { token })).status).toBe(200);

    const tooShort = await w.request("POST", "/api/v1/auth/me/password", {
      token,
      body: { current_password: "first password", new_password: "short" },
    });
    expect(tooShort.status).toBe(400);
    const changed = await w.request("POST", "/api/v1/auth/me/password", {
      token,
      body: { current_password: "first password", new_password: "a much better password" },
    });
    expect(changed.status).toBe(200);
    expect(changed.body.data.user.must_change_password).toBe(false);
    expect((await w.request("GET", "/api/v1/users", { token })).status).toBe(200);
    expect(
      (
        await w.request("POST", "/api/v1/auth/login", {
          body: { email: "fresh@acme.test", password: "first password" },
        })
      ).status,
    ).toBe(401);
    await w.login("fresh@acme.test", "a much better password");
  });

  test("roles below admin cannot manage users", async () => {
    await w.user(w.acme.id, "sup@acme.test", "supervisor");
    await w.user(w.acme.id, "agent@acme.test", "agent");
    for (const email of ["sup@acme.test", "agent@acme.test"]) {
      const token = await w.login(email);
      expect((await w.request("GET", "/api/v1/users", { token })).status).toBe(403);
      const create = await createUser(token, {
        email: "x@acme.test",
        password: PASSWORD,
        role: "agent",
      });
      expect(create.status).toBe(403);
      expect(create.body.code).toBe("forbidden");
    }
  });

  test("an admin cannot grant platform_admin", async () => {
    const response = await createUser(adminToken, {
      email: "x@acme.test",
      password: PASSWORD,
      role: "platform_admin",
    });
    expect(response.status).toBe(403);
  });

  test("get and patch one user; ids of other tenants are 404", async () => {
    const created = await createUser(adminToken, {
      email: "a1@acme.test",
      password: PASSWORD,
      role: "agent",
    });
    const id = created.body.data.user.id;
    const one = await w.request("GET", `/api/v1/users/${id}`, { token: adminToken });
    expect(one.body.data.user.email).toBe("a1@acme.test");
    const patched = await w.request("PATCH", `/api/v1/users/${id}`, {
      token: adminToken,
      body: { role: "supervisor" },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.data.user.role).toBe("supervisor");

    const other = await w.tenant("other.test");
    await w.user(other.id, "boss@other.test", "admin");
    const otherToken = await w.login("boss@other.test");
    expect((await w.request("GET", `/api/v1/users/${id}`, { token: otherToken })).status).toBe(404);
    expect(
      (
        await w.request("PATCH", `/api/v1/users/${id}`, {
          token: otherToken,
          body: { status: "disabled" },
        })
      ).status,
    ).toBe(404);
    expect((await w.request("GET", "/api/v1/users/not-a-uuid", { token: adminToken })).status).toBe(
      404,
    );
  });

  test("an agent's phone is a SIP URI, set on create or by a patch, and removed with null", async () => {
    const created = await createUser(adminToken, {
      email: "phone@acme.test",
      password: PASSWORD,
      role: "agent",
      phone_uri: "sip:1001@pbx.acme.test",
    });
    expect(created.status).toBe(201);
    const id = created.body.data.user.id;
    expect(created.body.data.user.phone_uri).toBe("sip:1001@pbx.acme.test");
    const plain = await createUser(adminToken, {
      email: "nophone@acme.test",
      password: PASSWORD,
      role: "agent",
    });
    expect(plain.body.data.user.phone_uri).toBeNull();
    const patch = (phone_uri: unknown) =>
      w.request("PATCH", `/api/v1/users/${id}`, { token: adminToken, body: { phone_uri } });
    const changed = await patch("sips:agent7@10.0.0.5:5061;transport=tls");
    expect(changed.status).toBe(200);
    expect(changed.body.data.user).toMatchObject({
      phone_uri: "sips:agent7@10.0.0.5:5061;transport=tls",
      role: "agent",
    });
    for (const bad of ["tel:+14155550100", "1001@pbx", "sip:", "sip:a b@c", 5]) {
      const refused = await patch(bad);
      expect(refused.status).toBe(400);
      expect(refused.body.field_errors[0].field).toBe("phone_uri");
    }
    expect((await patch(null)).body.data.user.phone_uri).toBeNull();
    const one = await w.request("GET", `/api/v1/users/${id}`, { token: adminToken });
    expect(one.body.data.user.phone_uri).toBeNull();
  });

  test("a patch rejects unknown fields and bad values", async () => {
    const created = await createUser(adminToken, {
      email: "a2@acme.test",
      password: PASSWORD,
      role: "agent",
    });
    const id = created.body.data.user.id;
    const unknown = await w.request("PATCH", `/api/v1/users/${id}`, {
      token: adminToken,
      body: { email: "x@y.z" },
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.field_errors).toEqual([{ field: "email", message: "unknown field" }]);
    const bad = await w.request("PATCH", `/api/v1/users/${id}`, {
      token: adminToken,
      body: { status: "gone" },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.field_errors[0].field).toBe("status");
  });

  test("admins cannot disable themselves", async () => {
    const response = await w.request("PATCH", `/api/v1/users/${w.admin.id}`, {
      token: adminToken,
      body: { status: "disabled" },
    });
    expect(response.status).toBe(403);
  });
});

describe("tenant scope", () => {
  test("anyone but a platform admin naming another tenant_id is 403", async () => {
    const response = await w.request("GET", `/api/v1/users?tenant_id=${w.platform.id}`, {
      token: adminToken,
    });
    expect(response.status).toBe(403);
    expect(response.body.code).toBe("forbidden");
    const own = await w.request("GET", `/api/v1/users?tenant_id=${w.acme.id}`, {
      token: adminToken,
    });
    expect(own.status).toBe(200);
  });

  test("a tenant_id in capitals is the same tenant, for its own users and a platform admin", async () => {
    const upper = w.acme.id.toUpperCase();
    const own = await w.request("GET", `/api/v1/users?tenant_id=${upper}`, { token: adminToken });
    expect(own.status).toBe(200);
    const campaign = await w.request("POST", "/api/v1/campaigns", {
      token: adminToken,
      body: { name: "Cased" },
    });
    const id = campaign.body.data.campaign.id as string;
    const started = await w.request("POST", `/api/v1/campaigns/${id}/status?tenant_id=${upper}`, {
      token: rootToken,
      body: { action: "start" },
    });
    expect(started.status).toBe(200);
    expect(w.deps.tenants.loadedTenant(upper)).toBeFalsy();
  });

  test("a platform admin acts in any tenant with tenant_id, in its own without", async () => {
    const inAcme = await w.request("GET", `/api/v1/users?tenant_id=${w.acme.id}`, {
      token: rootToken,
    });
    expect(inAcme.body.data.items.map((u: { email: string }) => u.email)).toEqual([
      "admin@acme.test",
    ]);
    const own = await w.request("GET", "/api/v1/users", { token: rootToken });
    expect(own.body.data.items.map((u: { email: string }) => u.email)).toEqual([
      "root@platform.test",
    ]);
    const created = await createUser(
      rootToken,
      { email: "a3@acme.test", password: PASSWORD, role: "agent" },
      `?tenant_id=${w.acme.id}`,
    );
    expect(created.body.data.user.tenant_id).toBe(w.acme.id);
    const missing = await w.request("GET", `/api/v1/users?tenant_id=${crypto.randomUUID()}`, {
      token: rootToken,
    });
    expect(missing.status).toBe(404);
  });

  test("a tenant not yet loaded is looked up; a malformed one is 404", async () => {
    const fresh = await w.tenant("fresh.test");
    await w.user(fresh.id, "agent@fresh.test", "agent");
    const list = await w.request("GET", `/api/v1/users?tenant_id=${fresh.id}`, {
      token: rootToken,
    });
    expect(list.body.data.items.map((u: { email: string }) => u.email)).toEqual([
      "agent@fresh.test",
    ]);
    const malformed = await w.request("GET", "/api/v1/users?tenant_id=acme", { token: rootToken });
    expect([malformed.status, malformed.body.code]).toEqual([404, "not_found"]);
  });

  test("reach is refused before the body is read; the named tenant is looked up after", async () => {
    const invalid = { email: "not-an-email", password: "short", role: "agent" };
    const foreign = await createUser(adminToken, invalid, `?tenant_id=${w.platform.id}`);
    expect(foreign.status).toBe(403);
    const unknown = `?tenant_id=${crypto.randomUUID()}`;
    expect((await createUser(rootToken, invalid, unknown)).status).toBe(400);
    const valid = { email: "new@acme.test", password: PASSWORD, role: "agent" };
    expect((await createUser(rootToken, valid, unknown)).status).toBe(404);
  });

  test("a route that takes no tenant_id acts in the caller's tenant whatever it names", async () => {
    const me = await w.request("GET", `/api/v1/auth/me?tenant_id=${crypto.randomUUID()}`, {
      token: rootToken,
    });
    expect([me.status, me.body.data?.tenant.id]).toEqual([200, w.platform.id]);
  });
});

describe("/auth/me", () => {
  test("follows changes to the caller's user and tenant at once", async () => {
    const me = () => w.request("GET", "/api/v1/auth/me", { token: adminToken });
    const before = await me();
    expect(before.body.data.user.role).toBe("admin");
    expect(before.body.data.tenant.name).toBe("Acme");
    expect(before.headers.get("content-type")).toBe("application/json;charset=utf-8");
    expect((await me()).body).toEqual(before.body);

    const renamed = await w.request("PATCH", `/api/v1/tenants/${w.acme.id}`, {
      token: rootToken,
      body: { name: "Acme Calling" },
    });
    expect(renamed.status).toBe(200);
    const afterRename = await me();
    expect(afterRename.body.data.tenant.name).toBe("Acme Calling");
    expect(afterRename.body.data.user).toEqual(before.body.data.user);

    const demoted = await w.request("PATCH", `/api/v1/users/${w.admin.id}?tenant_id=${w.acme.id}`, {
      token: rootToken,
      body: { role: "supervisor" },
    });
    expect(demoted.status).toBe(200);
    const afterDemotion = await me();
    expect(afterDemotion.body.data.user.role).toBe("supervisor");
    expect(afterDemotion.body.data.tenant.name).toBe("Acme Calling");
    // The demotion holds on the old token at once.
    expect((await w.request("GET", "/api/v1/users", { token: adminToken })).status).toBe(403);
  });

  test("a token pins its role: a promotion takes a new token", async () => {
    const agent = await w.user(w.acme.id, "agent@acme.test", "agent");
    const oldToken = await w.login("agent@acme.test");
    const promoted = await w.request("PATCH", `/api/v1/users/${agent.id}`, {
      token: adminToken,
      body: { role: "admin" },
    });
    expect(promoted.status).toBe(200);
    expect((await w.request("GET", "/api/v1/users", { token: oldToken })).status).toBe(403);
    const newToken = await w.login("agent@acme.test");
    expect((await w.request("GET", "/api/v1/users", { token: newToken })).status).toBe(200);
  });
});

describe("pagination", () => {
  test("limit and offset, newest first, with bad values reset", async () => {
    for (let i = 0; i < 4; i++) {
      w.clock.advance(1000);
      await w.user(w.acme.id, `p${i}@acme.test`, "agent");
    }
    const page = await w.request("GET", "/api/v1/users?limit=2&offset=1", { token: adminToken });
    expect(page.body).toMatchObject({ status: "success", total: 5, limit: 2, offset: 1 });
    expect(page.body.data.items.map((u: { email: string }) => u.email)).toEqual([
      "p2@acme.test",
      "p1@acme.test",
    ]);
    for (const [query, limit, offset] of [
      ["limit=0", 50, 0],
      ["limit=501", 50, 0],
      ["limit=abc", 50, 0],
      ["limit=-1", 50, 0],
      ["limit=500", 500, 0],
      ["limit=1", 1, 0],
      ["offset=-1", 50, 0],
      ["offset=abc", 50, 0],
      ["offset=3", 50, 3],
      ["limit=2.5&offset=1.5", 50, 0],
      // Past the largest safe integer: still far past the end, never back to the first page.
      ["offset=99999999999999999999", 50, Number.MAX_SAFE_INTEGER],
      ["offset=9007199254740993", 50, Number.MAX_SAFE_INTEGER],
    ] as const) {
      const response = await w.request("GET", `/api/v1/users?${query}`, { token: adminToken });
      expect(response.status).toBe(200);
      expect([response.body.limit, response.body.offset]).toEqual([limit, offset]);
      if (offset > 5) expect(response.body.data.items).toEqual([]);
    }
    const past = await w.request("GET", "/api/v1/users?offset=100", { token: adminToken });
    expect(past.body.data.items).toEqual([]);
    expect(past.body.total).toBe(5);
  });
});

describe("audit trail", () => {
  test("user changes are recorded with who, what and the request id; admins read them", async () => {
    const created = await w.request("POST", "/api/v1/users", {
      token: adminToken,
      body: { email: "au@acme.test", password: PASSWORD, role: "agent" },
      headers: { "x-request-id": "create-user-0001" },
    });
    const id = created.body.data.user.id;
    await w.request("PATCH", `/api/v1/users/${id}`, {
      token: adminToken,
      body: { status: "disabled" },
    });
    const trail = await w.request("GET", "/api/v1/audit-events?limit=2", { token: adminToken });
    expect(trail.status).toBe(200);
    const [updated, createdEvent] = trail.body.data.items;
    expect(updated).toMatchObject({
      action: "user.updated",
      actor_type: "user",
      actor_id: w.admin.id,
      target_id: id,
      details: { before: { status: "active" }, after: { status: "disabled" } },
    });
    expect(createdEvent).toMatchObject({ action: "user.created", request_id: "create-user-0001" });
    const other = await w.request("GET", "/api/v1/audit-events", { token: rootToken });
    expect(
      other.body.data.items.every((e: { tenant_id: string }) => e.tenant_id === w.platform.id),
    ).toBe(true);
  });
});

describe("an API key's role ceiling", () => {
  let key: string;
  beforeEach(async () => {
    const created = await w.request("POST", "/api/v1/api-keys", {
      token: adminToken,
      body: { name: "hr sync", scopes: { users: "write" } },
    });
    key = created.body.data.key;
  });
  const patch = (id: string, body: Record<string, unknown>) =>
    w.request("PATCH", `/api/v1/users/${id}`, { token: key, body });
  const expectForbidden = (response: { status: number; body: { code: string } }) => {
    expect(response.status).toBe(403);
    expect(response.body.code).toBe("forbidden");
  };

  test("a key cannot create an admin or a platform admin", async () => {
    for (const role of ["admin", "platform_admin"]) {
      expectForbidden(
        await createUser(key, { email: `${role}@acme.test`, password: PASSWORD, role }),
      );
    }
  });

  test("a key cannot disable, demote or otherwise change an admin", async () => {
    const other = await w.user(w.acme.id, "second-admin@acme.test", "admin");
    expectForbidden(await patch(other.id, { status: "disabled" }));
    expectForbidden(await patch(other.id, { role: "agent" }));
    expectForbidden(await patch(other.id, { role: "admin", status: "active" }));
    const unchanged = await w.request("GET", `/api/v1/users/${other.id}`, { token: adminToken });
    expect(unchanged.body.data.user).toMatchObject({ role: "admin", status: "active" });
  });

  test("a key cannot promote an agent to admin", async () => {
    const agent = await w.user(w.acme.id, "agent@acme.test", "agent");
    expectForbidden(await patch(agent.id, { role: "admin" }));
    expectForbidden(await patch(agent.id, { role: "platform_admin" }));
  });

  test("a key manages agents and supervisors", async () => {
    const created = await createUser(key, {
      email: "new-agent@acme.test",
      password: PASSWORD,
      role: "agent",
    });
    expect(created.status).toBe(201);
    const id = created.body.data.user.id;
    expect((await patch(id, { role: "supervisor" })).status).toBe(200);
    const disabled = await patch(id, { status: "disabled" });
    expect(disabled.status).toBe(200);
    expect(disabled.body.data.user).toMatchObject({ role: "supervisor", status: "disabled" });
    const supervisor = await createUser(key, {
      email: "new-sup@acme.test",
      password: PASSWORD,
      role: "supervisor",
    });
    expect(supervisor.status).toBe(201);
  });

  test("an admin user still creates and manages admins", async () => {
    const created = await createUser(adminToken, {
      email: "deputy@acme.test",
      password: PASSWORD,
      role: "admin",
    });
    expect(created.status).toBe(201);
    const id = created.body.data.user.id;
    const demoted = await w.request("PATCH", `/api/v1/users/${id}`, {
      token: adminToken,
      body: { role: "agent" },
    });
    expect(demoted.status).toBe(200);
  });
});
