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

export const docsAssetsModule = new Elysia({ name: "docs-assets" }).get(
  `${DOCS_ASSETS_PATH}/:file`,
  ({ params, set }) => {
    const type = ASSETS[params.file as keyof typeof ASSETS];
    if (!type) {
      set.status = 404;
      return "not found";
    }
    return new Response(Bun.file(join(directory, params.file)), {
      headers: { "content-type": type, "cache-control": "public, max-age=86400" },
    });
  },
  { detail: { hide: true, ["x-permission" as string]: "public" } },
);
