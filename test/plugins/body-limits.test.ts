import { beforeEach, describe, expect, test } from "bun:test";
import { MAX_JSON_BYTES } from "../../src/plugins/json-body.ts";
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
