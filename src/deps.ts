import type { Clock } from "../actors/ports.ts";
import type { CampaignRegistry } from "../actors/registry.ts";
import type { TenantRegistry } from "../actors/tenant-registry.ts";
import type { DatabaseAvailability } from "../db/availability.ts";
import type { Database, RawClient } from "../db/client.ts";
import type { StatusChange } from "../db/queries/campaigns.ts";
import type { Config } from "./config.ts";
import type { AgentBoard } from "./dialer/agents.ts";
import type { ClaimReplies } from "./dialer/claim-replies.ts";
import type { Pacing } from "./dialer/pacing.ts";
import type { PacerTuning } from "./dialer/predictive.ts";
import type { CredentialDirectory } from "./identity/credentials.ts";
import type { RateLimiter } from "./identity/rate-limiter.ts";
import type { SharedRateCounts } from "./identity/shared-rate-counts.ts";
import type { TokenService } from "./identity/tokens.ts";
import type { GroupCommit } from "./lib/group-commit.ts";
import type { KeyedMutex } from "./lib/keyed-mutex.ts";
import type { Logger } from "./logger.ts";
import type { RealtimeHub } from "./realtime/hub.ts";

/** What services are given. They never see a request context. */
import type { Resolve } from "./webhooks/addresses.ts";
import type { WebhookDispatcher } from "./webhooks/dispatcher.ts";

export interface ServiceDeps {
  db: Database;
  /** The same database for long work (reports over many rows, clean-ups), off the hot path's connections. */
  longWorkDb: Database;
  /** The driver itself, for bulk work Drizzle does not do (COPY). */
  rawDb: RawClient;
  /** Whether the database answers; `/readyz` and the 503s of an outage follow it. */
  availability: DatabaseAvailability;
  /**
   * `/readyz` turns load balancers away until the campaigns this process owns are restored
   * (`restored`) and from the start of a drain (`accepting`).
   */
  lifecycle: { accepting: boolean; restored: boolean };
  config: Config;
  clock: Clock;
  logger: Logger;
  tokens: TokenService;
  /** The live tenant actors: settings and users' state, read on every request. */
  tenants: TenantRegistry;
  /** The live campaign actors. */
  campaigns: CampaignRegistry;
  /** API keys and node keys by digest, and batched `last_used_at` writes. */
  credentials: CredentialDirectory;
  /** Per-key request counts over the rolling minute. */
  rateLimiter: RateLimiter;
  /** Failed logins per client address over the rolling minute; successes are never counted. */
  loginThrottle: RateLimiter;
  /**
   * On PostgreSQL, the flushes that count both limiters across the processes sharing the
   * database, started by the caller; undefined on PGlite (one process).
   */
  sharedRateCounts: SharedRateCounts | undefined;
  /**
   * Agents' presence, fair-share cursors per tenant, and the
   * predictive pacer's tuning (the defaults; the simulator tries others).
   */
  dialer: {
    agents: AgentBoard;
    cursors: Map<string, number>;
    pacer: PacerTuning;
    /**
     * Each campaign's last pacing decision and when it was made (the simulator charts it).
     * Kept beside the actors: claims probe pacing several times a second per campaign.
     */
    paced: Map<string, Pacing & { at: number }>;
    /** Keyed claims' jobs of the last minute, for a node whose reply was lost. */
    claimReplies: ClaimReplies;
  };
  /** Pushes state changes to supervisor and agent sockets. */
  realtime: RealtimeHub;
  /** Serialises login attempts per account so the lockout counts exactly. */
  loginGate: KeyedMutex;
  /** Serialises imports per lead list within this process (the database locks across processes). */
  importGate: KeyedMutex;
  /** Status changes of different campaigns, committed together under load; true if applied. */
  statusCommits: GroupCommit<StatusChange, boolean>;
  /** Delivers the outbox of webhook events; started by the server, not by tests that skip it. */
  webhooks: { dispatcher: WebhookDispatcher; resolve: Resolve };
}

/** Facts about the request a service records (audit) but does not decide on. */
export interface RequestMeta {
  requestId: string;
  ip?: string | undefined;
}
