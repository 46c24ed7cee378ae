import { beforeEach, describe, expect, test } from "bun:test";
import { MAX_JSON_BYTES, MAX_JSON_DEPTH } from "../../src/plugins/json-body.ts";
import { createWorkspace } from "../helpers/app.ts";

let w: Awaited<ReturnType<typeof createWorkspace>>;
beforeEach(async () => {
  w = await createWorkspace();
});

const TEN_MB = 10 * 1024 * 1024;
const CHUNK = 64 * 1024;

/** A body of `size` bytes produced on demand, with a count of the bytes the app pulled. */
function countedBody(size: number, fill = "a") {
  const pulled = { bytes: 0 };
  const chunk = new TextEncoder().encode(fill.repeat(CHUNK));
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (pulled.bytes >= size) return controller.close();
      pulled.bytes += chunk.byteLength;
      controller.enqueue(chunk);
    },
  });
  return { stream, pulled };
}

async function send(
  path: string,
  headers: Record<string, string>,
  body: ReadableStream<Uint8Array> | string,
) {
  const response = await w.app.handle(
    new Request(`http://localhost${path}`, { method: "POST", headers, body }),
  );
  // biome-ignore lint/suspicious/noExplicitAny: test assertions read arbitrary JSON.
  const decoded: any = await response.json();
  return { status: response.status, body: decoded };
}

const ROUTES = ["/api/v1/campaigns", "/api/v1/auth/login"];

describe("request bodies are capped before authentication, whatever their media type", () => {
  for (const path of ROUTES) {
    for (const type of [
      "application/x-www-form-urlencoded",
      "text/plain",
      "application/octet-stream",
    ]) {
      test(`10 MB of ${type} to ${path} is refused without reading it`, async () => {
        const { stream, pulled } = countedBody(TEN_MB, type.includes("form") ? "a=b&" : "x");
        const response = await send(path, { "content-type": type }, stream);
        expect(response.status).toBe(415);
        expect(response.body).toMatchObject({ status: "error", code: "unsupported_media_type" });
        expect(pulled.bytes).toBeLessThanOrEqual(MAX_JSON_BYTES + CHUNK);
      });
    }

    test(`10 MB of urlencoded with its length declared, to ${path}, is 415`, async () => {
      const form = "a=".concat("b".repeat(TEN_MB));
      const response = await send(
        path,
        {
          "content-type": "application/x-www-form-urlencoded",
          "content-length": String(form.length),
        },
        form,
      );
      expect(response.status).toBe(415);
      expect(response.body.code).toBe("unsupported_media_type");
    });

    test(`a chunked JSON body to ${path} is counted and cut at the cap`, async () => {
      const { stream, pulled } = countedBody(TEN_MB);
      const response = await send(path, { "content-type": "application/json" }, stream);
      expect(response.status).toBe(413);
      expect(response.body.code).toBe("payload_too_large");
      expect(pulled.bytes).toBeLessThanOrEqual(MAX_JSON_BYTES + 2 * CHUNK);
    });

    test(`a multipart body to ${path} is refused without being buffered`, async () => {
      const { stream, pulled } = countedBody(TEN_MB);
      const response = await send(
        path,
        { "content-type": "multipart/form-data; boundary=xyz" },
        stream,
      );
      expect([400, 401]).toContain(response.status);
      expect(response.body.status).toBe("error");
      expect(pulled.bytes).toBeLessThanOrEqual(MAX_JSON_BYTES + CHUNK);
    });

    test(`a multipart body to ${path} with a valid token is 400, unread`, async () => {
      const token = await w.login("admin@acme.test");
      const { stream, pulled } = countedBody(TEN_MB);
      const response = await send(
        path,
        { "content-type": "multipart/form-data; boundary=xyz", authorization: `Bearer ${token}` },
        stream,
      );
      expect(response.status).toBe(400);
      expect(response.body.code).toBe("invalid_request");
      expect(pulled.bytes).toBeLessThanOrEqual(CHUNK);
    });
  }

  test("a declared length smaller than the body sent is measured again", async () => {
    const big = JSON.stringify({ email: "a@b.c", password: "x".repeat(2 * MAX_JSON_BYTES) });
    const response = await send(
      "/api/v1/auth/login",
      { "content-type": "application/json", "content-length": "100" },
      big,
    );
    expect([400, 413]).toContain(response.status);
    expect(response.status).not.toBe(200);
  });

  test("an empty form body is no body, not a 415", async () => {
    const response = await send(
      "/api/v1/auth/logout",
      { "content-type": "application/x-www-form-urlencoded", "content-length": "0" },
      "",
    );
    expect(response.status).toBe(401);
  });
});

describe("a body that is missing or unreadable is judged after the credentials", () => {
  const bodies: [string, Record<string, string>, string | undefined][] = [
    ["no body and no type", {}, undefined],
    ["JSON declared, nothing sent", { "content-type": "application/json" }, undefined],
    [
      "an empty form, as curl -d '' sends",
      { "content-type": "application/x-www-form-urlencoded", "content-length": "0" },
      "",
    ],
    ["malformed JSON", { "content-type": "application/json" }, "{bad"],
    ["bytes that are not UTF-8", { "content-type": "application/json" }, "\xff\xfe"],
  ];
  const post = async (path: string, headers: Record<string, string>, body?: string) => {
    const bytes = body === undefined ? undefined : Uint8Array.from(body, (c) => c.charCodeAt(0));
    const response = await w.app.handle(
      new Request(`http://localhost${path}`, { method: "POST", headers, body: bytes }),
    );
    // biome-ignore lint/suspicious/noExplicitAny: test assertions read arbitrary JSON.
    const decoded: any = await response.json();
    return { status: response.status, body: decoded };
  };

  for (const [what, headers, body] of bodies) {
    test(`${what}: 401 without credentials, 403 without the permission, 400 naming the fields with both`, async () => {
      expect((await post("/api/v1/campaigns", headers, body)).status).toBe(401);
      expect((await post("/api/v1/nodes/heartbeat", headers, body)).status).toBe(401);
      await w.user(w.acme.id, "agent@acme.test", "agent");
      const agent = await w.login("agent@acme.test");
      const refused = await post(
        "/api/v1/campaigns",
        { ...headers, authorization: `Bearer ${agent}` },
        body,
      );
      expect(refused.status).toBe(403);
      const admin = await w.login("admin@acme.test");
      const judged = await post(
        "/api/v1/campaigns",
        { ...headers, authorization: `Bearer ${admin}` },
        body,
      );
      expect([judged.status, judged.body.code]).toEqual([400, "invalid_request"]);
      const named = judged.body.field_errors.map((error: { field: string }) => error.field);
      expect(named).toEqual(body?.trim() ? ["body"] : ["name"]);
    });
  }

  test("a body nested deeper than any the API takes is refused before it is parsed", async () => {
    const admin = await w.login("admin@acme.test");
    // Unrefused, validating it held the process for seconds, then failed (500).
    const deep = `{"name":"x","calling_window":${"[".repeat(200_000)}${"]".repeat(200_000)}}`;
    const refused = await post(
      "/api/v1/campaigns",
      { "content-type": "application/json", authorization: `Bearer ${admin}` },
      deep,
    );
    expect([refused.status, refused.body.field_errors]).toEqual([
      400,
      [{ field: "body", message: `must nest at most ${MAX_JSON_DEPTH} levels deep` }],
    ]);
    // Brackets inside strings are text, not nesting.
    const quoted = await post(
      "/api/v1/campaigns",
      { "content-type": "application/json", authorization: `Bearer ${admin}` },
      JSON.stringify({ name: `[{"\\${"[".repeat(100)}` }),
    );
    expect(quoted.status).toBe(201);
  });

  test("a route without credentials refuses malformed JSON as such", async () => {
    const login = await post("/api/v1/auth/login", { "content-type": "application/json" }, "{x");
    expect([login.status, login.body.field_errors]).toEqual([
      400,
      [{ field: "body", message: "must be valid JSON" }],
    ]);
  });
});
