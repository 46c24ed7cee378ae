import type { ServiceDeps } from "../deps.ts";
import { ApiError } from "../errors.ts";
import type { AgentPresence } from "./agents.ts";

/** How often each process looks for agents' deadlines that ran out. */
export const DEADLINE_SWEEP_MS = 1_000;
/** The states that can run out; most agents are ready or on a call, whose campaigns are not read. */
const STATES_WITH_DEADLINES: ReadonlySet<AgentPresence["state"]> = new Set([
  "reserved",
  "wrap_up",
  "paused",
]);

/**
 * Ends what an agent left running past its campaign's limits, on the campaigns this process
 * owns: a wrap-up past `wrap_up_seconds` ends with the campaign's default disposition,
 * recorded as automatic; a breath after a call (`after_call_pause_seconds`) ends with the
 * agent ready; a lead offered in preview and left for `preview_timeout_seconds` is skipped, and
 * an agent reserved for an offer the campaign does not hold is released.
 * Each goes through the campaign's line like the agent's own request, so one
 * that crossed it (the agent dispositioned, or paused for a reason) is refused or moot.
 * Run on a timer, and by tests with a clock. Returns how many it ended.
 */
export async function sweepAgentDeadlines(deps: ServiceDeps): Promise<number> {
  const now = deps.clock.now();
  const due: Promise<boolean>[] = [];
  for (const userId of deps.dialer.agents.userIds()) {
    const agent = deps.dialer.agents.get(userId);
    if (!agent?.campaignId || !STATES_WITH_DEADLINES.has(agent.state)) continue;
    if (!deps.campaigns.leases.holds(agent.campaignId)) continue;
    const snapshot = deps.campaigns.peek(agent.campaignId);
    if (!snapshot) continue;
    const { campaign } = snapshot;
    const offer = agent.state === "reserved" ? snapshot.dialing?.previews.get(userId) : undefined;
    // Reserved for an offer the campaign no longer holds (it was offered by an owner that
    // since stopped or handed the campaign over): released, to be offered again.
    const lostOffer =
      agent.state === "reserved" && agent.callId === null && snapshot.dialing && !offer;
    if (lostOffer || (offer && offer.offeredAt + campaign.previewTimeoutSeconds * 1000 <= now)) {
      due.push(endPreview(deps, agent));
      continue;
    }
    const wrapUpEnds =
      agent.state === "wrap_up" && agent.callId && campaign.wrapUpSeconds > 0
        ? agent.since + campaign.wrapUpSeconds * 1000
        : undefined;
    if (wrapUpEnds !== undefined && wrapUpEnds <= now)
      due.push(endWrapUp(deps, agent, campaign.defaultDisposition));
    else if (agent.state === "paused" && agent.readyAt != null && agent.readyAt <= now)
      due.push(endBreath(deps, agent));
  }
  return (await Promise.all(due)).filter(Boolean).length;
}

function endWrapUp(deps: ServiceDeps, agent: AgentPresence, disposition: string): Promise<boolean> {
  const campaignId = agent.campaignId as string;
  return settle(
    deps,
    deps.campaigns.run(
      { tenantId: agent.tenantId, campaignId, missing: "call" },
      {
        type: "call.disposition",
        callId: agent.callId as string,
        disposition,
        callbackAt: null,
        notes: null,
        by: { actorType: "system", actorId: null, supervising: true },
      },
    ),
    "a wrap-up that ran out could not be ended",
  );
}

function endPreview(deps: ServiceDeps, agent: AgentPresence): Promise<boolean> {
  return settle(
    deps,
    deps.campaigns.run(
      { tenantId: agent.tenantId, campaignId: agent.campaignId as string },
      { type: "preview.skip", agentId: agent.userId, bySystem: true },
    ),
    "a preview left unanswered could not be skipped",
  );
}

function endBreath(deps: ServiceDeps, agent: AgentPresence): Promise<boolean> {
  return settle(
    deps,
    deps.campaigns.run(
      { tenantId: agent.tenantId, campaignId: agent.campaignId as string },
      {
        type: "agent.state",
        agent: { userId: agent.userId, tenantId: agent.tenantId, email: agent.email ?? "" },
        state: "ready",
        campaignId: agent.campaignId,
        bySystem: true,
      },
    ),
    "an agent's pause after a call could not be ended",
  );
}

/** A refusal means the agent moved first; anything else is logged for the next sweep. */
async function settle(deps: ServiceDeps, run: Promise<unknown>, what: string): Promise<boolean> {
  try {
    await run;
    return true;
  } catch (error) {
    if (!(error instanceof ApiError) || error.status >= 500) deps.logger.warn(what, { error });
    return false;
  }
}
