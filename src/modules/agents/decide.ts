import type { CampaignSnapshot } from "../../../actors/campaign.machine.ts";
import type {
  AgentStateCommand,
  CommandInputs,
  Decision,
  NextAgent,
} from "../../../actors/commands.ts";
import { AFTER_CALL_REASON, type AgentPresence } from "../../dialer/agents.ts";
import { releaseOf } from "../../dialer/call-decide.ts";
import { type AgentView, agentView } from "../../dialer/model.ts";
import { badRequest, conflict, INVALID_BODY, notFound } from "../../errors.ts";

const WITH_CALL = new Set<AgentPresence["state"]>(["on_call", "wrap_up"]);

/**
 * Whether the agent has a call: on it, wrapping it up, or reserved for one being placed (the
 * governor's, a preview's or a hand dial's), which a pause or sign-out would leave to be
 * abandoned when it is answered. An offer in preview, with no call yet, is not one.
 */
const hasCall = (agent: AgentPresence) =>
  WITH_CALL.has(agent.state) || (agent.state === "reserved" && agent.callId !== null);

/**
 * An agent's own state change, as a pure step: the rules it must pass and the agent's next
 * entry on the board. `current` is the agent as the board holds it; `campaignKnown` says
 * whether a campaign the request names is one of the agent's tenant's.
 *
 * A pause during a call or its wrap-up is a pause after the call: the agent stays and must
 * still give the disposition; `ready` then takes the request back.
 */
export function nextAgentState(
  command: Pick<
    AgentStateCommand,
    "agent" | "state" | "campaignId" | "reason" | "bySystem" | "gone"
  >,
  current: AgentPresence | undefined,
  campaignKnown: boolean,
): NextAgent {
  if (current && hasCall(current) && !(command.gone && current.state === "reserved")) {
    // An agent gone (disabled, past the grace) is paused after the call, whatever state the
    // process that saw them go took them to be in.
    if (command.state === "paused" || (command.gone && command.state === "offline"))
      return { ...current, pauseAfterCall: true, reason: command.reason ?? null, keepSince: true };
    if (command.state === "ready" && current.pauseAfterCall)
      return { ...current, pauseAfterCall: false, reason: null, keepSince: true };
    if (current.state === "on_call") throw conflict("the agent is on a call");
    if (current.state === "reserved")
      throw conflict("a call is being placed for the agent: pause after it instead");
    throw conflict("the agent is in wrap-up: disposition the call first");
  }
  // The end of a breath that the agent already left (paused for a reason, signed out) is moot.
  if (command.bySystem && current?.reason !== AFTER_CALL_REASON)
    return current
      ? { ...current, keepSince: true }
      : { ...command.agent, state: "offline", campaignId: null, callId: null };
  if (command.state === "ready" && command.campaignId === null)
    throw badRequest(INVALID_BODY, [{ field: "campaign_id", message: "required to be ready" }]);
  // Whatever the state, a named campaign must be one of the agent's tenant: the board never
  // holds an entry for a campaign that does not exist or that another tenant owns.
  if (command.campaignId !== null && !campaignKnown) throw notFound("campaign");
  return {
    userId: command.agent.userId,
    tenantId: command.agent.tenantId,
    email: command.agent.email,
    state: command.state,
    campaignId: command.campaignId ?? current?.campaignId ?? null,
    callId: null,
    reason: command.state === "paused" ? (command.reason ?? null) : null,
    pauseAfterCall: false,
    readyAt: null,
  };
}

/**
 * The change on the owner of the agent's campaign: the agent's next state, and a preview call
 * reserved for an agent who leaves it released, to be answered by whoever is free. The reply
 * follows the commit of the agent's row.
 */
export function decideAgentState(
  snapshot: CampaignSnapshot,
  command: AgentStateCommand,
  inputs: CommandInputs,
  now: number,
): Decision<{ agent: AgentView }> {
  const onBoard = inputs.agents.get(command.agent.userId);
  // Reserved for a call the campaign no longer holds: nothing to keep the agent for.
  const current =
    onBoard?.state === "reserved" &&
    onBoard.callId !== null &&
    !snapshot.context.dialing?.calls.get(onBoard.callId)
      ? { ...onBoard, callId: null }
      : onBoard;
  const named = command.campaignId;
  const known = named === snapshot.context.campaign.id || inputs.namedCampaignKnown === true;
  const next = nextAgentState(command, current, known);
  // Only an agent who is gone leaves a call being placed for it: released, not abandoned.
  const reserved =
    next.state !== "reserved" && current?.state === "reserved" && current.callId
      ? snapshot.context.dialing?.calls.get(current.callId)
      : undefined;
  const release = reserved && releaseOf(reserved, now);
  // A lead offered in preview goes back to the hopper when its agent leaves the offer.
  const offered = snapshot.context.dialing?.previews.has(command.agent.userId) ?? false;
  const withdrawn =
    offered && next.state !== "reserved"
      ? [{ type: "dialing.previewEnded" as const, agentId: command.agent.userId, back: true }]
      : [];
  const since = next.keepSince ? (next.since ?? now) : now;
  return {
    writes: release?.writes ?? [],
    adopt: (facts) => [...(release?.adopt(facts) ?? []), ...withdrawn],
    effects: () => [
      { type: "agent", agent: next, at: now },
      { type: "agentPersisted", userId: next.userId },
    ],
    reply: () => ({ agent: agentView({ ...next, since }) }),
  };
}
