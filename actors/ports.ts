import type { RestorableContext } from "./campaign.machine.ts";
import type { DialingState } from "./dialing.ts";
import type { LiveUser, TenantContext } from "./tenant.machine.ts";

/** What machines and services may ask the world for. Tests supply controlled versions. */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** Where campaign actors come back from: the committed rows and their open idempotency keys. */
export interface CampaignStore {
  load(campaignId: string, now: number): Promise<RestorableContext | undefined>;
  /** Every campaign that must be live at start (running or paused). */
  loadActive(now: number): Promise<RestorableContext[]>;
  /**
   * A campaign's dialing state as committed: calls in flight, leads by state, recent calls,
   * and its compliance ledger over the 30 days before `now`.
   */
  loadDialing(campaignId: string, now: number): Promise<DialingState>;
  /** Campaigns with calls in flight, whose dialing state must be live at start. */
  campaignsWithLiveCalls(): Promise<string[]>;
}

/** Where tenant actors come from: the tenant row and its users' live state. */
export interface TenantStore {
  load(tenantId: string): Promise<TenantContext | undefined>;
  /** One user, for a user the loaded actor has not heard of (created by another process). */
  loadUser(tenantId: string, userId: string): Promise<LiveUser | undefined>;
}
