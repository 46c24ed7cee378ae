import {
  ACTION_EVENTS,
  adoptedCampaign,
  type CampaignEvent,
  type CampaignRecord,
  type CampaignSnapshot,
  statusAfter,
} from "../../../actors/campaign.machine.ts";
import {
  answer,
  type CampaignWrite,
  type CommandInputs,
  type CommitFacts,
  type Decision,
  type SettingsChanges,
  type SettingsCommand,
  type StatusCommand,
  type StatusReply,
} from "../../../actors/commands.ts";
import {
  callsInFlight,
  type DialingEvent,
  type DialingState,
  dialingDone,
  previewDialing,
  recentCounts,
} from "../../../actors/dialing.ts";
import {
  bodyHashOf,
  IDEMPOTENCY_WINDOW_MS,
  type IdempotencyEntry,
  type IdempotencyWindow,
} from "../../../actors/idempotency.ts";
import type { CampaignSettings } from "../../../db/queries/campaigns.ts";
import { profileInForce } from "../../compliance/lead-rules.ts";
import { isProfileName, PROFILE_NAMES, type ProfileName } from "../../compliance/profiles.ts";
import { type CampaignWindow, windowAllowed } from "../../compliance/window.ts";
import { AGENT_STATES } from "../../dialer/agents.ts";
import type { DispositionCode } from "../../dialer/model.ts";
import { answerRateOf, ledgerNow, paceCampaign } from "../../dialer/pacing.ts";
import { screenPopProblem } from "../../dialer/screen-pop.ts";
import { ok } from "../../envelope.ts";
import { ApiError, badRequest, unprocessable } from "../../errors.ts";
import { errorEnvelope } from "../../plugins/errors.ts";
import { assertCallerId } from "../leads/normalise.ts";
import { type CampaignStats, campaignView } from "./model.ts";
import { windowOrderFailure } from "./window-order.ts";

/**
 * A campaign's own commands as pure steps: a status change with its idempotent reply, new
 * settings, its live numbers, and its completion once every lead is final.
 */

/** The digest of each of the three possible bodies, `{"action": …}`, computed once. */
export const ACTION_DIGESTS = Object.fromEntries(
  Object.keys(ACTION_EVENTS).map((action) => [action, bodyHashOf({ action })]),
) as Record<StatusCommand["action"], string>;

export function decideStatus(
  snapshot: CampaignSnapshot,
  command: StatusCommand,
  now: number,
): Decision<StatusReply> {
  const { key, action } = command;
  const bodyHash = ACTION_DIGESTS[action];
  const { campaign, idempotency, dialing } = snapshot.context;
  if (key !== null) {
    const earlier = earlierReply(idempotency, key, bodyHash, now);
    if (earlier) return answer(earlier);
  }
  const remember = (status: number, text: string): IdempotencyEntry | undefined =>
    key === null
      ? undefined
      : { key, bodyHash, status, text, expiresAt: now + IDEMPOTENCY_WINDOW_MS };

  const committed = { version: campaign.version + 1, updatedAt: new Date(now).toISOString() };
  const event = { type: ACTION_EVENTS[action], ...committed };
  const to = statusAfter(snapshot, event);
  if (to === undefined) {
    const refusal = new ApiError(
      409,
      "invalid_transition",
      `cannot ${action} a campaign that is ${campaign.status}`,
    );
    const entry = remember(409, JSON.stringify(errorEnvelope(refusal, command.requestId)));
    if (!entry) throw refusal;
    return {
      writes: [{ type: "reply", campaignId: campaign.id, entry }],
      adopt: () => [{ type: "idempotency.recorded", entry }],
      effects: () => [],
      reply: () => ({ status: entry.status, text: entry.text, replayed: false }),
    };
  }
  const text = JSON.stringify(
    ok({ campaign: campaignView(adoptedCampaign(campaign, to, committed)) }),
  );
  const reply = remember(200, text);
  return {
    writes: [
      {
        type: "status",
        campaign,
        to,
        action,
        by: command.by,
        requestId: command.requestId,
        at: new Date(now),
        entry: reply,
      },
    ],
    adopt: ({ relayed }) => [{ ...event, reply, relayed }],
    effects: () => [
      {
        type: "statusToAgents",
        tenantId: campaign.tenantId,
        campaignId: campaign.id,
        from: campaign.status,
        to,
        by: command.by,
      },
      // Started with every lead final, it completes: the recount, from the database, decides.
      ...(to === "running" && dialing && dialingDone(dialing)
        ? [{ type: "recount" as const, tenantId: campaign.tenantId, campaignId: campaign.id }]
        : []),
    ],
    reply: () => ({ status: 200, text, replayed: false }),
  };
}

/** The reply kept under `key`, or undefined when the key is new; another body is 422. */
export function earlierReply(
  window: IdempotencyWindow,
  key: string,
  bodyHash: string,
  now: number,
): StatusReply | undefined {
  const found = window.lookup(key, bodyHash, now);
  if (found.kind === "miss") return undefined;
  if (found.kind === "mismatch") {
    throw new ApiError(
      422,
      "idempotency_key_reused",
      "Idempotency-Key was already used with a different body",
    );
  }
  return { status: found.entry.status, text: found.entry.text, replayed: true };
}

/**
 * A running campaign completes once every lead is final (Completed, Exhausted, DoNotCall) and
 * no call is in flight, as `dialing` (its state once a decision is adopted) counts them. One
 * without leads stays running. The status write and the event, to add to that decision.
 */
export function completion(
  snapshot: CampaignSnapshot,
  dialing: DialingState | undefined,
  now: number,
): { write: CampaignWrite; event: CampaignEvent } | undefined {
  const { campaign } = snapshot.context;
  if (campaign.status !== "running" || !dialing || !dialingDone(dialing)) return undefined;
  const committed = { version: campaign.version + 1, updatedAt: new Date(now).toISOString() };
  const event = { type: "campaign.complete" as const, ...committed };
  const to = statusAfter(snapshot, event);
  if (to === undefined) return undefined;
  return {
    write: {
      type: "status",
      campaign,
      to,
      action: "complete",
      by: { actorType: "system", actorId: null },
      requestId: null,
      at: new Date(now),
      entry: undefined,
    },
    event,
  };
}

export function assertWindowOrder(start: string, end: string) {
  const failure = windowOrderFailure({ start, end });
  if (failure) throw badRequest("invalid request body", [failure]);
}

/** A screen pop's template, when one is given, or 422 naming the field. */
export function assertScreenPop(template: string | null | undefined) {
  const problem = typeof template === "string" ? screenPopProblem(template) : undefined;
  if (problem) throw unprocessable("screen_pop_url", problem);
}

/** API fields to columns, for the fields that are present. */
export function settingsOf(input: SettingsChanges): Partial<CampaignSettings> {
  const settings: Partial<CampaignSettings> = {};
  if (input.name !== undefined) settings.name = input.name.trim();
  if (input.dial_mode !== undefined) settings.dialMode = input.dial_mode;
  if (input.caller_id !== undefined) settings.callerId = input.caller_id;
  if (input.calling_window !== undefined) {
    settings.callingWindowStart = input.calling_window.start;
    settings.callingWindowEnd = input.calling_window.end;
  }
  if (input.max_attempts !== undefined) settings.maxAttempts = input.max_attempts;
  if (input.retry_delay_seconds !== undefined)
    settings.retryDelaySeconds = input.retry_delay_seconds;
  if (input.dial_ratio !== undefined) settings.dialRatio = input.dial_ratio;
  if (input.max_abandon_rate !== undefined) settings.maxAbandonRate = input.max_abandon_rate;
  if (input.regulatory_profile !== undefined)
    settings.regulatoryProfile = input.regulatory_profile as ProfileName;
  if (input.opt_out_digit !== undefined) settings.optOutDigit = input.opt_out_digit;
  if (input.amd_enabled !== undefined) settings.amdEnabled = input.amd_enabled;
  if (input.amd_budget_ms !== undefined) settings.amdBudgetMs = input.amd_budget_ms;
  if (input.machine_action !== undefined) settings.machineAction = input.machine_action;
  if (input.amd_sample_percent !== undefined) settings.amdSamplePercent = input.amd_sample_percent;
  if (input.wrap_up_seconds !== undefined) settings.wrapUpSeconds = input.wrap_up_seconds;
  if (input.disposition_codes !== undefined) settings.dispositionCodes = input.disposition_codes;
  if (input.default_disposition !== undefined)
    settings.defaultDisposition = input.default_disposition;
  if (input.after_call_pause_seconds !== undefined)
    settings.afterCallPauseSeconds = input.after_call_pause_seconds;
  if (input.preview_timeout_seconds !== undefined)
    settings.previewTimeoutSeconds = input.preview_timeout_seconds;
  if (input.screen_pop_url !== undefined) settings.screenPopUrl = input.screen_pop_url;
  return settings;
}

/** A profile we carry, or 422 naming the field. */
export function assertKnownProfile(profile: string): asserts profile is ProfileName {
  if (isProfileName(profile)) return;
  throw unprocessable(
    "regulatory_profile",
    `unknown regulatory profile "${profile}": expected one of ${PROFILE_NAMES.join(", ")}`,
  );
}

/**
 * A campaign's profile and window as they would be after a change: the profile must be one we
 * carry, and the window must meet the profile's hours on some day (422 naming the field).
 */
export function assertLawfulSettings(profile: string, window: CampaignWindow) {
  assertKnownProfile(profile);
  const rules = profileInForce(profile, Number.POSITIVE_INFINITY);
  if (!windowAllowed(rules, window)) {
    throw unprocessable(
      "calling_window",
      `the calling window ${window.start}–${window.end} never meets the ${profile} profile's calling hours`,
    );
  }
}

/** Keys the agent desktop keeps for itself: ready, pause, acknowledge. */
const DESKTOP_KEYS = new Set(["r", "p", "a"]);

/**
 * A campaign's codes name each code and hotkey once, leave the desktop's own keys alone, and
 * hold the default, which must not be a callback (a wrap-up that ran out gives no time).
 */
export function assertDispositionCodes(codes: readonly DispositionCode[], fallback: string) {
  const codesSeen = new Set<string>();
  const keysSeen = new Set<string>();
  codes.forEach((code, index) => {
    const field = `disposition_codes.${index}`;
    if (codesSeen.has(code.code))
      throw unprocessable(`${field}.code`, `${code.code} is listed twice`);
    codesSeen.add(code.code);
    if (code.hotkey === null) return;
    if (DESKTOP_KEYS.has(code.hotkey))
      throw unprocessable(`${field}.hotkey`, `${code.hotkey} is the agent desktop's own key`);
    if (keysSeen.has(code.hotkey))
      throw unprocessable(`${field}.hotkey`, `${code.hotkey} is the key of another code`);
    keysSeen.add(code.hotkey);
  });
  const found = codes.find((code) => code.code === fallback);
  if (!found)
    throw unprocessable("default_disposition", `${fallback} is not one of the disposition codes`);
  if (found.outcome === "callback")
    throw unprocessable("default_disposition", "a callback needs a time: it cannot be the default");
}

export function decideSettings(
  snapshot: CampaignSnapshot,
  command: SettingsCommand,
  now: number,
): Decision<{ campaign: ReturnType<typeof campaignView> }> {
  const current = snapshot.context.campaign;
  if (command.version !== current.version) {
    throw new ApiError(
      409,
      "version_conflict",
      `version mismatch: the campaign is at version ${current.version}`,
    );
  }
  const settings = settingsOf(command.changes);
  const window = {
    start: settings.callingWindowStart ?? current.callingWindowStart,
    end: settings.callingWindowEnd ?? current.callingWindowEnd,
  };
  assertWindowOrder(window.start, window.end);
  assertScreenPop(command.changes.screen_pop_url);
  assertCallerId(command.changes.caller_id);
  assertLawfulSettings(command.changes.regulatory_profile ?? current.regulatoryProfile, window);
  assertDispositionCodes(
    command.changes.disposition_codes ?? current.dispositionCodes,
    command.changes.default_disposition ?? current.defaultDisposition,
  );
  const written = (facts: CommitFacts) => facts.campaign as CampaignRecord;
  return {
    writes: [
      {
        type: "settings",
        campaign: current,
        settings,
        changes: command.changes,
        by: command.by,
        requestId: command.requestId,
        at: new Date(now),
      },
    ],
    adopt: (facts) => [{ type: "campaign.updated", campaign: written(facts) }],
    effects: (facts) => [{ type: "settingsChanged", campaign: written(facts) }],
    reply: (facts) => ({ campaign: campaignView(written(facts)) }),
  };
}

/**
 * Live numbers of a campaign, from its dialing state: leads by state, calls in flight, agents
 * by state, the answer rate of its recent calls, the abandon rate over the legal window (its
 * compliance ledger), and the dial ratio its pacing gives now, with the reason.
 */
export function decideStats(
  snapshot: CampaignSnapshot,
  inputs: CommandInputs,
  now: number,
): Decision<CampaignStats | null> {
  const { campaign, dialing } = snapshot.context;
  if (!dialing) return answer(null);
  const agents: Record<string, number> = Object.fromEntries(
    AGENT_STATES.map((state) => [state, 0]),
  );
  const campaignAgents = inputs.agents.inCampaign(campaign.id);
  for (const agent of campaignAgents) agents[agent.state] = (agents[agent.state] ?? 0) + 1;
  const pacing = paceCampaign(campaign, dialing, campaignAgents, now, inputs.pacer);
  return answer({
    leads_total: Object.values(dialing.leads).reduce((sum, total) => sum + total, 0),
    leads_by_state: { ...dialing.leads },
    calls_in_flight: callsInFlight(dialing),
    agents_by_state: agents,
    answer_rate: answerRateOf(recentCounts(dialing)),
    recent_calls: recentCounts(dialing).total,
    abandon_rate: ledgerNow(campaign, dialing, now).abandonRate,
    dial_ratio: pacing.ratio,
    dial_ratio_reason: pacing.reason,
  });
}

/**
 * New leads join a live campaign's counts (and its stats) once they are committed; leads a
 * listing ended leave them, and a running campaign with nothing left to dial completes.
 */
export function decideRecount(
  snapshot: CampaignSnapshot,
  inputs: CommandInputs,
  now: number,
): Decision<null> {
  const { campaign, dialing } = snapshot.context;
  const { leads } = inputs;
  const counted: DialingEvent[] = leads && dialing ? [{ type: "dialing.leadsCounted", leads }] : [];
  const done = dialing ? completion(snapshot, previewDialing(dialing, counted), now) : undefined;
  return {
    writes: done ? [done.write] : [],
    adopt: (facts) => [...counted, ...(done ? [{ ...done.event, relayed: facts.relayed }] : [])],
    effects: () => [{ type: "statsChanged", tenantId: campaign.tenantId, campaignId: campaign.id }],
    reply: () => null,
  };
}
