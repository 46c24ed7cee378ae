import type { AgentPresence } from "../src/dialer/agents.ts";
import type { CampaignEvent, CampaignSnapshot } from "./campaign.machine.ts";
import {
  type AgentEffect,
  type AgentsAtHand,
  agentAfter,
  type CampaignEffect,
  isAgentEffect,
} from "./commands.ts";
import { previewDialing } from "./dialing.ts";

/**
 * What the next command is decided on while earlier decisions' writes are on their way: the
 * campaign as their events leave it, before any of them is committed. Only decisions whose
 * events do not depend on their commit go ahead of their commit this way (a node's events,
 * dispositions, ends, agents' states), and a claim's placements join once committed.
 */
export function snapshotWith(snapshot: CampaignSnapshot, events: readonly CampaignEvent[]) {
  const { dialing } = snapshot.context;
  if (!dialing || events.length === 0) return snapshot;
  return {
    ...snapshot,
    context: { ...snapshot.context, dialing: previewDialing(dialing, events) },
  } as CampaignSnapshot;
}

/** The agents at hand as the decisions before it in a batch leave them. */
export class AgentsAfter implements AgentsAtHand {
  private readonly changed = new Map<string, AgentPresence | undefined>();

  constructor(private readonly base: AgentsAtHand) {}

  /** Takes in a decision's effects on agents, as the board will once it is carried out. */
  apply(effects: CampaignEffect[]): void {
    for (const effect of effects) {
      if (!isAgentEffect(effect)) continue;
      const userId = effect.type === "agent" ? effect.agent.userId : effect.userId;
      const next = agentAfter(effect as AgentEffect, this.get(userId));
      if (!next) continue;
      this.changed.set(
        userId,
        next.state === "offline"
          ? undefined
          : { ...next, since: next.keepSince ? (next.since ?? effect.at) : effect.at },
      );
    }
  }

  /**
   * Takes in the agents a claim reserves before its commit says which of its calls were
   * placed: every one is held until `release`, so that nothing decided meanwhile takes them.
   */
  hold(effects: CampaignEffect[]): string[] {
    this.apply(effects);
    return effects.flatMap((effect) => (effect.type === "agent" ? [effect.agent.userId] : []));
  }

  /** The claim is adopted: the board now says which agents it reserved. */
  release(userIds: readonly string[]): void {
    for (const userId of userIds) this.changed.delete(userId);
  }

  get(userId: string): AgentPresence | undefined {
    return this.changed.has(userId) ? this.changed.get(userId) : this.base.get(userId);
  }

  inCampaign(campaignId: string): AgentPresence[] {
    const agents = this.base
      .inCampaign(campaignId)
      .filter((agent) => !this.changed.has(agent.userId));
    for (const agent of this.changed.values())
      if (agent?.campaignId === campaignId) agents.push(agent);
    return agents;
  }

  longestReady(campaignId: string): AgentPresence | undefined {
    return this.readyByWait(campaignId, 1)[0];
  }

  readyByWait(campaignId: string, count: number): AgentPresence[] {
    return this.inCampaign(campaignId)
      .filter((agent) => agent.state === "ready")
      .sort((a, b) => a.since - b.since)
      .slice(0, count);
  }
}
