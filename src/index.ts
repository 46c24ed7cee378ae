import { systemClock } from "../actors/ports.ts";
import { openDatabase } from "../db/client.ts";
import { runMigrations, withStartupLock } from "../db/migrate.ts";
import { createApp, createServiceDeps } from "./app.ts";
import { ensurePlatformAdmin, resolveJwtSecret } from "./bootstrap.ts";
import { connectChangeFeed } from "./cluster/change-feed.ts";
import { campaignLeasesFor } from "./cluster/leases.ts";
import { closeOwnerEnd, closeOwnerLinks } from "./cluster/owner.ts";
import { connectPushRelay } from "./cluster/push-relay.ts";
import { rebalance } from "./cluster/rebalance.ts";
import { ConfigError, loadConfig } from "./config.ts";
import { DEADLINE_SWEEP_MS, sweepAgentDeadlines } from "./dialer/agent-deadlines.ts";
import { sweepExpiredCalls } from "./dialer/calls.ts";
import { forgetStaleClaimKeys } from "./dialer/claims.ts";
import { forgetOldNodeCommands } from "./dialer/node-commands.ts";
import { expireGraces, restorePresence } from "./dialer/presence.ts";
import { createLogger } from "./logger.ts";
import { ALERT_SWEEP_MS, sweepAlerts } from "./modules/alerts/service.ts";
import { deleteExpiredReplies } from "./modules/campaigns/service.ts";

/** How often expired calls, agents' deadlines and idempotency records are swept. */
const SWEEP_MS = 5_000;
/** How often a process looks for campaigns whose owner is gone. */
const ORPHAN_SWEEP_MS = 1_000;

/** This process's address for the others on its host: loopback when it listens on every interface. */
const advertisedUrl = (host: string, port: number) =>
  `http://${host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host.includes(":") ? `[${host}]` : host}:${port}`;

/**
 * SIGTERM and SIGINT handlers, installed before anything else: installed only once the server
 * listened, a signal sent right as it said so could still meet the default action and end it
 * without a drain. Until the drain is ready, a signal ends the start at once, as it always did.
 */
function stopSignals(): (drain: (signal: string) => void) => void {
  let drain: ((signal: string) => void) | undefined;
  for (const [signal, code] of [
    ["SIGTERM", 143],
    ["SIGINT", 130],
  ] as const) {
    process.on(signal, () => (drain ? drain(signal) : process.exit(code)));
  }
  return (handler) => {
    drain = handler;
  };
}

async function main() {
  const onStop = stopSignals();
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`configuration error: ${error.message}`);
      process.exit(2);
    }
    throw error;
  }
  const logger = createLogger(config.LOG_LEVEL);
  // A promise nobody awaited that failed (a background write while the database is away) is
  // a defect to log, not a reason to drop every call and socket this process holds.
  process.on("unhandledRejection", (error) =>
    logger.error("a background task failed and nothing handled it", { error }),
  );
  const database = await openDatabase({
    databaseUrl: config.DATABASE_URL,
    dataDir: config.DATA_DIR,
    poolSize: config.DATABASE_POOL_SIZE,
    timeoutMs: config.DATABASE_TIMEOUT_MS,
    statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
    longStatementTimeoutMs: config.DATABASE_LONG_STATEMENT_TIMEOUT_MS,
    onAvailabilityChange: (available, reason) =>
      available
        ? logger.info("database available again")
        : logger.error("database unavailable: requests answer 503 until it is back", { reason }),
  });
  const { jwtSecret, bootstrap } = await withStartupLock(database, async () => {
    await runMigrations(database);
    const now = new Date(systemClock.now());
    return {
      jwtSecret: await resolveJwtSecret(database.db, config, logger, now),
      bootstrap: await ensurePlatformAdmin(database.db, config, now),
    };
  });
  // PGlite's first start leaves hundreds of MiB of garbage that only a full collection frees.
  Bun.gc(true);
  if (bootstrap) {
    logger.info("created the platform admin", { email: bootstrap.email });
    if (bootstrap.password) {
      // Printed once, on the console only and apart from the JSON log lines, so the operator
      // sees it and can sign in the first time.
      const rule = "-".repeat(64);
      console.log(
        [
          "",
          rule,
          "  The platform admin, created now. The password is shown this once:",
          `    e-mail:    ${bootstrap.email}`,
          `    password:  ${bootstrap.password}`,
          "  Sign in with it and change it.",
          rule,
          "",
        ].join("\n"),
      );
    }
  }
  const deps = createServiceDeps({
    database,
    config,
    clock: systemClock,
    logger,
    jwtSecret,
    leases: campaignLeasesFor(database, logger),
  });
  database.availability.start();
  deps.sharedRateCounts?.start();
  const stopChangeFeed = await connectChangeFeed(deps);
  const pushRelay = await connectPushRelay(deps);
  // After the feed connects, so that a change committed meanwhile by another process is heard.
  const agents = await restorePresence(deps);
  logger.info("agents restored", { agents });
  // Listening first: processes that share the database forward commands to the address this
  // process takes its leases under, and `/readyz` says not ready until they are restored.
  deps.lifecycle.restored = false;
  const app = createApp(deps).listen({
    port: config.PORT,
    hostname: config.HOST,
    // Above the import cap, so that the import itself answers 413 in the envelope.
    maxRequestBodySize: config.IMPORT_MAX_BYTES + 16 * 1024 * 1024,
  });
  const server = app.server;
  deps.realtime.attach(server ?? undefined);
  const leases = deps.campaigns.leases;
  leases.ownerUrl = config.ADVERTISE_URL ?? advertisedUrl(config.HOST, server?.port ?? config.PORT);
  const hydrateStarted = performance.now();
  const restored = await deps.campaigns.hydrateActive();
  leases.start();
  deps.lifecycle.restored = true;
  logger.info("campaign actors restored", {
    campaigns: restored,
    milliseconds: Math.round(performance.now() - hydrateStarted),
  });
  logger.info(`listening on http://${server?.hostname}:${server?.port}`, {
    database: database.kind,
    data_dir: database.kind === "pglite" ? config.DATA_DIR : undefined,
    ...(leases.shared ? { advertised: leases.ownerUrl } : {}),
  });

  // Calls whose lease ran out are failed and their leads retried; agents whose grace ran out
  // are signed out; idempotency records past their window are deleted, a little at every sweep
  // rather than many at once, and idle campaigns' actors forget theirs.
  // Campaigns whose owner stopped renewing its lease (it died) are taken within a second of
  // the lease's end, by whichever process gets there first.
  let adopting = false;
  const orphanSweeper = leases.shared
    ? setInterval(() => {
        if (adopting || !database.availability.available) return;
        adopting = true;
        deps.campaigns
          .adoptOrphans()
          .catch((error) => logger.warn("orphaned campaigns could not be taken", { error }))
          .finally(() => {
            adopting = false;
          });
      }, ORPHAN_SWEEP_MS)
    : undefined;

  // A process that runs fewer campaigns than its share (it started later, or the others took
  // its campaigns while it was away) asks the busiest for some. Each process looks at its own
  // pace, within a quarter of the setting either way, so that they rarely look at once.
  let rebalancing = false;
  const rebalanceMs = config.CAMPAIGN_REBALANCE_SECONDS * 1000 * (0.75 + Math.random() / 2);
  const rebalancer =
    leases.shared && rebalanceMs > 0
      ? setInterval(() => {
          if (rebalancing || !database.availability.available) return;
          rebalancing = true;
          rebalance(deps)
            .catch((error) => logger.warn("campaigns could not be rebalanced", { error }))
            .finally(() => {
              rebalancing = false;
            });
        }, rebalanceMs)
      : undefined;

  let cleaning = false;
  const sweeper = setInterval(() => {
    // The sweeps resume by themselves once the database is back.
    if (!database.availability.available) return;
    sweepExpiredCalls(deps).catch((error) => logger.error("lease sweep failed", { error }));
    // Agents held by this process's sockets keep their state; those of no process lose it.
    deps.dialer.agents.renewGraces();
    expireGraces(deps).catch((error) => logger.error("agents' grace sweep failed", { error }));
    forgetOldNodeCommands(deps).catch((error) =>
      logger.error("node commands' clean-up failed", { error }),
    );
    forgetStaleClaimKeys(deps).catch((error) =>
      logger.error("claim keys' clean-up failed", { error }),
    );
    try {
      deps.campaigns.forgetIdleReplies(SWEEP_MS);
    } catch (error) {
      logger.error("idle windows' clean-up failed", { error });
    }
    if (cleaning) return;
    cleaning = true;
    deleteExpiredReplies(deps)
      .catch((error) => logger.error("idempotency clean-up failed", { error }))
      .finally(() => {
        cleaning = false;
      });
  }, SWEEP_MS);

  let sweepingAlerts = false;
  const alertSweeper = setInterval(() => {
    if (sweepingAlerts || !database.availability.available) return;
    sweepingAlerts = true;
    sweepAlerts(deps)
      .catch((error) => logger.error("alerts' sweep failed", { error }))
      .finally(() => {
        sweepingAlerts = false;
      });
  }, ALERT_SWEEP_MS);

  // Wrap-ups and breaths after calls that ran out end at their campaign's limits.
  let sweepingDeadlines = false;
  const deadlineSweeper = setInterval(() => {
    if (sweepingDeadlines || !database.availability.available) return;
    sweepingDeadlines = true;
    sweepAgentDeadlines(deps)
      .catch((error) => logger.error("agents' deadline sweep failed", { error }))
      .finally(() => {
        sweepingDeadlines = false;
      });
  }, DEADLINE_SWEEP_MS);

  // Every process delivers webhooks; the outbox gives each event to one of them.
  deps.webhooks.dispatcher.start();

  let stopping = false;
  const drain = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    deps.lifecycle.accepting = false;
    logger.info("draining", { signal });
    clearInterval(sweeper);
    clearInterval(alertSweeper);
    clearInterval(deadlineSweeper);
    clearInterval(orphanSweeper);
    clearInterval(rebalancer);
    // The campaigns go to the other processes at once: a command still running here has its
    // write refused by its fence and goes to the new owner.
    await leases.releaseAll().catch((error) => logger.warn("leases not released", { error }));
    deps.realtime.close();
    // The server stops once every socket is closed, other processes' command links included.
    await closeOwnerEnd(deps);
    // stop() without force stops accepting and resolves once in-flight requests are answered.
    await server?.stop(false);
    closeOwnerLinks(deps);
    await deps.dialer.agents.settled();
    await deps.webhooks.dispatcher.stop();
    await stopChangeFeed().catch(() => undefined);
    await pushRelay.stop().catch(() => undefined);
    await deps.sharedRateCounts?.stop();
    deps.campaigns.stopAll();
    deps.tenants.stopAll();
    await deps.credentials.close();
    await database.close();
    logger.info("stopped");
    process.exit(0);
  };
  onStop((signal) => void drain(signal));
}

await main();
