import { Elysia } from "elysia";

const html = Bun.file(new URL("./index.html", import.meta.url).pathname);
const script = Bun.file(new URL("./dashboard.js", import.meta.url).pathname);

/** Left out of the API document; open to anyone, the page signs in by itself. */
const publicFile = { detail: { hide: true, ["x-permission" as string]: "public" } };

/** The supervisor dashboard: a page and a script, served as they are. */
export const dashboardModule = new Elysia({ name: "dashboard" })
  .get(
    "/",
    () => new Response(html, { headers: { "content-type": "text/html; charset=utf-8" } }),
    publicFile,
  )
  .get(
    "/dashboard.js",
    () => new Response(script, { headers: { "content-type": "text/javascript; charset=utf-8" } }),
    publicFile,
  );
