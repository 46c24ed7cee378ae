/**
 * Writes a document the app serves (the OpenAPI document at /api/v1/openapi.json unless another
 * path is given, e.g. /api/v1/asyncapi.json) to the file named by the first argument,
 * pretty-printed, so that CI can lint it.
 *
 *   bun .ci/dump-openapi.ts <out.json> [path]
 *
 * The app is built in-process over an in-memory database; nothing listens on a port.
 */
import { writeFileSync } from "node:fs";
import { systemClock } from "../actors/ports.ts";
import { openDatabase } from "../db/client.ts";
import { runMigrations } from "../db/migrate.ts";
import { createApp, createServiceDeps } from "../src/app.ts";
import { loadConfig } from "../src/config.ts";
import { silentLogger } from "../src/logger.ts";

const SPEC_PATH = "/api/v1/openapi.json";

/** The JSON document the app answers at `path`; throws when it answers anything else. */
export async function servedDocument(path: string): Promise<unknown> {
  // A throwaway secret: the document does not depend on it, but the config requires 32+ bytes.
  const secret = "x".repeat(40);
  const handle = await openDatabase({ dataDir: "memory://" });
  try {
    await runMigrations(handle);
    const deps = createServiceDeps({
      database: handle,
      config: loadConfig({ AUTH_JWT_SECRET: secret }),
      clock: systemClock,
      logger: silentLogger,
      jwtSecret: secret,
    });
    const response = await createApp(deps).handle(new Request(`http://localhost${path}`));
    const text = await response.text();
    if (response.status !== 200) {
      throw new Error(`GET ${path} answered ${response.status}: ${text.slice(0, 500)}`);
    }
    try {
      return JSON.parse(text);
    } catch {
      throw new Error(`GET ${path} did not return JSON: ${text.slice(0, 500)}`);
    }
  } finally {
    await handle.close();
  }
}

async function main(outFile: string | undefined, path = SPEC_PATH): Promise<number> {
  if (!outFile) {
    console.error("usage: bun .ci/dump-openapi.ts <out.json> [path]");
    return 2;
  }
  const document = await servedDocument(path);
  writeFileSync(outFile, `${JSON.stringify(document, null, 2)}\n`);
  console.log(`wrote ${path} to ${outFile}`);
  return 0;
}

if (import.meta.main) {
  main(process.argv[2], process.argv[3]).then(
    (code) => process.exit(code),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
