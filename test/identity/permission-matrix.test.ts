import { beforeAll, describe, expect, test } from "bun:test";
import type { ScopeLevel } from "../../db/schema/access.ts";
import {
  OPEN_TO_ANY_KEY,
  PERMISSIONS,
  type Permission,
  type PermissionRule,
  SCOPED_RESOURCES,
} from "../../src/identity/permissions.ts";
import type { Role } from "../../src/identity/roles.ts";
import { createWorkspace } from "../helpers/app.ts";

/**
 * Every route × every role × every API-key scope level × own or foreign tenant. The routes
 * come from the app itself and each names its permission in its OpenAPI detail, so a route
 * added without one fails here.
 */
type Workspace = Awaited<ReturnType<typeof createWorkspace>>;
let w: Workspace;
let foreignTenantId: string;
const userTokens = new Map<Role, string>();
const keyTokens = new Map<string, string>();

const ROLES: Role[] = ["agent", "supervisor", "admin", "platform_admin"];
const LEVELS: ScopeLevel[] = ["none", "read", "write"];
const SKIPPED = new Set(["/docs", "/api/v1/openapi.json"]);

interface RouteUnderTest {
  method: string;
  path: string;
  permission: string;
  takesTenantId: boolean;
}

beforeAll(async () => {
  w = await createWorkspace();
  const foreign = await w.tenant("foreign.test");
  foreignTenantId = foreign.id;
  for (const role of ["agent", "supervisor"] as const)
    await w.user(w.acme.id, `${role}@acme.test`, role);
  userTokens.set("agent", await w.login("agent@acme.test"));
  userTokens.set("supervisor", await w.login("supervisor@acme.test"));
  userTokens.set("admin", await w.login("admin@acme.test"));
  userTokens.set("platform_admin", await w.login("root@platform.test"));
  const adminToken = userTokens.get("admin") as string;
  for (const resource of SCOPED_RESOURCES) {
    for (const level of LEVELS) {
      const response = await w.request("POST", "/api/v1/api-keys", {
        token: adminToken,
        body: {
          name: `${resource}-${level}`,
          scopes: { [resource]: level },
          rate_limit_per_minute: 10_000,
        },
      });
      keyTokens.set(`${resource}:${level}`, response.body.data.key);
    }
  }
});

/**
 * Every route, the sockets' upgrade routes included: their checks happen before the upgrade,
 * so an allowed caller gets 400 (no upgrade in-process) where a refused one gets 401 or 403.
 */
function routesUnderTest(): RouteUnderTest[] {
  return w.app.routes
    .filter((route) => !SKIPPED.has(route.path))
    .map((route) => {
      const hooks = route.hooks as {
        detail?: Record<string, unknown>;
        query?: { properties?: Record<string, unknown> };
      };
      return {
        method: route.method,
        path: route.path,
        permission: String(hooks.detail?.["x-permission"] ?? ""),
        takesTenantId: Boolean(hooks.query?.properties?.tenant_id),
      };
    });
}

/** Fills path parameters with ids that exist nowhere: an allowed caller then gets 404. */
const concretePath = (path: string) => path.replace(/:[a-z_]+/g, () => crypto.randomUUID());

/** Sockets take their token as `?token=`, everything else as a bearer header. */
const isSocket = (route: RouteUnderTest) => route.permission.startsWith("realtime.");

async function call(route: RouteUnderTest, token: string, tenantId?: string) {
  const params = new URLSearchParams();
  if (isSocket(route)) params.set("token", token);
  if (tenantId) params.set("tenant_id", tenantId);
  const query = params.size ? `?${params}` : "";
  const hasBody = route.method === "POST" || route.method === "PATCH";
  return w.request(route.method, `${concretePath(route.path)}${query}`, {
    token: isSocket(route) ? undefined : token,
    body: hasBody ? {} : undefined,
  });
}

const ruleOf = (route: RouteUnderTest): PermissionRule | undefined =>
  PERMISSIONS[route.permission as Permission];

/** Each probe acts on users of one role through the route; it answers a status per attempt. */
type CeilingProbe = (token: string, role: Role) => Promise<[string, number][]>;
const targetOf = (role: Role) => w.user(w.acme.id, `${crypto.randomUUID()}@acme.test`, role);
const CEILING_PROBES: Record<string, CeilingProbe> = {
  "POST /api/v1/users": async (token, role) => {
    const body = { email: `${crypto.randomUUID()}@acme.test`, password: "twelve chars!", role };
    return [[`create ${role}`, (await w.request("POST", "/api/v1/users", { token, body })).status]];
  },
  "PATCH /api/v1/users/:id": async (token, role) => {
    const patch = async (id: string, body: Record<string, string>) =>
      (await w.request("PATCH", `/api/v1/users/${id}`, { token, body })).status;
    return [
      [`disable a ${role}`, await patch((await targetOf(role)).id, { status: "disabled" })],
      [`promote an agent to ${role}`, await patch((await targetOf("agent")).id, { role })],
    ];
  },
};

const expectOutcome = (label: string, status: number, allowed: boolean) => {
  if (allowed) expect([label, [401, 403].includes(status)]).toEqual([label, false]);
  else expect([label, status]).toEqual([label, 403]);
};

describe("permission matrix", () => {
  test("every route, sockets included, names a permission of the table", () => {
    const routes = routesUnderTest();
    expect(routes.length).toBeGreaterThan(30);
    expect(routes.filter(isSocket).map((route) => route.path)).toEqual([
      "/ws/supervisor",
      "/ws/agent",
    ]);
    for (const route of routes) {
      const known =
        route.permission in PERMISSIONS ||
        route.permission === "public" ||
        route.permission === "node";
      expect([route.method, route.path, known]).toEqual([route.method, route.path, true]);
    }
  });

  test("users: every role, own and foreign tenant", async () => {
    for (const route of routesUnderTest()) {
      if (route.permission === "public" || route.permission === "node") continue;
      const rule: PermissionRule = PERMISSIONS[route.permission as Permission];
      for (const role of ROLES) {
        const token = userTokens.get(role) as string;
        const allowed = rule.roles.includes(role);
        const own = await call(route, token);
        expectOutcome(`${role} ${route.method} ${route.path}`, own.status, allowed);
        if (route.takesTenantId) {
          const foreign = await call(route, token, foreignTenantId);
          // Only a platform admin acts in another tenant; anyone else naming one is refused.
          expectOutcome(
            `${role} ${route.method} ${route.path} (foreign)`,
            foreign.status,
            allowed && role === "platform_admin",
          );
        }
      }
    }
  });

  test("API keys: every scope level of the route's resource, own and foreign tenant", async () => {
    for (const route of routesUnderTest()) {
      if (route.permission === "public" || route.permission === "node") continue;
      const rule: PermissionRule = PERMISSIONS[route.permission as Permission];
      const resources = rule.scope ? [rule.scope.resource] : SCOPED_RESOURCES;
      for (const resource of resources) {
        for (const level of LEVELS) {
          const token = keyTokens.get(`${resource}:${level}`) as string;
          const rank = { none: 0, read: 1, write: 2 }[level];
          const needed = rule.scope
            ? { read: 1, write: 2 }[rule.scope.level]
            : Number.POSITIVE_INFINITY;
          const allowed = OPEN_TO_ANY_KEY.has(route.permission as Permission) || rank >= needed;
          const label = `key ${resource}:${level} ${route.method} ${route.path}`;
          expectOutcome(label, (await call(route, token)).status, allowed);
          if (route.takesTenantId) {
            expectOutcome(
              `${label} (foreign)`,
              (await call(route, token, foreignTenantId)).status,
              false,
            );
          }
        }
      }
    }
  });

  test("API keys: each permission's role ceiling, on every route that names it", async () => {
    const ceilingRoutes = routesUnderTest().filter(
      (route) => ruleOf(route)?.keyRoleCeiling !== undefined,
    );
    expect(ceilingRoutes.map((route) => `${route.method} ${route.path}`).sort()).toEqual(
      Object.keys(CEILING_PROBES).sort(),
    );
    for (const route of ceilingRoutes) {
      const rule = ruleOf(route) as PermissionRule & { keyRoleCeiling: Role };
      const probe = CEILING_PROBES[`${route.method} ${route.path}`] as CeilingProbe;
      const key = keyTokens.get(`${rule.scope?.resource}:write`) as string;
      const admin = userTokens.get("admin") as string;
      for (const role of ROLES) {
        const withinCeiling = ROLES.indexOf(role) <= ROLES.indexOf(rule.keyRoleCeiling);
        for (const [label, status] of await probe(key, role)) {
          expectOutcome(`key ${route.method} ${route.path} ${label}`, status, withinCeiling);
        }
        // The ceiling binds keys only: an admin user still manages admins of its tenant.
        if (role === "platform_admin") continue;
        for (const [label, status] of await probe(admin, role)) {
          expectOutcome(`admin ${route.method} ${route.path} ${label}`, status, true);
        }
      }
    }
  });

  test("node routes refuse every user token and API key with 401", async () => {
    for (const route of routesUnderTest().filter((r) => r.permission === "node")) {
      for (const token of [...userTokens.values(), ...keyTokens.values()]) {
        expect((await call(route, token)).status).toBe(401);
      }
    }
  });

  test("without credentials every guarded route is 401", async () => {
    for (const route of routesUnderTest().filter((r) => r.permission !== "public")) {
      const hasBody = route.method === "POST" || route.method === "PATCH";
      const response = await w.request(route.method, concretePath(route.path), {
        body: hasBody ? {} : undefined,
      });
      expect([route.path, response.status]).toEqual([route.path, 401]);
    }
  });
});
