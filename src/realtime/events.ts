import type { ServiceDeps } from "../deps.ts";
import { agentView } from "../dialer/model.ts";
import { campaignStatusMessage } from "./hub.ts";

/** Routes actor state changes to the sockets that watch them. */
export function connectRealtime(deps: ServiceDeps): void {
  deps.campaigns.subscribe((event) => {
    deps.realtime.toCampaign(
      event.tenantId,
      event.campaignId,
      campaignStatusMessage(event.campaignId, event.from, event.to),
      event.relayed,
    );
    deps.realtime.statsChanged(event.tenantId, event.campaignId);
  });
  deps.dialer.agents.subscribe((agent, origin) => {
    if (origin?.remote) {
      // Another process's change, adopted here: it pushed the change itself, and its relay
      // carried the push to this process's sockets. Only the campaign's stats, which its owner
      // computes, are left to this one if it owns the campaign.
      if (agent.campaignId && deps.campaigns.leases.holds(agent.campaignId))
        deps.realtime.statsChanged(agent.tenantId, agent.campaignId);
      return;
    }
    const message = { type: "agent.state", agent: agentView(agent) };
    deps.realtime.toSupervisors(agent.tenantId, message);
    deps.realtime.toAgent(agent.tenantId, agent.userId, message);
    if (agent.campaignId) deps.realtime.statsChanged(agent.tenantId, agent.campaignId);
  });
}
