import type { ServiceDeps } from "../deps.ts";
import { agentView } from "../dialer/service.ts";

/** Routes actor state changes to the sockets that watch them. */
export function connectRealtime(deps: ServiceDeps): void {
  deps.campaigns.subscribe((event) => {
    deps.realtime.toCampaign(event.tenantId, event.campaignId, {
      type: "campaign.status",
      campaign_id: event.campaignId,
      status: event.to,
      from: event.from,
    });
    deps.realtime.statsChanged(event.tenantId, event.campaignId);
  });
  deps.dialer.agents.subscribe((agent) => {
    const message = { type: "agent.state", agent: agentView(agent) };
    deps.realtime.toSupervisors(agent.tenantId, message);
    deps.realtime.toAgent(agent.tenantId, agent.userId, message);
    if (agent.campaignId) deps.realtime.statsChanged(agent.tenantId, agent.campaignId);
  });
}
