import type { Static } from "elysia";
import type { CampaignRecord } from "../../actors/campaign.machine.ts";
import type { CallRow } from "../../db/queries/dialer.ts";
import { recordedProfile } from "../compliance/lead-rules.ts";
import type { DialJobSchema } from "./model.ts";

/** How long a claim's key brings back its jobs, as for a campaign's status changes. */
export const CLAIM_REPLAY_MS = 60_000;
/** Keys kept at most, whatever the nodes send; the oldest goes first. */
const MAX_KEYS = 20_000;

export type DialJob = Static<typeof DialJobSchema>;

/** What the node plays, listens for and detects on a campaign's calls. */
export type JobMedia = Pick<
  CampaignRecord,
  | "abandonMessageVersion"
  | "voicemailMessageVersion"
  | "optOutMessageVersion"
  | "optOutDigit"
  | "amdEnabled"
  | "amdBudgetMs"
>;

const mediaOfJob = (campaign: JobMedia) => ({
  messages: {
    abandon: campaign.abandonMessageVersion,
    voicemail: campaign.voicemailMessageVersion,
    opt_out: campaign.optOutMessageVersion,
  },
  opt_out_digit: campaign.optOutDigit,
  amd: campaign.amdEnabled ? { budget_ms: campaign.amdBudgetMs } : null,
});

/** The job a node is given for a call it claimed, under its campaign's settings. */
export const jobOf = (
  call: Pick<
    CallRow,
    | "id"
    | "campaignId"
    | "leadId"
    | "phone"
    | "callerId"
    | "timeoutSeconds"
    | "agentId"
    | "profile"
    | "profileVersion"
  >,
  campaign: JobMedia | undefined,
): DialJob => ({
  call_id: call.id,
  campaign_id: call.campaignId,
  lead_id: call.leadId,
  phone: call.phone,
  caller_id: call.callerId,
  timeout_seconds: call.timeoutSeconds,
  agent_id: call.agentId,
  abandon_message_required:
    recordedProfile(call.profile, call.profileVersion)?.abandonMessage !== undefined,
  ...(campaign ? mediaOfJob(campaign) : {}),
});

/**
 * The jobs each keyed claim handed out in the last minute, by node and key, so that a node
 * whose reply was lost gets the same jobs again, as the same objects (the same bytes).
 * Claims that placed nothing are not kept: their retry loses nothing by claiming anew. The
 * calls themselves carry the key too, for the claims of a process that has since restarted.
 */
export class ClaimReplies {
  private readonly entries = new Map<string, { jobs: DialJob[]; expiresAt: number }>();

  constructor(
    /** When this process started: claims before it are only in the database. */
    readonly startedAt: number,
  ) {}

  get(nodeId: string, key: string, now: number): DialJob[] | undefined {
    const entryKey = `${nodeId}\n${key}`;
    const entry = this.entries.get(entryKey);
    if (!entry) return undefined;
    if (entry.expiresAt > now) return entry.jobs;
    this.entries.delete(entryKey);
    return undefined;
  }

  remember(nodeId: string, key: string, jobs: DialJob[], now: number): void {
    if (jobs.length === 0) return;
    if (this.entries.size >= MAX_KEYS) this.forgetExpired(now);
    if (this.entries.size >= MAX_KEYS) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(`${nodeId}\n${key}`, { jobs, expiresAt: now + CLAIM_REPLAY_MS });
  }

  /** Whether a claim within the window may have been made before this process started. */
  mayPredate(now: number): boolean {
    return now - this.startedAt < CLAIM_REPLAY_MS;
  }

  private forgetExpired(now: number): void {
    for (const [key, entry] of this.entries) {
      if (entry.expiresAt <= now) this.entries.delete(key);
    }
  }
}
