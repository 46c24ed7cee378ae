import { openapi } from "@elysiajs/openapi";
import { Elysia } from "elysia";
import { campaignMachine } from "../actors/campaign.machine.ts";
import type { Clock } from "../actors/ports.ts";
import { CampaignRegistry } from "../actors/registry.ts";
import { TenantRegistry } from "../actors/tenant-registry.ts";
import type { DatabaseHandle } from "../db/client.ts";
import { campaignPort, statusCommitsOn } from "./campaign/port.ts";
import { type CampaignLeases, localLeases } from "./cluster/leases.ts";
import { forwarderOf, ownerCommandsModule } from "./cluster/owner.ts";
import type { Config } from "./config.ts";
import { consoleModule } from "./console/server.ts";
import type { ServiceDeps } from "./deps.ts";
import { AgentBoard } from "./dialer/agents.ts";
import { ClaimReplies } from "./dialer/claim-replies.ts";
import { PACER_DEFAULTS } from "./dialer/predictive.ts";
import { CredentialDirectory } from "./identity/credentials.ts";
import { RateLimiter } from "./identity/rate-limiter.ts";
import { sharedRateCountsOf } from "./identity/shared-rate-counts.ts";
import { TokenService } from "./identity/tokens.ts";
import { KeyedMutex } from "./lib/keyed-mutex.ts";
import type { Logger } from "./logger.ts";
import { agentsModule } from "./modules/agents/index.ts";
import { alertsModule } from "./modules/alerts/index.ts";
import { apiKeysModule } from "./modules/api-keys/index.ts";
import { auditModule } from "./modules/audit/index.ts";
import { authModule } from "./modules/auth/index.ts";
import { campaignsModule } from "./modules/campaigns/index.ts";
import { campaignStatsFor } from "./modules/campaigns/service.ts";
import { campaignStore } from "./modules/campaigns/store.ts";
import { cdrsModule } from "./modules/cdrs/index.ts";
import { dncModule } from "./modules/dnc/index.ts";
import { edgeNodesModule, nodeProtocolModule } from "./modules/edge-nodes/index.ts";
import { healthModule } from "./modules/health/index.ts";
import { leadsModule } from "./modules/leads/index.ts";
import { messagesModule } from "./modules/messages/index.ts";
import { tenantsModule } from "./modules/tenants/index.ts";
import { tenantStore } from "./modules/tenants/store.ts";
import { usersModule } from "./modules/users/index.ts";
import { webhooksModule } from "./modules/webhooks/index.ts";
import { documentOptionalBodies } from "./openapi-bodies.ts";
import { authPlugin } from "./plugins/auth.ts";
import { DOCS_ASSETS_PATH, docsAssetsModule } from "./plugins/docs-assets.ts";
import { errorsPlugin } from "./plugins/errors.ts";
import { jsonBodyPlugin } from "./plugins/json-body.ts";
import { requestIdPlugin } from "./plugins/request-id.ts";
import { storableTextPlugin } from "./plugins/storable-text.ts";
import { asyncApiModule } from "./realtime/asyncapi.ts";
import { connectRealtime } from "./realtime/events.ts";
import { RealtimeHub } from "./realtime/hub.ts";
import { realtimeModule, SOCKET_LIMITS } from "./realtime/routes.ts";
import { type Resolve, systemResolve } from "./webhooks/addresses.ts";
import { dispatchLimitsFor, WebhookDispatcher } from "./webhooks/dispatcher.ts";
import { webhooksDocumentation } from "./webhooks/events.ts";

export interface ServiceDepsInput {
  database: DatabaseHandle;
  config: Config;
  clock: Clock;
  logger: Logger;
  jwtSecret: string;
  /**
   * Which campaigns this process owns: by default all of them, as one process alone on its
   * database; a server on PostgreSQL shares them with the other processes (`campaignLeasesFor`).
   */
  leases?: CampaignLeases;
  /** How webhook hosts are resolved: the system's resolver unless a test changes DNS. */
  resolve?: Resolve;
}

/** The outbox's dispatcher and the resolver its addresses are checked with. */
function webhooksOf(
  input: ServiceDepsInput,
  toSupervisors: RealtimeHub["toSupervisors"],
): ServiceDeps["webhooks"] {
  const resolve = input.resolve ?? systemResolve;
  const dispatcher = new WebhookDispatcher(
    {
      // Off the request path's few connections: a backlog of deliveries never queues a call.
      db: input.database.longWork,
      clock: input.clock,
      logger: input.logger,
      realtime: { toSupervisors },
      resolve,
      allowPrivateNetworks: input.config.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
      retryWindowMs: input.config.WEBHOOK_RETRY_HOURS * 3_600_000,
      disableAfterMs: input.config.WEBHOOK_DISABLE_AFTER_HOURS * 3_600_000,
    },
    dispatchLimitsFor(input.database.raw.kind),
  );
  return { resolve, dispatcher };
}

export function createServiceDeps(input: ServiceDepsInput): ServiceDeps {
  const deps: ServiceDeps = {
    db: input.database.db,
    longWorkDb: input.database.longWork,
    rawDb: input.database.raw,
    availability: input.database.availability,
    lifecycle: { accepting: true, restored: true },
    config: input.config,
    clock: input.clock,
    logger: input.logger,
    tokens: new TokenService(input.jwtSecret, input.config.AUTH_JWT_TTL_SECONDS, input.clock),
    tenants: new TenantRegistry(tenantStore(input.database.db), input.logger),
    campaigns: new CampaignRegistry(
      campaignStore(input.database.db),
      input.clock,
      input.logger,
      campaignMachine,
      input.leases ?? localLeases(),
    ),
    credentials: new CredentialDirectory(input.database.db, input.logger, {
      now: () => input.clock.now(),
    }),
    rateLimiter: new RateLimiter(),
    loginThrottle: new RateLimiter(),
    sharedRateCounts: undefined,
    dialer: {
      agents: new AgentBoard({
        raw: input.database.raw,
        clock: input.clock,
        logger: input.logger,
        availability: input.database.availability,
        graceMs: input.config.AGENT_DISCONNECT_GRACE_SECONDS * 1000,
      }),
      cursors: new Map(),
      pacer: PACER_DEFAULTS,
      paced: new Map(),
      claimReplies: new ClaimReplies(input.clock.now()),
    },
    realtime: new RealtimeHub(input.logger, (tenantId, campaignId) =>
      campaignStatsFor(deps, tenantId, campaignId),
    ),
    loginGate: new KeyedMutex(),
    importGate: new KeyedMutex(),
    statusCommits: statusCommitsOn(input.database.raw),
    webhooks: webhooksOf(input, (tenantId, message) =>
      deps.realtime.toSupervisors(tenantId, message),
    ),
  };
  deps.campaigns.connect(campaignPort(deps), forwarderOf(deps));
  deps.sharedRateCounts = sharedRateCountsOf(deps);
  connectRealtime(deps);
  return deps;
}

const SPEC_PATH = "/api/v1/openapi.json";

const documentation = {
  info: {
    title: "Dialer engine API",
    version: "1.0.0",
    description:
      "Multi-tenant outbound dialing: workspaces, users, campaigns, lead lists and calls. " +
      "Every response uses the envelope `{status, data}` or `{status, message, code, request_id, field_errors}`.",
    license: { name: "MIT", identifier: "MIT" },
  },
  servers: [{ url: "/" }],
  components: {
    securitySchemes: {
      bearer: { type: "http" as const, scheme: "bearer", bearerFormat: "JWT or svc_key_…" },
    },
  },
  security: [{ bearer: [] }],
  webhooks: webhooksDocumentation(),
};

/** Composes the HTTP application; the caller decides whether and where it listens. */
export function createApp(deps: ServiceDeps) {
  const auth = authPlugin(deps, () => app.server);
  const app = new Elysia({ normalize: false, websocket: SOCKET_LIMITS })
    .use(requestIdPlugin)
    .use(errorsPlugin(deps.logger, deps.availability))
    .use(jsonBodyPlugin)
    .use(storableTextPlugin)
    .onAfterHandle(({ path, response }) => {
      if (path === SPEC_PATH) documentOptionalBodies(response);
    })
    .use(
      openapi({
        path: "/docs",
        specPath: SPEC_PATH,
        documentation,
        // Routes with a dot are kept (an import's `rejected.csv`); the documents are not.
        exclude: { paths: ["/docs", SPEC_PATH], staticFile: false },
        provider: "swagger-ui",
        swagger: {
          cdn: `${DOCS_ASSETS_PATH}/swagger-ui-bundle.js`,
          theme: `${DOCS_ASSETS_PATH}/swagger-ui.css`,
          autoDarkMode: false,
          // No call to swagger.io's validator.
          validatorUrl: "none",
          // The document from the root, so that /docs/ finds it too (the plugin's own is
          // relative; its types leave `url` out, its page takes it).
          ...({ url: SPEC_PATH } as object),
        },
      }),
    )
    .use(docsAssetsModule)
    .use(healthModule(deps))
    .use(authModule(deps, auth))
    .use(tenantsModule(deps, auth))
    .use(usersModule(deps, auth))
    .use(campaignsModule(deps, auth))
    .use(messagesModule(deps, auth))
    .use(leadsModule(deps, auth))
    .use(apiKeysModule(deps, auth))
    .use(edgeNodesModule(deps, auth))
    .use(nodeProtocolModule(deps, auth))
    .use(agentsModule(deps, auth))
    .use(cdrsModule(deps, auth))
    .use(dncModule(deps, auth))
    .use(auditModule(deps, auth))
    .use(alertsModule(deps, auth))
    .use(webhooksModule(deps, auth))
    .use(realtimeModule(deps))
    .use(ownerCommandsModule(deps))
    .use(asyncApiModule)
    .use(consoleModule());
  return app;
}

export type App = ReturnType<typeof createApp>;
