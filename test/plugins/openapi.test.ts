import { beforeAll, describe, expect, test } from "bun:test";
import { createHarness, type Harness } from "../helpers/app.ts";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});

describe("API documentation", () => {
  test("the reference page loads the document from the root, with or without a slash, and calls out to no one", async () => {
    for (const path of ["/docs", "/docs/"]) {
      const response = await h.app.handle(new Request(`http://localhost${path}`));
      const page = await response.text();
      expect({ path, status: response.status }).toEqual({ path, status: 200 });
      expect(page).toContain('"url":"/api/v1/openapi.json"');
      expect(page).toContain('"validatorUrl":"none"');
      expect(page.match(/(src|href)="https?:/g)).toBeNull();
    }
    const icon = await h.app.handle(new Request("http://localhost/favicon.ico"));
    expect(icon.status).toBe(200);
    expect(icon.headers.get("content-type")).toBe("image/svg+xml");
  });

  test("the OpenAPI document lists the routes with their request schemas", async () => {
    const response = await h.request("GET", "/api/v1/openapi.json");
    expect(response.status).toBe(200);
    const document = response.body;
    expect(document.openapi).toMatch(/^3\./);
    for (const path of [
      "/api/v1/auth/login",
      "/api/v1/auth/me",
      "/api/v1/users",
      "/api/v1/users/{id}",
      "/api/v1/tenants",
    ]) {
      expect(Object.keys(document.paths)).toContain(path);
    }
    const login = document.paths["/api/v1/auth/login"].post;
    const schema = login.requestBody.content["application/json"].schema;
    expect(schema.required).toEqual(expect.arrayContaining(["email", "password"]));
    expect(schema.additionalProperties).toBe(false);
    expect(login.requestBody.required).toBe(true);
    // A command whose fields are all optional may be sent without a body.
    const rotate = document.paths["/api/v1/webhooks/{id}/rotate-secret"].post;
    expect(rotate.requestBody.required).toBe(false);
  });

  test("every route describes its success body, and the resources' routes their errors", async () => {
    const response = await h.request("GET", "/api/v1/openapi.json");
    const paths = response.body.paths;
    const bodyOf = (path: string, method: string, status: string) =>
      paths[path][method].responses[status].content["application/json"].schema;
    const created = bodyOf("/api/v1/campaigns", "post", "201");
    expect(created.properties.status.const).toBe("success");
    expect(created.properties.data.properties.campaign.required).toContain("calling_window");
    const page = bodyOf("/api/v1/campaigns/{id}/lead-lists/{list_id}/leads", "get", "200");
    expect(page.required).toEqual(["status", "data", "total", "limit", "offset"]);
    expect(page.properties.data.properties.items.items.properties.state.anyOf).toHaveLength(8);
    expect(bodyOf("/api/v1/users", "get", "4XX").required).toContain("request_id");
    // Every route, the node protocol and the probes included, names its success body.
    const undocumented = Object.entries(
      paths as Record<string, Record<string, { responses?: Record<string, { content?: object }> }>>,
    )
      .flatMap(([path, operations]) =>
        Object.entries(operations).map(([method, operation]) => ({ path, method, operation })),
      )
      .filter(
        ({ operation }) =>
          !Object.entries(operation.responses ?? {}).some(
            ([status, response]) =>
              status.startsWith("2") && Object.keys(response.content ?? {}).length > 0,
          ),
      )
      .map(({ path, method }) => `${method} ${path}`);
    expect(undocumented).toEqual([]);
  });

  test("what the routes answer beyond JSON, and beyond the caller's errors, is described", async () => {
    const paths = (await h.request("GET", "/api/v1/openapi.json")).body.paths;
    // Every operation says it may meet the database away (503) or the unforeseen (500).
    const without5xx = Object.entries(
      paths as Record<string, Record<string, { responses?: object }>>,
    )
      .flatMap(([path, operations]) =>
        Object.entries(operations)
          .filter(([, operation]) => !("5XX" in (operation.responses ?? {})))
          .map(([method]) => `${method} ${path}`),
      )
      .filter((operation) => !operation.includes("healthz") && !operation.includes("readyz"));
    expect(without5xx).toEqual([]);
    // The CSV exports, the route whose path has a dot, and the CSV upload.
    expect(Object.keys(paths["/api/v1/cdrs"].get.responses[200].content)).toEqual([
      "application/json",
      "text/csv",
    ]);
    expect(
      Object.keys(paths["/api/v1/campaigns/{id}/compliance"].get.responses[200].content),
    ).toEqual(["application/json", "text/csv"]);
    const rejected =
      paths["/api/v1/campaigns/{id}/lead-lists/{list_id}/imports/{import_id}/rejected.csv"];
    expect(Object.keys(rejected.get.responses[200].content)).toEqual(["text/csv"]);
    expect(paths["/api/v1/dnc/import"].post.requestBody.content).toEqual({
      "text/csv": { schema: { type: "string" } },
    });
    // A recording's first version is created, a later one replaces it.
    expect(Object.keys(paths["/api/v1/campaigns/{id}/messages/{kind}"].put.responses)).toEqual(
      expect.arrayContaining(["200", "201"]),
    );
    // Who asks decides what /auth/me answers: a user, or an API key.
    const me = paths["/api/v1/auth/me"].get.responses[200].content["application/json"].schema;
    expect(
      me.properties.data.anyOf.map((shape: { required: string[] }) => shape.required.sort()),
    ).toEqual([
      ["tenant", "user"],
      ["api_key", "tenant"],
    ]);
  });

  test("a docs page is served at /docs, its renderer from the server itself", async () => {
    const response = await h.request("GET", "/docs");
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("text/html");
    const page = await h.app.handle(new Request("http://localhost/docs"));
    const html = await page.text();
    // Nothing from another host: the page works without the internet.
    expect(html.match(/(src|href)="[^"]+"/g)).toEqual([
      'href="/docs/assets/swagger-ui.css"',
      'src="/docs/assets/swagger-ui-bundle.js"',
    ]);
    for (const [asset, type] of [
      ["swagger-ui-bundle.js", "text/javascript"],
      ["swagger-ui.css", "text/css"],
    ] as const) {
      const served = await h.app.handle(new Request(`http://localhost/docs/assets/${asset}`));
      expect(served.status).toBe(200);
      expect(served.headers.get("content-type")).toContain(type);
      expect((await served.arrayBuffer()).byteLength).toBeGreaterThan(10_000);
    }
    const other = await h.app.handle(new Request("http://localhost/docs/assets/package.json"));
    expect(other.status).toBe(404);
  });
});

describe("AsyncAPI document", () => {
  test("describes both sockets and every message type", async () => {
    const response = await h.request("GET", "/api/v1/asyncapi.json");
    expect(response.status).toBe(200);
    expect(response.body.asyncapi).toBe("3.0.0");
    expect(response.body.channels.supervisor.address).toBe("/ws/supervisor");
    expect(response.body.channels.agent.address).toBe("/ws/agent");
    const names = Object.values(response.body.components.messages).map(
      (m) => (m as { name: string }).name,
    );
    for (const name of [
      "campaign.status",
      "campaign.stats",
      "agent.state",
      "call.event",
      "call.offered",
      "call.connected",
      "call.ended",
    ]) {
      expect(names).toContain(name);
    }
  });
});
