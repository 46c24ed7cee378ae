import { beforeEach, describe, expect, test } from "bun:test";
import { updateUser } from "../../db/queries/users.ts";
import { createWorkspace } from "../helpers/app.ts";

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
    await updateUser(w.deps.db, w.acme.id, w.admin.id, { role: "agent" }, new Date());
    expect((await tenants.user(w.acme.id, w.admin.id))?.role).toBe("admin");
    // A committed change the services report is seen at once.
    const changed = await updateUser(
      w.deps.db,
      w.acme.id,
      w.admin.id,
      { role: "supervisor" },
      new Date(),
    );
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
