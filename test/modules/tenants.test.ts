import { beforeEach, describe, expect, test } from "bun:test";
import { createWorkspace } from "../helpers/app.ts";

let w: Awaited<ReturnType<typeof createWorkspace>>;
let rootToken: string;
beforeEach(async () => {
  w = await createWorkspace();
  rootToken = await w.login("root@platform.test");
});

describe("tenants", () => {
  test("a platform admin creates and lists tenants", async () => {
    const created = await w.request("POST", "/api/v1/tenants", {
      token: rootToken,
      body: { name: "Globex", domain: "globex.example" },
    });
    expect(created.status).toBe(201);
    expect(created.body.data.tenant).toEqual({
      id: expect.any(String),
      name: "Globex",
      domain: "globex.example",
      rate_limit_per_minute: 600,
      regulatory_profile: "us",
      not_ready_reasons: [
        { code: "break", label: "Break" },
        { code: "lunch", label: "Lunch" },
        { code: "training", label: "Training" },
        { code: "meeting", label: "Meeting" },
        { code: "other", label: "Other" },
      ],
      transfer_numbers: [],
      created_at: expect.stringMatching(/Z$/),
      updated_at: expect.stringMatching(/Z$/),
    });
    const list = await w.request("GET", "/api/v1/tenants", { token: rootToken });
    expect(list.body.total).toBe(3);
    // The workspace the console acts in rides along, and is ignored, even one gone or garbled.
    for (const named of [created.body.data.tenant.id, crypto.randomUUID(), "not-an-id"]) {
      const listed = await w.request("GET", `/api/v1/tenants?tenant_id=${named}`, {
        token: rootToken,
      });
      expect({ named, status: listed.status, total: listed.body.total }).toEqual({
        named,
        status: 200,
        total: 3,
      });
    }
    const one = await w.request("GET", `/api/v1/tenants/${created.body.data.tenant.id}`, {
      token: rootToken,
    });
    expect(one.body.data.tenant.domain).toBe("globex.example");
  });

  test("domains are unique and restricted to lower-case letters, digits, dots and hyphens", async () => {
    const taken = await w.request("POST", "/api/v1/tenants", {
      token: rootToken,
      body: { name: "A", domain: "acme.test" },
    });
    expect(taken.status).toBe(409);
    const invalid = ["Upper.test", "under_score", "space here", "", "-lead", "a..b", "a.", ".a"];
    // A label is not empty, and starts and ends with a letter or digit; 253 characters in all.
    invalid.push("acme-.test", "acme.-test");
    for (const domain of invalid) {
      const response = await w.request("POST", "/api/v1/tenants", {
        token: rootToken,
        body: { name: "A", domain },
      });
      expect({ domain, status: response.status, errors: response.body.field_errors }).toEqual({
        domain,
        status: 400,
        errors: [{ field: "domain", message: "must be a domain name such as acme.example" }],
      });
    }
    const tooLong = await w.request("POST", "/api/v1/tenants", {
      token: rootToken,
      body: { name: "A", domain: `${"a.".repeat(126)}ab` },
    });
    expect(tooLong.body.field_errors).toEqual([
      { field: "domain", message: "must be at most 253 characters" },
    ]);
    for (const domain of [`${"a".repeat(248)}.test`, "x-y.z9", "9lives", `${"a.".repeat(126)}a`]) {
      const response = await w.request("POST", "/api/v1/tenants", {
        token: rootToken,
        body: { name: "A", domain },
      });
      expect({ domain, status: response.status }).toEqual({ domain, status: 201 });
    }
  });

  test("a tenant's name must not be blank, on creation and on change", async () => {
    for (const name of ["   ", " \t\n ", "\u00a0\u2003"]) {
      const created = await w.request("POST", "/api/v1/tenants", {
        token: rootToken,
        body: { name, domain: "blank.test" },
      });
      expect([created.status, created.body.field_errors]).toEqual([
        400,
        [{ field: "name", message: "must not be blank" }],
      ]);
      const changed = await w.request("PATCH", `/api/v1/tenants/${w.acme.id}`, {
        token: rootToken,
        body: { name },
      });
      expect([changed.status, changed.body.field_errors]).toEqual([
        400,
        [{ field: "name", message: "must not be blank" }],
      ]);
    }
    const kept = await w.request("GET", `/api/v1/tenants/${w.acme.id}`, { token: rootToken });
    expect(kept.body.data.tenant.name).toBe("Acme");
  });

  test("only platform admins manage tenants", async () => {
    const adminToken = await w.login("admin@acme.test");
    const list = await w.request("GET", "/api/v1/tenants", { token: adminToken });
    expect(list.status).toBe(403);
    const create = await w.request("POST", "/api/v1/tenants", {
      token: adminToken,
      body: { name: "B", domain: "b.test" },
    });
    expect(create.status).toBe(403);
  });

  test("an admin reads its own tenant, whose settings it changes, and no other", async () => {
    const adminToken = await w.login("admin@acme.test");
    const own = await w.request("GET", `/api/v1/tenants/${w.acme.id}`, { token: adminToken });
    expect([own.status, own.body.data?.tenant.id]).toEqual([200, w.acme.id]);
    const other = await w.request("GET", `/api/v1/tenants/${w.platform.id}`, {
      token: adminToken,
    });
    expect(other.status).toBe(404);
    await w.user(w.acme.id, "sup@acme.test", "supervisor");
    const supervisor = await w.login("sup@acme.test");
    expect(
      (await w.request("GET", `/api/v1/tenants/${w.acme.id}`, { token: supervisor })).status,
    ).toBe(403);
  });
});
