/** Seeding and checks over the app's public HTTP API, so the benchmark needs no app internals. */

export const ADMIN_EMAIL = "bench-admin@platform.local";
export const ADMIN_PASSWORD = "bench-admin-password-2026";
const USER_PASSWORD = "bench-user-password-2026";

export interface Seeded {
  token: string;
  tenantId: string;
  /** Ids of GET /api/v1/users?limit=50, in order: every target listing users must match it. */
  firstPageIds: string[];
  total: number;
}

async function call(base: string, method: string, path: string, token?: string, body?: unknown) {
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(`${base}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${text}`);
  // biome-ignore lint/suspicious/noExplicitAny: the API's JSON is read field by field below.
  return JSON.parse(text) as any;
}

/** Logs in as the bootstrap admin and fills its tenant up to `users` users. */
export async function seedThroughApi(base: string, users: number): Promise<Seeded> {
  const login = await call(base, "POST", "/api/v1/auth/login", undefined, {
    email: ADMIN_EMAIL,
    password: ADMIN_PASSWORD,
  });
  const token: string = login.data.token;
  const me = await call(base, "GET", "/api/v1/auth/me", token);
  const tenantId: string = me.data.user.tenant_id;
  // The admin is one of the tenant's users. A few creations at a time: each hashes a password.
  const toCreate = Array.from({ length: users - 1 }, (_, index) => index);
  const lanes = 4;
  await Promise.all(
    Array.from({ length: lanes }, async (_, lane) => {
      for (const index of toCreate.filter((value) => value % lanes === lane)) {
        await call(base, "POST", "/api/v1/users", token, {
          email: `agent-${String(index).padStart(3, "0")}@bench.test`,
          password: USER_PASSWORD,
          role: "agent",
        });
      }
    }),
  );
  const page = await call(base, "GET", "/api/v1/users?limit=50", token);
  return {
    token,
    tenantId,
    firstPageIds: idsOf(page),
    total: page.total,
  };
}

// biome-ignore lint/suspicious/noExplicitAny: an envelope from the API or the raw reference.
const idsOf = (body: any): string[] =>
  (body?.data?.items ?? []).map((item: { id: string }) => item.id);

/**
 * One request before the load: it must succeed, and a users page must hold the seeded rows
 * in the app's order, so that the app and its raw reference are known to do the same work.
 */
export async function checkTarget(
  url: string,
  headers: Record<string, string>,
  expectedIds?: readonly string[],
): Promise<void> {
  const response = await fetch(url, { headers });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`GET ${url} answered ${response.status}: ${text}`);
  if (!expectedIds) return;
  const ids = idsOf(JSON.parse(text));
  if (ids.length !== expectedIds.length || ids.some((id, index) => id !== expectedIds[index])) {
    throw new Error(`GET ${url} listed other users than GET /api/v1/users?limit=50`);
  }
}
