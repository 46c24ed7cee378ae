import { beforeAll, describe, expect, test } from "bun:test";
import { createHarness, type Harness } from "../helpers/app.ts";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});

describe("API documentation", () => {
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
  });

  test("a docs page is served at /docs", async () => {
    const response = await h.request("GET", "/docs");
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("text/html");
  });
});
