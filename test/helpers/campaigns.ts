import type {
  CampaignContext,
  CampaignRecord,
  CampaignStatus,
} from "../../actors/campaign.machine.ts";
import { type DialingState, type HopperLead, noLeads } from "../../actors/dialing.ts";
import { IdempotencyWindow } from "../../actors/idempotency.ts";
import { RecentCalls } from "../../src/dialer/call-history.ts";
import { ComplianceLedger } from "../../src/dialer/ledger.ts";

/** A campaign record as the actor holds it, for machine-level tests. */
export const campaignRecord = (overrides: Partial<CampaignRecord> = {}): CampaignRecord => ({
  id: "0190c0de-0000-7000-8000-000000000001",
  tenantId: "0190c0de-0000-7000-8000-0000000000aa",
  name: "Spring renewals",
  status: "draft",
  dialMode: "progressive",
  callerId: "+14155550100",
  callingWindowStart: "08:00",
  callingWindowEnd: "21:00",
  maxAttempts: 3,
  retryDelaySeconds: 3600,
  dialRatio: 1,
  maxAbandonRate: 0.03,
  version: 1,
  createdAt: "2026-03-02T12:00:00.000Z",
  updatedAt: "2026-03-02T12:00:00.000Z",
  ...overrides,
});

export const contextWith = (
  status: CampaignStatus,
  overrides: Partial<CampaignContext> = {},
): CampaignContext => ({
  campaign: campaignRecord({ status }),
  idempotency: new IdempotencyWindow(),
  ...overrides,
});

/** A campaign's dialing state with nothing dialled yet, and these leads in its hopper. */
export const dialingWith = (hopper: HopperLead[] = []): DialingState => ({
  hopper,
  hopperFilledAt: 0,
  calls: {},
  leads: noLeads(),
  recent: [],
  history: new RecentCalls(),
  ledger: new ComplianceLedger(),
  firstStartedAt: null,
});
