export const AGENT_STATES = [
  "offline",
  "ready",
  "reserved",
  "on_call",
  "wrap_up",
  "paused",
] as const;
export type AgentState = (typeof AGENT_STATES)[number];

export interface AgentPresence {
  userId: string;
  tenantId: string;
  state: AgentState;
  campaignId: string | null;
  /** The agent's e-mail, so that a wallboard names people rather than ids. */
  email?: string | undefined;
  /** The call reserved for, on, or wrapping up for this agent. */
  callId: string | null;
  /** When the agent entered this state (epoch ms): the longest-waiting ready agent goes first. */
  since: number;
}

export type AgentListener = (agent: AgentPresence, origin?: { remote: boolean }) => void;

/**
 * Where every agent is, in memory: agents are people on live sessions, and a restart signs
 * them all out. Changes are announced to listeners (the realtime hub, the dialer).
 */
export class AgentBoard {
  private readonly agents = new Map<string, AgentPresence>();
  /** The same agents by campaign: pacing and every answer look at one campaign's agents. */
  private readonly byCampaign = new Map<string, Map<string, AgentPresence>>();
  private readonly listeners = new Set<AgentListener>();

  get(userId: string): AgentPresence | undefined {
    return this.agents.get(userId);
  }

  /** Agents of a campaign, optionally in one state. */
  inCampaign(campaignId: string, state?: AgentState): AgentPresence[] {
    const found: AgentPresence[] = [];
    for (const agent of this.byCampaign.get(campaignId)?.values() ?? []) {
      if (state === undefined || agent.state === state) found.push(agent);
    }
    return found;
  }

  inTenant(tenantId: string): AgentPresence[] {
    return [...this.agents.values()].filter((agent) => agent.tenantId === tenantId);
  }

  /** Up to `count` ready agents of a campaign, those who have waited longest first. */
  readyByWait(campaignId: string, count: number): AgentPresence[] {
    return this.inCampaign(campaignId, "ready")
      .sort((a, b) => a.since - b.since)
      .slice(0, count);
  }

  /** The ready agent of a campaign who has waited longest, if any: `readyByWait`'s first, in one pass. */
  longestReady(campaignId: string): AgentPresence | undefined {
    let best: AgentPresence | undefined;
    for (const agent of this.byCampaign.get(campaignId)?.values() ?? []) {
      if (agent.state !== "ready") continue;
      if (!best || agent.since < best.since) best = agent;
    }
    return best;
  }

  set(agent: Omit<AgentPresence, "since">, now: number): AgentPresence {
    const next = { ...agent, since: now };
    const before = this.agents.get(agent.userId)?.campaignId;
    // An agent keeps its place in its campaign's order while it stays in the campaign.
    if (before && (before !== next.campaignId || next.state === "offline"))
      this.campaignAgents(before).delete(agent.userId);
    if (next.state === "offline") this.agents.delete(agent.userId);
    else {
      this.agents.set(agent.userId, next);
      if (next.campaignId) this.campaignAgents(next.campaignId).set(agent.userId, next);
    }
    for (const listener of this.listeners) listener(next);
    return next;
  }

  private campaignAgents(campaignId: string): Map<string, AgentPresence> {
    let agents = this.byCampaign.get(campaignId);
    if (!agents) {
      agents = new Map();
      this.byCampaign.set(campaignId, agents);
    }
    return agents;
  }

  subscribe(listener: AgentListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
