import { beforeAll, describe, expect, test } from "bun:test";
import { gunzipSync } from "bun";
import { createHarness, type Harness } from "../helpers/app.ts";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});

const get = (path: string, headers: Record<string, string> = {}) =>
  h.app.handle(new Request(`http://localhost${path}`, { headers }));

describe("console pages", () => {
  test("every console address answers the page, with a strict policy and no inline script", async () => {
    for (const path of [
      "/",
      "/signin",
      "/agent",
      "/campaigns/x/lists/y",
      "/admin/users",
      "/tenants",
    ]) {
      const response = await get(path);
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toContain("text/html");
      expect(response.headers.get("cache-control")).toBe("no-cache");
      const policy = response.headers.get("content-security-policy") ?? "";
      expect(policy).toContain("script-src 'self'");
      expect(policy).toContain("style-src 'self'");
      expect(policy).not.toContain("unsafe-inline");
      const page = await response.text();
      expect(page).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/);
      expect(page).not.toContain("<style");
    }
  }, 30_000);

  test("hashed assets are cached for a year, gzipped for browsers that take it, and unknown names are 404", async () => {
    const page = await (await get("/")).text();
    const script = /src="(\/console\/main-[a-z0-9]+\.js)"/.exec(page)?.[1] as string;
    const stylesheet = /href="(\/console\/main-[a-z0-9]+\.css)"/.exec(page)?.[1] as string;
    expect(script).toBeDefined();
    expect(stylesheet).toBeDefined();
    const plain = await get(script);
    expect(plain.status).toBe(200);
    expect(plain.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(plain.headers.get("content-type")).toContain("javascript");
    const text = await plain.text();
    const gzipped = await get(script, { "accept-encoding": "gzip, br" });
    expect(gzipped.headers.get("content-encoding")).toBe("gzip");
    expect(new TextDecoder().decode(gunzipSync(new Uint8Array(await gzipped.arrayBuffer())))).toBe(
      text,
    );
    expect((await get(stylesheet)).headers.get("content-type")).toContain("css");
    expect((await get("/console/main-unknown.js")).status).toBe(404);
  }, 30_000);

  test("the bundle carries the campaign machine's actions and none of the server's modules", async () => {
    const page = await (await get("/")).text();
    const script = /src="(\/console\/main-[a-z0-9]+\.js)"/.exec(page)?.[1] as string;
    const bundle = await (await get(script)).text();
    expect(/"?paused"?:\["start","stop"\]/.test(bundle)).toBe(true);
    // Node's `Buffer` as a word: a browser's `arrayBuffer()` is not it.
    const foreign = ["drizzle", "pgTable", "xstate", "elysia"].filter((name) =>
      bundle.includes(name),
    );
    if (/\bBuffer\b/.test(bundle)) foreign.push("Buffer");
    expect(foreign).toEqual([]);
    // Preact, signals and the console: small enough for a phone on a slow line (about a
    // third of this once gzipped, as it is served).
    expect(bundle.length).toBeLessThan(130_000);
  }, 30_000);
});
