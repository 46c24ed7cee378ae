import { dirname, join } from "node:path";
import { Elysia } from "elysia";

/**
 * The API reference's renderer, served from the server's own copy (`swagger-ui-dist`, pinned in
 * package.json), so that `/docs` works without the internet and loads nothing from a
 * third party.
 */
const ASSETS = {
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
  "swagger-ui.css": "text/css; charset=utf-8",
} as const;

const directory = dirname(Bun.resolveSync("swagger-ui-dist/package.json", import.meta.dir));

export const DOCS_ASSETS_PATH = "/docs/assets";

const served = (file: keyof typeof ASSETS) => () =>
  new Response(Bun.file(join(directory, file)), {
    headers: { "content-type": ASSETS[file], "cache-control": "public, max-age=86400" },
  });
const hidden = { detail: { hide: true, ["x-permission" as string]: "public" } };

/** One fixed route per file: nothing else of the package is reachable. */
export const docsAssetsModule = new Elysia({ name: "docs-assets" })
  .get(`${DOCS_ASSETS_PATH}/swagger-ui-bundle.js`, served("swagger-ui-bundle.js"), hidden)
  .get(`${DOCS_ASSETS_PATH}/swagger-ui.css`, served("swagger-ui.css"), hidden);
