import { beforeEach, describe, expect, test } from "bun:test";
import { createWorkspace } from "../helpers/app.ts";

let w: Awaited<ReturnType<typeof createWorkspace>>;
beforeEach(async () => {
  w = await createWorkspace();
});

const expectEnvelopeError = (body: Record<string, unknown>, code: string) => {
  expect(body.status).toBe("error");
  expect(body.code).toBe(code);
  expect(typeof body.message).toBe("string");
  expect(typeof body.request_id).toBe("string");
  expect(body.data).toBeUndefined();
};

describe("the envelope", () => {
  test("an unknown route is a 404 in the envelope with the request id header", async () => {
    const response = await w.request("GET", "/api/v1/no-such-thing");
    expect(response.status).toBe(404);
    expectEnvelopeError(response.body, "not_found");
    expect(response.headers.get("x-request-id")).toBe(response.body.request_id);
    // The same media type as every success body.
    expect(response.headers.get("content-type")).toBe("application/json;charset=utf-8");
  });

  test("a list answered whole keeps its limit within 1–500, even when empty", async () => {
    await w.user(w.acme.id, "agent@acme.test", "agent");
    const token = await w.login("agent@acme.test");
    const history = await w.request("GET", "/api/v1/agents/me/history", { token });
    expect(history.status).toBe(200);
    expect(history.body).toMatchObject({ data: { items: [] }, total: 0, limit: 1, offset: 0 });
  });

  test("every success response carries X-Request-Id too", async () => {
    const token = await w.login("admin@acme.test");
    const response = await w.request("GET", "/api/v1/auth/me", { token });
    expect(response.status).toBe(200);
    expect(response.body.status).toBe("success");
    const id = response.headers.get("x-request-id");
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-z]+$/);
    const again = await w.request("GET", "/api/v1/auth/me", { token });
    expect(again.headers.get("x-request-id")).not.toBe(id);
  });

  test("every kind of response carries X-Request-Id: pages, documents, errors of each phase", async () => {
    const token = await w.login("admin@acme.test");
    const requests: [string, string, Parameters<typeof w.request>[2]][] = [
      ["GET", "/", {}],
      ["GET", "/api/v1/openapi.json", {}],
      ["GET", "/api/v1/asyncapi.json", {}],
      ["GET", "/api/v1/users", {}],
      ["GET", "/api/v1/users?limit=abc", { token }],
      [
        "POST",
        "/api/v1/auth/login",
        { rawBody: "{", headers: { "content-type": "application/json" } },
      ],
      [
        "POST",
        "/api/v1/campaigns",
        { token, rawBody: "x", headers: { "content-type": "text/plain" } },
      ],
      ["POST", "/api/v1/campaigns", { token, body: { name: "" } }],
    ];
    for (const [method, path, options] of requests) {
      const response = await w.request(method, path, options);
      expect(`${method} ${path} ${response.headers.get("x-request-id")}`).toMatch(
        /^\S+ \S+ [0-9a-f]{8}-[0-9a-z]+$/,
      );
    }
  });

  test("a sane incoming X-Request-Id is kept; an unsafe one is replaced", async () => {
    const kept = await w.request("GET", "/nope", { headers: { "x-request-id": "trace-12345678" } });
    expect(kept.headers.get("x-request-id")).toBe("trace-12345678");
    expect(kept.body.request_id).toBe("trace-12345678");
    const replaced = await w.request("GET", "/nope", { headers: { "x-request-id": "<script>" } });
    expect(replaced.headers.get("x-request-id")).not.toBe("<script>");
  });

  test("unparsable JSON is 400 invalid request body", async () => {
    const response = await w.request("POST", "/api/v1/auth/login", {
      rawBody: "{not json",
      headers: { "content-type": "application/json" },
    });
    expect(response.status).toBe(400);
    expectEnvelopeError(response.body, "invalid_request");
    expect(response.body.message).toBe("invalid request body");
  });

  test("a JSON body over 1 MiB is 413 before parsing", async () => {
    const big = JSON.stringify({ email: "a@b.c", password: "x".repeat(1024 * 1024) });
    const response = await w.request("POST", "/api/v1/auth/login", {
      rawBody: big,
      headers: { "content-type": "application/json" },
    });
    expect(response.status).toBe(413);
    expectEnvelopeError(response.body, "payload_too_large");
  });

  test("a declared Content-Length over 1 MiB is 413, and a declared small body is parsed", async () => {
    const big = JSON.stringify({ email: "a@b.c", password: "x".repeat(1024 * 1024) });
    const refused = await w.request("POST", "/api/v1/auth/login", {
      rawBody: big,
      headers: { "content-type": "application/json", "content-length": String(big.length) },
    });
    expect(refused.status).toBe(413);
    expectEnvelopeError(refused.body, "payload_too_large");
    const small = JSON.stringify({ email: "nobody@example.com" });
    const parsed = await w.request("POST", "/api/v1/auth/login", {
      rawBody: small,
      headers: { "content-type": "application/json", "content-length": String(small.length) },
    });
    expect(parsed.status).toBe(400);
    expect(parsed.body.field_errors).toContainEqual({
      field: "password",
      message: expect.any(String),
    });
  });

  test("a body of another media type is 415", async () => {
    const response = await w.request("POST", "/api/v1/auth/login", {
      rawBody: "email=a",
      headers: { "content-type": "text/plain" },
    });
    expect(response.status).toBe(415);
    expectEnvelopeError(response.body, "unsupported_media_type");
  });

  test("a missing body or missing field is 400 with field errors", async () => {
    const empty = await w.request("POST", "/api/v1/auth/login");
    expect(empty.status).toBe(400);
    expectEnvelopeError(empty.body, "invalid_request");
    const missing = await w.request("POST", "/api/v1/auth/login", { body: { email: "a@b.c" } });
    expect(missing.status).toBe(400);
    expect(missing.body.message).toBe("invalid request body");
    expect(missing.body.field_errors).toContainEqual({
      field: "password",
      message: expect.any(String),
    });
  });

  test("unknown body fields are rejected, one field error each", async () => {
    const response = await w.request("POST", "/api/v1/auth/login", {
      body: { email: "admin@acme.test", password: "whatever-password", extra: 1, other: "x" },
    });
    expect(response.status).toBe(400);
    expect(response.body.message).toBe("invalid request body");
    const fields = response.body.field_errors.map((e: { field: string }) => e.field).sort();
    expect(fields).toEqual(["extra", "other"]);
  });

  test("wrongly typed values name the field", async () => {
    const response = await w.request("POST", "/api/v1/auth/login", {
      body: { email: 5, password: true },
    });
    expect(response.status).toBe(400);
    const fields = response.body.field_errors.map((e: { field: string }) => e.field).sort();
    expect(fields).toEqual(["email", "password"]);
  });

  test("a JSON array or scalar body is 400, not 500", async () => {
    for (const rawBody of ["[]", "42", "null", '"text"']) {
      const response = await w.request("POST", "/api/v1/auth/login", {
        rawBody,
        headers: { "content-type": "application/json" },
      });
      expect(response.status).toBe(400);
      expectEnvelopeError(response.body, "invalid_request");
    }
  });
});
