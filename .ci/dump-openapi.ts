/**
 * Writes the OpenAPI document the app serves at /api/v1/openapi.json to the file named by
 * the first argument, pretty-printed, so that CI can lint it.
 *
 *   bun .ci/dump-openapi.ts <out.json>
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

async function main(outFile: string | undefined): Promise<number> {
  if (!outFile) {
    console.error("usage: bun .ci/dump-openapi.ts <out.json>");
    return 2;
  }
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
    const response = await createApp(deps).handle(new Request(`http://localhost${SPEC_PATH}`));
    const text = await response.text();
    if (response.status !== 200) {
      console.error(`GET ${SPEC_PATH} answered ${response.status}: ${text.slice(0, 500)}`);
      return 1;
    }
    let document: unknown;
    try {
      document = JSON.parse(text);
    } catch {
      console.error(`GET ${SPEC_PATH} did not return JSON: ${text.slice(0, 500)}`);
      return 1;
    }
    writeFileSync(outFile, `${JSON.stringify(document, null, 2)}\n`);
    console.log(`wrote the OpenAPI document to ${outFile}`);
    return 0;
  } finally {
    await handle.close();
  }
}

main(process.argv[2]).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
