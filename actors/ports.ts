import type { CampaignEvent, CampaignSnapshot, RestorableContext } from "./campaign.machine.ts";
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

/**
 * What a campaign command decided, before anything was written: the writes to commit, the
 * events the actor adopts once they have committed, what follows outside the campaign once
 * it has (pushes, an agent's next state), and the reply. All but the writes may depend on
 * what the commit reported (a row the database returned, a lead's next state).
 */
export interface CampaignDecision<W, F, R, E = never> {
  writes: W[];
  adopt(facts: F): CampaignEvent[];
  effects?(facts: F): E[];
  reply(facts: F): R;
}

/**
 * How one kind of campaign command runs (see `CampaignRegistry.execute`): a pure step that
 * decides from the actor's snapshot, the command and the time (a refusal is thrown), the
 * port that commits the writes a step decided, all of them or none, and what carries out
 * the decision's effects once the actor has adopted it.
 */
export interface CampaignPipeline<C, W, F, R, E = never> {
  step(snapshot: CampaignSnapshot, command: C, now: number): CampaignDecision<W, F, R, E>;
  commit(writes: W[]): Promise<F>;
  apply?(effects: E[]): void;
}
