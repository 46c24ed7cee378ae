import type {
  CampaignContext,
  CampaignRecord,
  CampaignStatus,
} from "../../actors/campaign.machine.ts";
import type {
  AgentsAtHand,
  CampaignWrite,
  CommandInputs,
  CommitFacts,
} from "../../actors/commands.ts";
import {
  type DialingState,
  type HopperLead,
  type LiveCall,
  noLeads,
} from "../../actors/dialing.ts";
import { IdempotencyWindow } from "../../actors/idempotency.ts";
import { LiveCalls } from "../../actors/live-calls.ts";
import type { CommandPort } from "../../actors/ports.ts";
import type { CallRow } from "../../db/queries/dialer.ts";
import type { AgentPresence } from "../../src/dialer/agents.ts";
import { RecentCalls } from "../../src/dialer/call-history.ts";
import { ComplianceLedger } from "../../src/dialer/ledger.ts";
import { PACER_DEFAULTS } from "../../src/dialer/predictive.ts";
import { CAMPAIGN_DEFAULTS } from "../../src/modules/campaigns/defaults.ts";

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
  // Tests of the rules choose a profile; the others dial under the campaign's settings alone.
  regulatoryProfile: "none",
  optOutDigit: "9",
  amdEnabled: false,
  amdBudgetMs: 3500,
  machineAction: "hangup",
  amdSamplePercent: 0,
  wrapUpSeconds: 0,
  dispositionCodes: CAMPAIGN_DEFAULTS.disposition_codes.map((code) => ({ ...code })),
  defaultDisposition: "no_contact",
  afterCallPauseSeconds: 0,
  previewTimeoutSeconds: 60,
  screenPopUrl: null,
  abandonMessageVersion: null,
  voicemailMessageVersion: null,
  optOutMessageVersion: null,
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

/** A call's record of the rules it was placed under, for calls placed before there were any. */
export const UNTRACED = {
  profile: null,
  profileVersion: null,
  zone: null,
  zoneSource: null,
  governorHeld: false,
  media: null,
  notes: null,
  dispositionAutomatic: false,
  dispositionOutcome: null,
} as const;

/** A call just claimed, on node-1 for lead-1 of the default campaign record; override the rest. */
export const liveCall = (overrides: Partial<LiveCall> = {}): LiveCall => {
  const claimedAt = overrides.claimedAt ?? new Date("2026-03-02T12:00:00.000Z");
  return {
    id: "call-1",
    tenantId: campaignRecord().tenantId,
    campaignId: campaignRecord().id,
    leadListId: "list-1",
    leadId: "lead-1",
    edgeNodeId: "node-1",
    agentId: null,
    phone: "+14155552671",
    callerId: "+14155550100",
    attempt: 1,
    timeoutSeconds: 30,
    status: "claimed",
    bridged: false,
    machine: false,
    outcome: null,
    hangupCause: null,
    disposition: null,
    leaseExpiresAt: new Date(claimedAt.getTime() + 60_000),
    claimedAt,
    ringingAt: null,
    answeredAt: null,
    endedAt: null,
    bridgeMs: null,
    claimKey: null,
    ...UNTRACED,
    updatedAt: claimedAt,
    lead: { id: "lead-1", phone: "+14155552671", timezone: "UTC", fields: {}, attempts: 1 },
    ...overrides,
  };
};

/** A live call's row as the database stores it, with ids of its own; override the rest. */
export const liveCallRow = (overrides: Partial<CallRow> = {}): CallRow => {
  const { lead: _lead, ...row } = liveCall({
    id: Bun.randomUUIDv7(),
    tenantId: Bun.randomUUIDv7(),
    campaignId: Bun.randomUUIDv7(),
    leadListId: Bun.randomUUIDv7(),
    leadId: Bun.randomUUIDv7(),
    edgeNodeId: Bun.randomUUIDv7(),
    claimedAt: new Date(),
    ...overrides,
  });
  return row;
};

/** A fresh lead in a hopper, dialable in any window in UTC. */
export const hopperLead = (id: string, overrides: Partial<HopperLead> = {}): HopperLead => ({
  id,
  leadListId: "list-1",
  phone: "+14155552671",
  timezone: "UTC",
  zoneSource: "column",
  state: "Fresh",
  attempts: 0,
  callerId: "+14155550100",
  fields: {},
  ...overrides,
});

/** A campaign's dialing state with nothing dialled yet, and these leads in its hopper. */
export const dialingWith = (hopper: HopperLead[] = []): DialingState => ({
  hopper,
  hopperFilledAt: 0,
  calls: LiveCalls.empty,
  wrapping: new Map(),
  previews: new Map(),
  leads: noLeads(),
  recent: [],
  history: new RecentCalls(),
  ledger: new ComplianceLedger(),
  firstStartedAt: null,
});

/** The agents at hand a step reads, from a list: by id, by campaign, ready ones by wait. */
export function agentsAtHand(known: AgentPresence[]): AgentsAtHand {
  const ready = (campaignId: string) =>
    known
      .filter((agent) => agent.campaignId === campaignId && agent.state === "ready")
      .sort((a, b) => a.since - b.since);
  return {
    get: (userId) => known.find((agent) => agent.userId === userId),
    inCampaign: (campaignId) => known.filter((agent) => agent.campaignId === campaignId),
    longestReady: (campaignId) => ready(campaignId)[0],
    readyByWait: (campaignId, count) => ready(campaignId).slice(0, count),
  };
}

/** What a step is given besides its snapshot: no agents unless named, ids in sequence. */
export function inputsWith(overrides: Partial<CommandInputs> = {}): CommandInputs {
  let next = 0;
  return {
    agents: agentsAtHand([]),
    pacer: PACER_DEFAULTS,
    newId: () => `0190c0de-0000-7000-8000-${String(++next).padStart(12, "0")}`,
    ...overrides,
  };
}

/**
 * A port that writes nothing anywhere: it records the writes it was given and reports what
 * `facts` says, so that the registry's pipeline is tested without a database.
 */
export function memoryPort(
  options: {
    gather?: CommandPort["gather"];
    commit?: (writes: CampaignWrite[]) => Promise<CommitFacts>;
  } = {},
): CommandPort & { written: CampaignWrite[][] } {
  const written: CampaignWrite[][] = [];
  return {
    written,
    gather: options.gather ?? (async () => inputsWith()),
    async commit(writes) {
      written.push(writes);
      return options.commit ? options.commit(writes) : { relayed: false };
    },
    carryOut: () => undefined,
  };
}
