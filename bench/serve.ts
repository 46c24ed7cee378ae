/**
 * Reference servers for bench/http.ts, one per process, listening on 127.0.0.1:$PORT:
 *
 *   bun bench/serve.ts bare            GET /bare: a constant small JSON object
 *   bun bench/serve.ts bare-request-id the same with an X-Request-Id header, as the API sends
 *   bun bench/serve.ts raw-postgres    GET /users: the users page as prepared postgres.js queries
 *   bun bench/serve.ts raw-pglite      GET /users: the same SQL through pglite.query()
 *
 * The raw servers read DATABASE_URL or DATA_DIR, and TENANT_ID (the tenant whose users the
 * app lists for the benchmark's admin). They answer with the app's list envelope, so that the
 * only difference from GET /api/v1/users is the app's own work.
 */
import { PGlite } from "@electric-sql/pglite";
import { type AnyElysia, Elysia } from "elysia";
import postgres from "postgres";
import { defaultPoolSize } from "../db/client.ts";

// The columns of the API's user view, and the app's order: newest first, ties broken by id.
const COLUMNS = [
  "id",
  "tenant_id",
  "email",
  "role",
  "status",
  "must_change_password",
  "created_at",
  "updated_at",
] as const;
const ITEMS_SQL = `select ${COLUMNS.join(", ")}
  from users where tenant_id = $1 order by created_at desc, id desc limit $2 offset $3`;
const TOTAL_SQL = "select count(*)::int as total from users where tenant_id = $1";

interface UsersPage {
  items: unknown[];
  total: number;
}
type UsersQuery = (tenantId: string, limit: number, offset: number) => Promise<UsersPage>;

function postgresQuery(url: string): { query: UsersQuery; close: () => Promise<void> } {
  // The app's pool size, so that both sides may have the same number of queries in flight.
  const sql = postgres(url, { max: defaultPoolSize(), prepare: true, onnotice: () => {} });
  const query: UsersQuery = async (tenantId, limit, offset) => {
    // unsafe() with parameters still goes through a named prepared statement (prepare: true).
    const [items, totals] = await Promise.all([
      sql.unsafe(ITEMS_SQL, [tenantId, limit, offset], { prepare: true }),
      sql.unsafe<{ total: number }[]>(TOTAL_SQL, [tenantId], { prepare: true }),
    ]);
    return { items: [...items], total: totals[0]?.total ?? 0 };
  };
  return { query, close: () => sql.end({ timeout: 5 }) };
}

/** Array rows turned into objects here: PGlite builds object rows about 25% slower itself. */
const objectOf = (row: unknown[]) =>
  Object.fromEntries(COLUMNS.map((column, index) => [column, row[index]]));

async function pgliteQuery(
  dataDir: string,
): Promise<{ query: UsersQuery; close: () => Promise<void> }> {
  // Opened exactly as db/client.ts opens it. PGlite has no named prepared statements to
  // reuse: query() runs parse/bind/execute every time, so this is the nearest reference.
  const client = await PGlite.create(dataDir);
  const query: UsersQuery = async (tenantId, limit, offset) => {
    const [items, totals] = await Promise.all([
      client.query<unknown[]>(ITEMS_SQL, [tenantId, limit, offset], { rowMode: "array" }),
      client.query<{ total: number }>(TOTAL_SQL, [tenantId]),
    ]);
    return { items: items.rows.map(objectOf), total: totals.rows[0]?.total ?? 0 };
  };
  return { query, close: () => client.close() };
}

function usersApp(query: UsersQuery, tenantId: string) {
  return new Elysia().get("/users", async ({ query: params }) => {
    const limit = Number(params.limit ?? 50);
    const offset = Number(params.offset ?? 0);
    const { items, total } = await query(tenantId, limit, offset);
    return { status: "success", data: { items }, total, limit, offset };
  });
}

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
}

interface Server {
  app: AnyElysia;
  close: () => Promise<void>;
}

async function build(mode: string | undefined): Promise<Server | undefined> {
  if (mode === "bare") {
    const app = new Elysia().get("/bare", () => ({ status: "success", data: { ok: true } }));
    return { app, close: async () => {} };
  }
  if (mode === "bare-request-id") {
    let served = 0;
    const app = new Elysia().get("/bare", ({ set }) => {
      set.headers["x-request-id"] = `bench-${(++served).toString(36)}`;
      return { status: "success", data: { ok: true } };
    });
    return { app, close: async () => {} };
  }
  if (mode === "raw-postgres" || mode === "raw-pglite") {
    const database =
      mode === "raw-postgres"
        ? postgresQuery(required("DATABASE_URL"))
        : await pgliteQuery(required("DATA_DIR"));
    return { app: usersApp(database.query, required("TENANT_ID")), close: database.close };
  }
  return undefined;
}

async function main(mode: string | undefined): Promise<void> {
  const port = Number(required("PORT"));
  const server = await build(mode);
  if (!server) {
    console.error("usage: bun bench/serve.ts bare|bare-request-id|raw-postgres|raw-pglite");
    process.exit(2);
  }
  const { app, close } = server;
  app.listen({ hostname: "127.0.0.1", port });
  console.log(`listening on ${app.server?.port}`);
  const stop = async () => {
    await app.server?.stop(false);
    await close();
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop());
  process.on("SIGINT", () => void stop());
}

await main(process.argv[2]);
