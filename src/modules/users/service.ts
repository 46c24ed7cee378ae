import { isUniqueViolation } from "../../../db/errors.ts";
import {
  findTenantUser,
  insertUser,
  listTenantUsers,
  type UserRow,
  updateUser,
} from "../../../db/queries/users.ts";
import type { RequestMeta, ServiceDeps } from "../../deps.ts";
import type { Page } from "../../envelope.ts";
import { conflict, forbidden, notFound } from "../../errors.ts";
import { auditedWrite } from "../../identity/audit.ts";
import { hashPassword } from "../../identity/passwords.ts";
import { reachesRole } from "../../identity/permissions.ts";
import { auditActorOf, type Principal } from "../../identity/principal.ts";
import { PLATFORM_DOMAIN, type Role } from "../../identity/roles.ts";
import { isUuid } from "../../identity/tenant-scope.ts";
import { type CreateUserInput, type PatchUserInput, userView } from "./model.ts";

const emailTaken = () =>
  conflict("e-mail already in use in this tenant", [{ field: "email", message: "already in use" }]);

/** The permission table's role ceiling: an API key manages agents and supervisors only. */
function assertReaches(principal: Principal, role: Role) {
  if (!reachesRole(principal, "users.write", role)) {
    throw forbidden(`this credential cannot manage ${role} users`);
  }
}

/** platform_admin exists only in the Platform tenant, and only a platform admin grants it. */
async function assertRoleGrantable(
  deps: ServiceDeps,
  principal: Principal,
  tenantId: string,
  role: Role,
) {
  if (role !== "platform_admin") return;
  if (principal.role !== "platform_admin")
    throw forbidden("only a platform admin can grant platform_admin");
  const tenant = await deps.tenants.tenant(tenantId);
  if (tenant?.domain !== PLATFORM_DOMAIN) {
    throw forbidden("platform_admin exists only in the Platform tenant");
  }
}

export async function createUser(
  deps: ServiceDeps,
  principal: Principal,
  tenantId: string,
  input: CreateUserInput,
  meta: RequestMeta,
) {
  assertReaches(principal, input.role);
  await assertRoleGrantable(deps, principal, tenantId, input.role);
  const now = new Date(deps.clock.now());
  const passwordHash = await hashPassword(input.password);
  try {
    const user = await auditedWrite(
      deps.db,
      (tx) =>
        insertUser(tx, {
          id: Bun.randomUUIDv7(),
          tenantId,
          email: input.email.trim(),
          passwordHash,
          role: input.role,
          status: "active",
          mustChangePassword: true,
          phoneUri: input.phone_uri ?? null,
          createdAt: now,
          updatedAt: now,
        }),
      {
        tenantId,
        actor: auditActorOf(principal),
        action: "user.created",
        targetType: "user",
        requestId: meta.requestId,
        at: now,
        details: (row) => ({ email: row.email, role: row.role }),
      },
    );
    deps.tenants.userChanged(user);
    return { user: userView(user) };
  } catch (error) {
    if (isUniqueViolation(error)) throw emailTaken();
    throw error;
  }
}

export async function listUsers(deps: ServiceDeps, tenantId: string, page: Page) {
  const { items, total } = await listTenantUsers(deps.db, { tenantId, page });
  return { items: items.map(userView), total };
}

async function loadUser(deps: ServiceDeps, tenantId: string, id: string): Promise<UserRow> {
  const user = isUuid(id) ? await findTenantUser(deps.db, { tenantId, id }) : undefined;
  if (!user) throw notFound("user");
  return user;
}

export async function getUser(deps: ServiceDeps, tenantId: string, id: string) {
  return { user: userView(await loadUser(deps, tenantId, id)) };
}

export async function patchUser(
  deps: ServiceDeps,
  principal: Principal,
  tenantId: string,
  id: string,
  input: PatchUserInput,
  meta: RequestMeta,
) {
  const before = await loadUser(deps, tenantId, id);
  assertReaches(principal, before.role);
  if (input.role !== undefined) assertReaches(principal, input.role);
  const self = principal.kind === "user" && before.id === principal.user.id;
  if (self && (input.role !== undefined || input.status !== undefined)) {
    throw forbidden("you cannot change your own role or status");
  }
  if (before.role === "platform_admin" && principal.role !== "platform_admin") {
    throw forbidden("only a platform admin can change a platform admin");
  }
  if (input.role !== undefined) await assertRoleGrantable(deps, principal, tenantId, input.role);
  const now = new Date(deps.clock.now());
  const updated = await auditedWrite(
    deps.db,
    (tx) =>
      updateUser(tx, {
        tenantId,
        id,
        patch: { role: input.role, status: input.status, phoneUri: input.phone_uri },
        now,
      }),
    {
      tenantId,
      actor: auditActorOf(principal),
      action: "user.updated",
      targetType: "user",
      requestId: meta.requestId,
      at: now,
      details: (row) => ({
        before: { role: before.role, status: before.status, phone_uri: before.phoneUri },
        after: { role: row.role, status: row.status, phone_uri: row.phoneUri },
      }),
    },
  );
  if (!updated) throw notFound("user");
  deps.tenants.userChanged(updated);
  return { user: userView(updated) };
}
