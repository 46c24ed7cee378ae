import type { AgentStateCommand } from "../../../actors/commands.ts";
import { findTenantCampaign } from "../../../db/queries/campaigns.ts";
import { findPresence } from "../../../db/queries/presence.ts";
import type { ServiceDeps } from "../../deps.ts";
import { freeForTransfer } from "../../dialer/agents.ts";
import { type AgentView, agentView } from "../../dialer/model.ts";
import { conflict, forbidden, notFound, unprocessable } from "../../errors.ts";
import { recordAudit } from "../../identity/audit.ts";
import type { Principal } from "../../identity/principal.ts";
import { isUuid } from "../../identity/tenant-scope.ts";
import { nextAgentState } from "./decide.ts";

export type AgentStateInput = {
  state: "ready" | "paused" | "offline";
  campaign_id?: string | undefined;
  reason?: string | undefined;
};

/** The reasons an agent of the workspace may pause for. */
export async function notReadyReasons(deps: ServiceDeps, tenantId: string) {
  return (await deps.tenants.tenant(tenantId))?.notReadyReasons ?? [];
}

/** A reason is one of the workspace's, and only a pause has one. */
async function assertReason(deps: ServiceDeps, tenantId: string, input: AgentStateInput) {
  if (input.reason === undefined) return;
  if (input.state !== "paused") throw unprocessable("reason", "only a pause takes a reason");
  const reasons = await notReadyReasons(deps, tenantId);
  if (!reasons.some((reason) => reason.code === input.reason)) {
    const known = reasons.map((reason) => reason.code).join(", ") || "none";
    throw unprocessable("reason", `not one of the workspace's not-ready reasons (${known})`);
  }
}

/** An agent's own state change: ready for a campaign, paused, or offline. */
export async function setAgentState(
  deps: ServiceDeps,
  principal: Principal,
  input: AgentStateInput,
  options: { gone?: boolean } = {},
): Promise<{ agent: AgentView }> {
  if (principal.kind !== "user") throw forbidden("API keys are not agents");
  const { user } = principal;
  return changeAgentState(
    deps,
    { userId: user.id, tenantId: principal.tenantId, email: user.email },
    input,
    options.gone ?? false,
  );
}

/**
 * A supervisor's pause or sign-out of an agent of the workspace, under the agent's own rules
 * (on a call, a pause waits for the disposition; a sign-out is refused). Audited, and the
 * agent's desktop is told who did it.
 */
export async function superviseAgent(
  deps: ServiceDeps,
  principal: Principal,
  tenantId: string,
  sentId: string,
  input: { state: "paused" | "offline"; reason?: string | undefined },
  requestId: string,
): Promise<{ agent: AgentView }> {
  if (principal.kind !== "user") throw forbidden("API keys do not supervise agents");
  const target = isUuid(sentId) ? await deps.tenants.user(tenantId, sentId) : undefined;
  if (!target) throw notFound("agent");
  if (target.id === principal.user.id) throw unprocessable("user_id", "use your own agent state");
  const current = deps.dialer.agents.get(target.id) ?? (await findPresence(deps.rawDb, target.id));
  // A pause or sign-out is of someone at the desk: it never signs anyone in.
  if (!current || current.state === "offline")
    throw conflict("the agent is not signed in: there is nobody to pause or sign out");
  if (
    input.state === "offline" &&
    current &&
    ["on_call", "wrap_up", "reserved"].includes(current.state) &&
    current.callId
  )
    throw conflict("the agent is on a call: pause them after it instead");
  const reply = await changeAgentState(
    deps,
    { userId: target.id, tenantId: tenantId, email: target.email },
    input,
  );
  const at = new Date(deps.clock.now());
  await recordAudit(deps.db, {
    tenantId: tenantId,
    actorType: "user",
    actorId: principal.user.id,
    action: input.state === "offline" ? "agent.signed_out" : "agent.paused",
    targetType: "user",
    targetId: target.id,
    requestId,
    at,
    details: { reason: input.reason ?? null, state: reply.agent.state },
  });
  deps.realtime.toAgent(tenantId, target.id, {
    type: "agent.supervised",
    state: input.state,
    reason: input.reason ?? null,
    by: { user_id: principal.user.id, email: principal.user.email },
    at: at.toISOString(),
  });
  return reply;
}

/**
 * The owner of the agent's campaign (the one it leaves, else the one it joins) decides a state
 * change, as a command of that campaign: it is the one process that reserves the agent for
 * calls, so no change can cross another. An agent with no campaign at all changes here.
 */
async function changeAgentState(
  deps: ServiceDeps,
  agent: AgentStateCommand["agent"],
  input: AgentStateInput,
  gone = false,
): Promise<{ agent: AgentView }> {
  // A request's change takes effect in memory before it is written: with the database known
  // to be away it is refused first, so that a 503 leaves the agent as it was. A sign-out for
  // a socket gone is made all the same: no call may be sent to that agent.
  if (!gone) deps.availability.assertAvailable();
  await assertReason(deps, agent.tenantId, input);
  const command: AgentStateCommand = {
    type: "agent.state",
    agent,
    state: input.state,
    campaignId: canonicalId(input.campaign_id),
    reason: input.reason ?? null,
    gone,
  };
  const current = deps.dialer.agents.get(agent.userId);
  const named =
    command.campaignId !== null && isUuid(command.campaignId) ? command.campaignId : null;
  const campaignId = current?.campaignId ?? named;
  if (!campaignId) return changeWithoutCampaign(deps, command);
  const reply = await deps.campaigns.run({ tenantId: agent.tenantId, campaignId }, command);
  if (deps.campaigns.leases.shared) {
    // Committed by the owner: this process's board takes the row now, not at the feed's
    // notice, so that the agent's next request here sees its change.
    const row = await findPresence(deps.rawDb, agent.userId);
    if (row) deps.dialer.agents.adopt(row);
  }
  return reply;
}

/** The change of an agent in no campaign: nothing is reserved for it, no campaign to ask. */
async function changeWithoutCampaign(deps: ServiceDeps, command: AgentStateCommand) {
  const named = command.campaignId;
  const known =
    named !== null &&
    isUuid(named) &&
    (await findTenantCampaign(deps.db, { tenantId: command.agent.tenantId, campaignId: named })) !==
      undefined;
  const next = nextAgentState(command, deps.dialer.agents.get(command.agent.userId), known);
  const agent = deps.dialer.agents.set(next, deps.clock.now());
  // The reply follows the commit of the agent's row, which the board writes behind.
  await deps.dialer.agents.persisted(agent.userId);
  return { agent: agentView(agent) };
}

/** A campaign id as stored (lower case); anything else as sent, to be refused as unknown. */
const canonicalId = (id: string | undefined) =>
  id === undefined ? null : isUuid(id) ? id.toLowerCase() : id;

/**
 * Where an agent may send its call: the other agents of its campaign who are ready and have a
 * phone, and the workspace's transfer numbers.
 */
export async function transferTargets(deps: ServiceDeps, tenantId: string, userId: string) {
  const self = deps.dialer.agents.get(userId);
  const campaignId = self?.campaignId;
  const ready = campaignId
    ? deps.dialer.agents
        .inCampaign(campaignId)
        .filter((agent) => agent.userId !== userId && freeForTransfer(agent))
    : [];
  const users = await Promise.all(ready.map((agent) => deps.tenants.user(tenantId, agent.userId)));
  return {
    agents: users.flatMap((user) =>
      user?.phoneUri ? [{ user_id: user.id, email: user.email }] : [],
    ),
    numbers: (await deps.tenants.tenant(tenantId))?.transferNumbers ?? [],
  };
}
