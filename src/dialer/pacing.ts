import type { CampaignRecord } from "../../actors/campaign.machine.ts";
import {
  type DialingState,
  type recentCounts,
  ringingFor,
  unbridgedCalls,
  unreservedCalls,
} from "../../actors/dialing.ts";
import type { AgentPresence } from "./agents.ts";
import { abandonPeriodOf, type GovernorVerdict, governorOf, heldReason } from "./governor.ts";
import {
  type BusyAgent,
  PACER_DEFAULTS,
  type PacerDecision,
  type PacerInput,
  type PacerTuning,
  pace,
} from "./predictive.ts";

type RecentCounts = ReturnType<typeof recentCounts>;

/** Share of recent calls that a person or machine picked up; 0 before any call. */
export const answerRateOf = (counts: RecentCounts) =>
  counts.total === 0 ? 0 : counts.picked_up / counts.total;

/** How many calls a campaign may place now, the dial ratio that gives, and why. */
export interface Pacing {
  calls: number;
  ratio: number;
  reason: string;
  /** Predictive campaigns: what the pacer was given and what it decided. */
  predicted?: { input: PacerInput; decision: PacerDecision } | undefined;
  /**
   * How many of the calls are placed with an agent reserved for each (they cannot be
   * abandoned): all of them in preview, the ready agents' share when the governor holds.
   */
  reserved: number;
  /** The abandon-rate governor's verdict, under a profile that sets a limit. */
  governor?: GovernorVerdict | undefined;
}

type PacedCampaign = Pick<
  CampaignRecord,
  "id" | "dialMode" | "dialRatio" | "maxAbandonRate" | "regulatoryProfile" | "abandonMessageVersion"
>;

/**
 * The ledger at `now` as the pacer sees it: of the profile's window and the last 24 hours, the
 * view with the smaller budget, with its rate and counts.
 */
export function ledgerNow(campaign: PacedCampaign, dialing: DialingState, now: number) {
  const report = dialing.ledger.report(now, {
    firstStartedAt: dialing.firstStartedAt ?? now,
    maxAbandonRate: campaign.maxAbandonRate,
    period: abandonPeriodOf(campaign.regulatoryProfile, now),
  });
  const view = report.day.budget < report.window.budget ? report.day : report.window;
  return {
    abandonRate: report.window.abandonRate,
    budget: report.budget,
    liveAnswers: view.liveAnswers,
    abandons: view.abandons,
  };
}

/**
 * What the predictive pacer is given, from state the process holds: the campaign's agents
 * (busy ones with how long they have been in their state), its calls not yet answered, its
 * recent calls and its ledger.
 */
export function pacerInputOf(
  campaign: PacedCampaign,
  dialing: DialingState,
  agents: readonly AgentPresence[],
  now: number,
): PacerInput {
  let readyAgents = 0;
  const busyAgents: BusyAgent[] = [];
  for (const agent of agents) {
    if (agent.state === "ready") readyAgents++;
    else if (agent.state === "on_call" || agent.state === "wrap_up")
      busyAgents.push({ state: agent.state, elapsedMs: Math.max(0, now - agent.since) });
  }
  return {
    readyAgents,
    busyAgents,
    ringingMs: ringingFor(dialing, now),
    history: dialing.history.history(now),
    dialRatio: campaign.dialRatio,
    maxAbandonRate: campaign.maxAbandonRate,
    ledger: ledgerNow(campaign, dialing, now),
  };
}

/**
 * How a campaign paces now, by its dial mode. Preview: one call per ready agent. Progressive:
 * calls waiting for an agent ≤ ready agents × `dial_ratio`. Predictive: the predictive pacer
 * (docs/PACING.md), which also dials for busy agents expected free when the calls are answered.
 * `agents` are the campaign's agents.
 */
export function paceCampaign(
  campaign: PacedCampaign,
  dialing: DialingState,
  agents: readonly AgentPresence[],
  now: number,
  tuning: PacerTuning = PACER_DEFAULTS,
): Pacing {
  const ready = agents.filter((agent) => agent.state === "ready").length;
  if (campaign.dialMode === "preview")
    return { calls: ready, ratio: 1, reason: "preview: one call per ready agent", reserved: ready };
  return governed(
    campaign,
    dialing,
    ready,
    now,
    configuredPacing(campaign, dialing, agents, ready, now, tuning),
  );
}

function configuredPacing(
  campaign: PacedCampaign,
  dialing: DialingState,
  agents: readonly AgentPresence[],
  ready: number,
  now: number,
  tuning: PacerTuning,
): Pacing {
  if (campaign.dialMode === "predictive") {
    const input = pacerInputOf(campaign, dialing, agents, now);
    const decision = pace(input, tuning);
    return {
      calls: decision.calls,
      ratio: decision.ratio,
      reason: decision.reason,
      predicted: { input, decision },
      reserved: 0,
    };
  }
  const ratio = campaign.dialRatio;
  const calls = ready === 0 ? 0 : Math.floor(ready * ratio + 1e-9) - unbridgedCalls(dialing);
  return {
    calls: Math.max(0, calls),
    ratio,
    reason: "progressive: configured dial_ratio",
    reserved: 0,
  };
}

/**
 * The configured pacing, unless the governor holds the campaign: then a call with an agent
 * reserved for each ready agent not already awaited by a call in flight, and as many calls
 * beyond them, without an agent, as the budget left covers if every one were abandoned.
 */
function governed(
  campaign: PacedCampaign,
  dialing: DialingState,
  ready: number,
  now: number,
  configured: Pacing,
): Pacing {
  const unreserved = unreservedCalls(dialing);
  const governor = governorOf(
    campaign,
    dialing,
    {
      calls: configured.calls,
      unreserved,
      ready,
      dialsAhead: campaign.dialMode === "predictive" || campaign.dialRatio > 1,
    },
    now,
  );
  // Without the abandon message the profile requires no call may be abandoned: each is placed
  // with its agent reserved, who cannot then pause or leave before the answer.
  const holds = governor?.held || (governor?.messageMissing && configured.calls > 0);
  if (!governor || !holds) return { ...configured, governor };
  const reserved = Math.min(configured.calls, Math.max(0, ready - unreserved));
  // Calls in flight that the agents left free could not answer, should all be answered at once.
  const exposed = Math.max(0, unreserved - (ready - reserved));
  const spare = Math.max(0, Math.floor(governor.budget - exposed + 1e-9));
  const calls = reserved + Math.min(configured.calls - reserved, spare);
  return {
    calls,
    // As the modes count it: calls waiting for an answer per ready agent, these included.
    ratio: ready === 0 ? 0 : (unreserved + calls) / ready,
    reason: heldReason(governor),
    predicted: configured.predicted,
    reserved,
    // Held whichever rule holds it, as its calls' CDRs record (`governor_held`).
    governor: { ...governor, held: true },
  };
}
