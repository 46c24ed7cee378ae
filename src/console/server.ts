import { Elysia } from "elysia";
import { consoleFacts } from "./facts.ts";
import { FAVICON_DATA_URL, FAVICON_SVG } from "./favicon.ts";

/** Every address the console answers with its page; the browser routes among them. */
export const CONSOLE_PATHS = [
  "/",
  "/signin",
  "/agent",
  "/campaigns",
  "/campaigns/*",
  "/cdrs",
  "/dnc",
  "/admin/*",
  "/tenants",
] as const;

const ASSET_PREFIX = "/console/";

interface Asset {
  body: Uint8Array;
  /** The same bytes gzipped once at build, for the browsers that take it (all of them). */
  gzipped: Uint8Array;
  type: string;
}

interface Bundle {
  page: string;
  assets: Map<string, Asset>;
}

/**
 * Bundles the console with Bun's own bundler once, on the first request for it: a hashed
 * script and stylesheet, and the page that names them. The domain facts the console needs are
 * compiled in from the shared schemas.
 */
async function bundle(): Promise<Bundle> {
  const built = await Bun.build({
    entrypoints: [new URL("./client/main.tsx", import.meta.url).pathname],
    target: "browser",
    minify: true,
    naming: "[name]-[hash].[ext]",
    define: {
      CONSOLE_FACTS: JSON.stringify(consoleFacts()),
      "process.env.NODE_ENV": '"production"',
    },
  });
  if (!built.success) throw new AggregateError(built.logs, "the console did not build");
  const assets = new Map<string, Asset>();
  const tags: string[] = [];
  for (const output of built.outputs) {
    const name = output.path.replace(/^\.\//, "");
    const body = new Uint8Array(await output.arrayBuffer());
    assets.set(name, { body, gzipped: Bun.gzipSync(body), type: output.type });
    if (name.endsWith(".css")) tags.push(`<link rel="stylesheet" href="${ASSET_PREFIX}${name}">`);
    if (output.kind === "entry-point")
      tags.push(`<script type="module" src="${ASSET_PREFIX}${name}"></script>`);
  }
  const page = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Dialer engine console</title>
<link rel="icon" href="${FAVICON_DATA_URL}">
${tags.join("\n")}
</head>
<body>
<div id="console"></div>
</body>
</html>
`;
  return { page, assets };
}

let built: Promise<Bundle> | undefined;
const consoleBundle = () => {
  built ??= bundle().catch((error) => {
    built = undefined;
    throw error;
  });
  return built;
};

/** No inline script or style, no other origin: the console talks to this server alone. */
function contentSecurityPolicy(request: Request): string {
  const host = new URL(request.url).host;
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data: blob:",
    `connect-src 'self' ws://${host} wss://${host}`,
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; ");
}

/** Left out of the API document; open to anyone, the page signs in by itself. */
const publicFile = { detail: { hide: true, ["x-permission" as string]: "public" } };

async function servePage({ request }: { request: Request }) {
  const { page } = await consoleBundle();
  return new Response(page, {
    headers: {
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-cache",
      "content-security-policy": contentSecurityPolicy(request),
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
    },
  });
}

/** The console of every role: one page at each of its addresses, and its hashed assets. */
export function consoleModule() {
  const app = new Elysia({ name: "console" }).get(
    // A wildcard, not a parameter: the name of a public file, never an id of a tenant's object.
    `${ASSET_PREFIX}*`,
    async ({ params, request }) => {
      const asset = (await consoleBundle()).assets.get(params["*"]);
      if (!asset) return new Response("not found", { status: 404 });
      const gzip = /\bgzip\b/.test(request.headers.get("accept-encoding") ?? "");
      return new Response(gzip ? asset.gzipped : asset.body, {
        headers: {
          "content-type": asset.type,
          ...(gzip ? { "content-encoding": "gzip" } : {}),
          vary: "accept-encoding",
          // The name carries the content's hash: a new build is a new name.
          "cache-control": "public, max-age=31536000, immutable",
          "x-content-type-options": "nosniff",
        },
      });
    },
    publicFile,
  );
  // Registered one by one on the same instance: the route table is all that changes.
  for (const path of CONSOLE_PATHS) app.get(path, servePage, publicFile);
  // What a browser asks for on a page that names no icon (the API reference).
  app.get(
    "/favicon.ico",
    () =>
      new Response(FAVICON_SVG, {
        headers: { "content-type": "image/svg+xml", "cache-control": "public, max-age=86400" },
      }),
    publicFile,
  );
  return app;
}
