import { beforeEach, describe, expect, test } from "bun:test";
import { Value } from "@sinclair/typebox/value";
import fc from "fast-check";
import {
  holdsUnstorableText,
  isStorableText,
  storableText,
  UNSTORABLE_TEXT,
  unstorableTextPaths,
} from "../../src/lib/storable-text.ts";
import { createWorkspace } from "../helpers/app.ts";
import { importFile } from "../helpers/leads.ts";
import { listenOnLoopback, openSocket } from "../helpers/sockets.ts";

type Workspace = Awaited<ReturnType<typeof createWorkspace>>;
let w: Workspace;
let adminToken: string;
beforeEach(async () => {
  w = await createWorkspace();
  adminToken = await w.login("admin@acme.test");
});

const refusal = (message: string, field: string) => ({
  status: "error",
  code: "invalid_request",
  message,
  request_id: expect.any(String),
  field_errors: [{ field, message: UNSTORABLE_TEXT }],
});

describe("text the database cannot store is refused as a client error", () => {
  test("a NUL in an edge node's name is 400 naming the field, not 500", async () => {
    const response = await w.request("POST", "/api/v1/edge-nodes", {
      token: adminToken,
      body: { name: "edge\u0000one", max_concurrent_calls: 5 },
    });
    expect(response.status).toBe(400);
    expect(response.body).toEqual(refusal("invalid request body", "name"));
  });

  test("a NUL or a lone surrogate in a campaign's new name is 400", async () => {
    const created = await w.request("POST", "/api/v1/campaigns", {
      token: adminToken,
      body: { name: "Spring" },
    });
    const { id, version } = created.body.data.campaign;
    for (const name of ["Spring\u0000", "Spring \ud800", "\udc00 Spring"]) {
      const response = await w.request("PATCH", `/api/v1/campaigns/${id}`, {
        token: adminToken,
        body: { name, version },
      });
      expect(response.status).toBe(400);
      expect(response.body).toEqual(refusal("invalid request body", "name"));
    }
    const nested = await w.request("PATCH", `/api/v1/campaigns/${id}`, {
      token: adminToken,
      body: { calling_window: { start: "08:00\u0000", end: "20:00" }, version },
    });
    expect(nested.status).toBe(400);
  });

  test("query and path parameters keep their own messages", async () => {
    const search = await w.request("GET", "/api/v1/dnc?phone=a%00b", { token: adminToken });
    expect(search.status).toBe(400);
    expect(search.body).toEqual(refusal("invalid query parameters", "phone"));
    // Pagination never fails: a bad limit is the default.
    const page = await w.request("GET", "/api/v1/campaigns?limit=%00&offset=%ED", {
      token: adminToken,
    });
    expect(page.status).toBe(200);
    expect(page.body.limit).toBe(50);
    const rootToken = await w.login("root@platform.test");
    const tenant = await w.request("GET", "/api/v1/campaigns?tenant_id=a%00b", {
      token: rootToken,
    });
    expect(tenant.status).toBeLessThan(500);
    const path = await w.request("GET", "/api/v1/campaigns/a%00b", { token: adminToken });
    expect(path.status).toBe(400);
    expect(path.body).toEqual(refusal("invalid path parameters", "id"));
  });

  test("the check comes after authentication", async () => {
    const response = await w.request("POST", "/api/v1/edge-nodes", {
      body: { name: "edge\u0000one", max_concurrent_calls: 5 },
    });
    expect(response.status).toBe(401);
  });

  test("an import's form fields, file name and cells", async () => {
    const campaign = await w.request("POST", "/api/v1/campaigns", {
      token: adminToken,
      body: { name: "Imports" },
    });
    const list = await w.request(
      "POST",
      `/api/v1/campaigns/${campaign.body.data.campaign.id}/lead-lists`,
      { token: adminToken, body: { name: "Main", caller_id: "+14155550100" } },
    );
    const path = `/api/v1/campaigns/${campaign.body.data.campaign.id}/lead-lists/${list.body.data.lead_list.id}/import`;
    const csv = "phone,timezone\n+14155552671,America/Chicago\n";
    const field = await importFile(w, path, adminToken, csv, {
      phone_column: "phone",
      timezone_column: "timezone",
      default_region: "U\u0000S",
    });
    expect(field.status).toBe(400);
    expect(field.body.field_errors).toContainEqual({
      field: "default_region",
      message: UNSTORABLE_TEXT,
    });
    const named = await importFile(w, path, adminToken, csv, undefined, "leads\u0000.csv");
    expect(named.status).toBe(400);
    expect(named.body.field_errors[0].field).toBe("file");
    const cell = await importFile(
      w,
      path,
      adminToken,
      "phone,timezone,name\n+14155552671,America/Chicago,A\u0000nn\n",
    );
    expect(cell.status).toBe(400);
    expect(cell.body.field_errors[0].field).toBe("file");
    const leads = await w.request("GET", path.replace(/import$/, "leads"), { token: adminToken });
    expect(leads.body.total).toBe(0);
  });

  test("a socket message with a NUL is answered with an error naming the field", async () => {
    await w.user(w.acme.id, "agent@acme.test", "agent");
    const agentToken = await w.login("agent@acme.test");
    const listening = listenOnLoopback(w);
    try {
      const agent = await openSocket(listening.wsUrl("/ws/agent", agentToken));
      agent.send(JSON.stringify({ type: "ready", campaign_id: "abc\u0000" }));
      expect(await agent.next("error")).toEqual({
        type: "error",
        code: "invalid_request",
        message: "invalid message",
        field_errors: [{ field: "campaign_id", message: UNSTORABLE_TEXT }],
      });
      agent.socket.close();
    } finally {
      listening.stop();
    }
  });
});

/** A TypeBox schema as the app's routes carry it; only the parts walked here are named. */
interface Schema {
  type?: string;
  properties?: Record<string, Schema>;
}

/** Paths to every string property of an object schema, nested objects included. */
function stringPaths(schema: Schema | undefined, prefix: string[] = []): string[][] {
  if (!schema?.properties) return [];
  return Object.entries(schema.properties).flatMap(([name, property]) =>
    property.type === "string"
      ? [[...prefix, name]]
      : property.type === "object"
        ? stringPaths(property, [...prefix, name])
        : [],
  );
}

/** A value the schema accepts where TypeBox can make one; the injected string does the rest. */
function baseValue(schema: Schema): Record<string, unknown> {
  try {
    const value = Value.Create(schema as Parameters<typeof Value.Create>[0]);
    return typeof value === "object" && value !== null ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function withString(base: Record<string, unknown>, path: string[], text: string) {
  const copy = structuredClone(base);
  let target: Record<string, unknown> = copy;
  for (const key of path.slice(0, -1)) {
    if (typeof target[key] !== "object" || target[key] === null) target[key] = {};
    target = target[key] as Record<string, unknown>;
  }
  target[path.at(-1) as string] = text;
  return copy;
}

/** Text the database cannot store: a NUL or a lone surrogate somewhere in any string. */
const unstorable = fc
  .tuple(fc.string(), fc.constantFrom("\u0000", "\ud800", "\udfff"), fc.string())
  .map(([before, bad, after]) => before + bad + after);

const concretePath = (path: string) => path.replace(/:[a-z_]+/g, () => crypto.randomUUID());

describe("property: no route lets unstorable text through", () => {
  test("every body and query string field of every route: 400, never a 5xx", async () => {
    const rootToken = await w.login("root@platform.test");
    const nodeKey = (
      await w.request("POST", "/api/v1/edge-nodes", {
        token: adminToken,
        body: { name: "edge", max_concurrent_calls: 5 },
      })
    ).body.data.key as string;
    let checked = 0;
    for (const route of w.app.routes) {
      if (!["POST", "PATCH", "PUT", "DELETE", "GET"].includes(route.method)) continue;
      if (route.path.startsWith("/ws/") || route.path === "/docs") continue;
      const hooks = route.hooks as {
        body?: Schema;
        query?: Schema;
        detail?: Record<string, unknown>;
      };
      const permission = hooks.detail?.["x-permission"];
      const token =
        permission === "node" ? nodeKey : permission === "public" ? undefined : rootToken;
      const bodyPaths = stringPaths(hooks.body);
      const queryNames = stringPaths(hooks.query)
        .map((path) => path.join("."))
        // Pagination falls back to its defaults instead; tenant_id is checked by authentication.
        .filter((name) => !["tenant_id", "limit", "offset"].includes(name));
      if (bodyPaths.length === 0 && queryNames.length === 0) continue;
      checked++;
      const base = hooks.body ? baseValue(hooks.body) : undefined;
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(
            ...(bodyPaths.length
              ? [fc.record({ body: fc.constantFrom(...bodyPaths), text: unstorable })]
              : []),
            ...(queryNames.length
              ? [fc.record({ query: fc.constantFrom(...queryNames), text: fc.string() })]
              : []),
          ),
          async (injected) => {
            const label = `${route.method} ${route.path}`;
            let url = concretePath(route.path);
            let body: unknown = base;
            if ("body" in injected) body = withString(base ?? {}, injected.body, injected.text);
            else url += `?${injected.query}=${encodeURIComponent(injected.text)}%00`;
            const response = await w.request(route.method, url, {
              token,
              body: route.method === "GET" || route.method === "DELETE" ? undefined : body,
            });
            expect([label, response.status]).toEqual([label, 400]);
            expect(response.body.code).toBe("invalid_request");
          },
        ),
        { numRuns: 8 },
      );
    }
    expect(checked).toBeGreaterThan(15);
  });
});

describe("the check every request passes through", () => {
  test("finds unstorable text at any depth, in values and keys, as the full walk does", () => {
    const nest = (depth: number, inner: unknown): unknown =>
      depth === 0 ? inner : nest(depth - 1, { a: [inner] });
    for (const depth of [0, 1, 31, 32, 33, 200]) {
      for (const inner of ["fine", "n\u0000l", "\ud800", { "k\u0000": 1 }, [1, true, null]]) {
        const value = nest(depth, inner);
        expect([depth, holdsUnstorableText(value)]).toEqual([
          depth,
          unstorableTextPaths(value).length > 0,
        ]);
      }
    }
  });
});

describe("text from outside, kept rather than refused", () => {
  test("is mended where the database cannot store it, and left as it is otherwise", () => {
    expect(storableText("ok\u0000nul")).toBe("ok\uFFFDnul");
    expect(storableText("cut \uD83D")).toBe("cut \uFFFD");
    expect(storableText("fine \uD83D\uDE00")).toBe("fine \uD83D\uDE00");
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), (text) => isStorableText(storableText(text))),
    );
  });
});
