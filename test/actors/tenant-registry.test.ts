import { beforeEach, describe, expect, test } from "bun:test";
import type { UserAccessChange } from "../../actors/tenant-registry.ts";
import { findTenantUser, type UserRow, updateUser } from "../../db/queries/users.ts";
import { createWorkspace, PASSWORD } from "../helpers/app.ts";

let w: Awaited<ReturnType<typeof createWorkspace>>;
beforeEach(async () => {
  w = await createWorkspace();
});

describe("tenant actors", () => {
  test("load a tenant with its users once, then answer from memory", async () => {
    const tenants = w.deps.tenants;
    expect((await tenants.tenant(w.acme.id))?.domain).toBe("acme.test");
    expect((await tenants.user(w.acme.id, w.admin.id))?.role).toBe("admin");
    // A change written behind the registry's back is not seen: reads come from the actor.
    await updateUser(w.deps.db, {
      tenantId: w.acme.id,
      id: w.admin.id,
      patch: { role: "agent" },
      now: new Date(),
    });
    expect((await tenants.user(w.acme.id, w.admin.id))?.role).toBe("admin");
    // A committed change the services report is seen at once.
    const changed = await updateUser(w.deps.db, {
      tenantId: w.acme.id,
      id: w.admin.id,
      patch: { role: "supervisor" },
      now: new Date(),
    });
    if (changed) tenants.userChanged(changed);
    expect((await tenants.user(w.acme.id, w.admin.id))?.role).toBe("supervisor");
  });

  test("a user the actor has not heard of is looked up once", async () => {
    await w.deps.tenants.tenant(w.acme.id);
    const late = await w.user(w.acme.id, "late@acme.test", "agent");
    expect((await w.deps.tenants.user(w.acme.id, late.id))?.email).toBe("late@acme.test");
  });

  test("unknown tenants and users are undefined, never an error", async () => {
    expect(await w.deps.tenants.tenant(crypto.randomUUID())).toBeUndefined();
    expect(await w.deps.tenants.tenant("not-a-uuid")).toBeUndefined();
    expect(await w.deps.tenants.user(w.acme.id, crypto.randomUUID())).toBeUndefined();
    expect(await w.deps.tenants.user(w.acme.id, "nope")).toBeUndefined();
  });

  test("users of another tenant are not found through this tenant", async () => {
    expect(await w.deps.tenants.user(w.acme.id, w.root.id)).toBeUndefined();
  });
});

describe("user rows are adopted newest first", () => {
  test("a login's row read before an admin disabled the user never restores it", async () => {
    const agent = await w.user(w.acme.id, "agent@acme.test", "agent");
    const adminToken = await w.login("admin@acme.test");
    const agentToken = await w.login("agent@acme.test");
    // A login reads the row, then spends a while on the password before it reports the row.
    const readByLogin = (await findTenantUser(w.deps.db, {
      tenantId: w.acme.id,
      id: agent.id,
    })) as UserRow;
    const disabled = await w.request("PATCH", `/api/v1/users/${agent.id}`, {
      token: adminToken,
      body: { status: "disabled" },
    });
    expect(disabled.status).toBe(200);
    w.deps.tenants.userChanged(readByLogin);
    expect(w.deps.tenants.loadedUser(w.acme.id, agent.id)?.status).toBe("disabled");
    const refused = await w.request("GET", "/api/v1/auth/me", { token: agentToken });
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe("account_disabled");
  });

  test("a demotion is not undone by an older row either", async () => {
    const adminToken = await w.login("admin@acme.test");
    const deputy = await w.user(w.acme.id, "deputy@acme.test", "admin");
    await w.deps.tenants.user(w.acme.id, deputy.id);
    await w.request("PATCH", `/api/v1/users/${deputy.id}`, {
      token: adminToken,
      body: { role: "agent" },
    });
    w.deps.tenants.userChanged(deputy);
    expect((await w.deps.tenants.user(w.acme.id, deputy.id))?.role).toBe("agent");
  });
});

describe("a change reported while the tenant loads", () => {
  test("reaches the actor once it is loaded", async () => {
    const loading = w.deps.tenants.tenant(w.acme.id);
    // Stands for a change committed after the load read its rows.
    w.deps.tenants.userChanged({ ...w.admin, role: "supervisor", version: w.admin.version + 1 });
    await loading;
    expect(w.deps.tenants.loadedUser(w.acme.id, w.admin.id)?.role).toBe("supervisor");
  });
});

describe("user access changes", () => {
  test("listeners hear of every committed change of role or status, and nothing else", async () => {
    const agent = await w.user(w.acme.id, "agent@acme.test", "agent");
    const adminToken = await w.login("admin@acme.test");
    const heard: UserAccessChange[] = [];
    const stop = w.deps.tenants.onUserAccessChanged((change) => heard.push(change));
    w.deps.tenants.onUserAccessChanged(() => {
      throw new Error("one listener failing does not silence the others");
    });
    const patch = (body: Record<string, string>) =>
      w.request("PATCH", `/api/v1/users/${agent.id}`, { token: adminToken, body });
    await patch({ role: "supervisor" });
    await patch({ status: "disabled" });
    await patch({ status: "disabled" });
    w.deps.tenants.userChanged(agent);
    expect(heard).toEqual([
      {
        tenantId: w.acme.id,
        userId: agent.id,
        before: { role: "agent", status: "active" },
        after: { role: "supervisor", status: "active" },
      },
      {
        tenantId: w.acme.id,
        userId: agent.id,
        before: { role: "supervisor", status: "active" },
        after: { role: "supervisor", status: "disabled" },
      },
    ]);
    stop();
    await patch({ status: "active" });
    expect(heard).toHaveLength(2);
  });
});

describe("a login answers from the newest user state", () => {
  test("a user disabled or demoted during the password check gets no token for the old state", async () => {
    const agent = await w.user(w.acme.id, "agent@acme.test", "supervisor");
    await w.deps.tenants.user(w.acme.id, agent.id);
    // Memory learns of a newer row than the one the login is about to read.
    w.deps.tenants.userChanged({ ...agent, role: "agent", version: agent.version + 1 });
    const demoted = await w.request("POST", "/api/v1/auth/login", {
      body: { email: "agent@acme.test", password: PASSWORD },
    });
    expect(demoted.status).toBe(200);
    expect(demoted.body.data.user.role).toBe("agent");
    w.deps.tenants.userChanged({ ...agent, status: "disabled", version: agent.version + 2 });
    const disabled = await w.request("POST", "/api/v1/auth/login", {
      body: { email: "agent@acme.test", password: PASSWORD },
    });
    expect(disabled.status).toBe(403);
    expect(disabled.body.code).toBe("account_disabled");
  });
});
