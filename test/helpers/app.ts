import type { Clock } from "../../actors/ports.ts";
import { insertTenant } from "../../db/queries/tenants.ts";
import { insertUser, type UserRow } from "../../db/queries/users.ts";
import { createApp, createServiceDeps } from "../../src/app.ts";
import { loadConfig } from "../../src/config.ts";
import { hashPassword } from "../../src/identity/passwords.ts";
import type { Role } from "../../src/identity/roles.ts";
import { silentLogger } from "../../src/logger.ts";
import type { Resolve } from "../../src/webhooks/addresses.ts";
import { ManualClock } from "./clock.ts";
import { resetDatabase } from "./database.ts";

export const TEST_SECRET = "test-secret-that-is-at-least-32-bytes-long!";
export const PASSWORD = "correct horse battery staple";

const hashes = new Map<string, Promise<string>>();
const cachedHash = (password: string) => {
  let hash = hashes.get(password);
  if (!hash) {
    hash = hashPassword(password);
    hashes.set(password, hash);
  }
  return hash;
};

export interface Harness {
  app: ReturnType<typeof createApp>;
  deps: ReturnType<typeof createServiceDeps>;
  clock: ManualClock;
  /** Builds a new app and new in-memory state over the same database, as a restart would. */
  restart(): void;
  /** Sends a request to the app in-process and decodes the JSON body. */
  request(method: string, path: string, options?: RequestOptions): Promise<TestResponse>;
  tenant(domain: string, name?: string): Promise<{ id: string; domain: string }>;
  user(
    tenantId: string,
    email: string,
    role: Role,
    options?: Partial<UserRow> & { password?: string },
  ): Promise<UserRow>;
  /** Logs in and returns the bearer token. */
  login(email: string, password?: string, tenantDomain?: string): Promise<string>;
}

export interface RequestOptions {
  token?: string;
  body?: unknown;
  headers?: Record<string, string>;
  rawBody?: string | Blob | FormData | Uint8Array;
}

export interface TestResponse {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: test assertions read arbitrary JSON.
  body: any;
}

/** The apps built over the shared database since its last reset. */
const earlierApps: ReturnType<typeof createServiceDeps>[] = [];

/**
 * Waits for the agents' state changes the earlier apps are still writing: the reset's
 * `TRUNCATE` of every table would otherwise deadlock with such a write.
 */
async function settleEarlierApps() {
  const apps = earlierApps.splice(0);
  await Promise.all(apps.map((deps) => deps.dialer.agents.settled()));
}

/** A fresh app over the reset shared database, with a controlled clock. */
export async function createHarness(
  options: { env?: Record<string, string>; clock?: Clock; resolve?: Resolve } = {},
): Promise<Harness> {
  await settleEarlierApps();
  const database = await resetDatabase();
  const clock = (options.clock as ManualClock | undefined) ?? new ManualClock();
  const config = loadConfig({ AUTH_JWT_SECRET: TEST_SECRET, ...options.env });
  const build = () => {
    const deps = createServiceDeps({
      database,
      config,
      clock,
      logger: silentLogger,
      jwtSecret: TEST_SECRET,
      ...(options.resolve ? { resolve: options.resolve } : {}),
    });
    earlierApps.push(deps);
    return { deps, app: createApp(deps) };
  };
  let current = build();

  const request: Harness["request"] = async (method, path, opts = {}) => {
    const headers = new Headers(opts.headers);
    if (opts.token) headers.set("authorization", `Bearer ${opts.token}`);
    let body: string | Blob | FormData | Uint8Array | undefined = opts.rawBody;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      if (!headers.has("content-type")) headers.set("content-type", "application/json");
    }
    const response = await current.app.handle(
      new Request(`http://localhost${path}`, { method, headers, body }),
    );
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {}
    return { status: response.status, headers: response.headers, body: parsed };
  };

  const now = () => new Date(clock.now());
  return {
    get app() {
      return current.app;
    },
    get deps() {
      return current.deps;
    },
    restart() {
      current = build();
    },
    clock,
    request,
    async tenant(domain, name = domain) {
      return insertTenant(current.deps.db, {
        id: Bun.randomUUIDv7(),
        name,
        domain,
        rateLimitPerMinute: config.RATE_LIMIT_DEFAULT_PER_MINUTE,
        createdAt: now(),
        updatedAt: now(),
      });
    },
    async user(tenantId, email, role, extra = {}) {
      const { password = PASSWORD, ...rest } = extra;
      return insertUser(current.deps.db, {
        id: Bun.randomUUIDv7(),
        tenantId,
        email,
        passwordHash: await cachedHash(password),
        role,
        status: "active",
        mustChangePassword: false,
        createdAt: now(),
        updatedAt: now(),
        ...rest,
      });
    },
    async login(email, password = PASSWORD, tenantDomain) {
      const response = await request("POST", "/api/v1/auth/login", {
        body: { email, password, ...(tenantDomain ? { tenant_domain: tenantDomain } : {}) },
      });
      if (response.status !== 200)
        throw new Error(`login failed: ${response.status} ${JSON.stringify(response.body)}`);
      return response.body.data.token as string;
    },
  };
}

/** A harness with the Platform tenant, its admin, and one workspace with an admin. */
export async function createWorkspace(options: Parameters<typeof createHarness>[0] = {}) {
  const harness = await createHarness(options);
  const platform = await harness.tenant("platform", "Platform");
  const root = await harness.user(platform.id, "root@platform.test", "platform_admin");
  const acme = await harness.tenant("acme.test", "Acme");
  const admin = await harness.user(acme.id, "admin@acme.test", "admin");
  return { ...harness, platform, root, acme, admin };
}
