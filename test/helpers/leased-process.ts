import type { Clock } from "../../actors/ports.ts";
import { createApp, createServiceDeps } from "../../src/app.ts";
import { PostgresLeases } from "../../src/cluster/leases.ts";
import { loadConfig } from "../../src/config.ts";
import { silentLogger } from "../../src/logger.ts";
import { TEST_SECRET } from "./app.ts";
import { testDatabase } from "./database.ts";
import { listenOnLoopback } from "./sockets.ts";

/**
 * One more process's services on the suite's PostgreSQL database, in this test process: its
 * own campaign leases (renewed), listening on loopback under the address it leases at.
 * `stop` stops renewing, drops its actors and closes its server; a second call does nothing.
 */
export async function startLeasedProcess(clock: Clock) {
  const database = await testDatabase();
  const leases = new PostgresLeases(database.raw, silentLogger, crypto.randomUUID(), "");
  const deps = createServiceDeps({
    database,
    config: loadConfig({ AUTH_JWT_SECRET: TEST_SECRET }),
    clock,
    logger: silentLogger,
    jwtSecret: TEST_SECRET,
    leases,
  });
  const listening = listenOnLoopback({ deps, app: createApp(deps) });
  leases.ownerUrl = listening.baseUrl;
  leases.start();
  let stopped = false;
  return {
    deps,
    leases,
    server: listening.server,
    url: listening.baseUrl,
    wsUrl: listening.wsUrl,
    async stop() {
      if (stopped) return;
      stopped = true;
      leases.stop();
      deps.campaigns.stopAll();
      await listening.stop();
    },
  };
}
