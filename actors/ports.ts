import type { ApiError } from "../src/errors.ts";
import type { CampaignSnapshot, RestorableContext } from "./campaign.machine.ts";
import type {
  CampaignCommand,
  CampaignEffect,
  CampaignWrite,
  CommandInputs,
  CommitFacts,
} from "./commands.ts";
import type { DialingState } from "./dialing.ts";
import type { CommandTarget } from "./registry.ts";
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
 * What a campaign's commands need of the world around the pure step (`decide` in `actors/registry.ts`):
 * the reads a command decides on, the one port its writes commit through (a decision's
 * writes, all or none), and what follows outside the campaign once the actor has adopted
 * them (pushes, agents' next states). `carryOut` may return what the reply waits for.
 */
export interface CommandPort {
  gather(snapshot: CampaignSnapshot, command: CampaignCommand, now: number): Promise<CommandInputs>;
  commit(writes: CampaignWrite[]): Promise<CommitFacts>;
  carryOut(effects: CampaignEffect[]): Promise<unknown> | undefined;
}

/** What a forward to another process came back with. */
export type ForwardReply =
  | { kind: "done"; value: unknown }
  | { kind: "failed"; error: ApiError; silent?: boolean }
  /** Not the owner (any more): nothing was done. */
  | { kind: "elsewhere" }
  /** Nothing listens at the owner's address: nothing was done. */
  | { kind: "refused" };

/** Sends a campaign's command to the process that owns it (src/cluster/owner.ts). */
export interface Forwarder {
  forward(
    url: string,
    message: { target: CommandTarget; command: CampaignCommand; requestId: string },
  ): Promise<ForwardReply>;
}
