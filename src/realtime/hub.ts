import type { Logger } from "../logger.ts";

/** Anything that can publish to a topic: Bun's server once the app listens. */
export interface Publisher {
  publish(topic: string, data: string): number;
  subscriberCount(topic: string): number;
}

/** Every campaign message of a tenant: what an unnarrowed supervisor listens to. */
export const campaignsTopic = (tenantId: string) => `tenant:${tenantId}:campaigns`;
/** One campaign's messages: what a supervisor narrowed with `subscribe` listens to. */
export const campaignTopic = (campaignId: string) => `campaign:${campaignId}`;
export const agentsTopic = (tenantId: string) => `tenant:${tenantId}:agents`;
export const agentTopic = (userId: string) => `agent:${userId}`;

const STATS_INTERVAL_MS = 250;

/**
 * Pushes state changes to subscribed sockets through Bun's pub/sub. Until the server listens
 * (in-process tests) pushes go nowhere. `campaign.stats` is coalesced: at most one message
 * per campaign each 250 ms, computed when it is sent.
 */
export class RealtimeHub {
  private publisher: Publisher | undefined;
  private readonly statsDue = new Map<
    string,
    { tenantId: string; timer: ReturnType<typeof setTimeout> }
  >();
  private readonly statsSentAt = new Map<string, number>();

  constructor(
    private readonly logger: Logger,
    private readonly statsOf: (
      tenantId: string,
      campaignId: string,
    ) => Promise<Record<string, unknown> | undefined>,
  ) {}

  attach(publisher: Publisher | undefined): void {
    this.publisher = publisher;
  }

  publish(topic: string, message: Record<string, unknown>): void {
    if (!this.publisher) return;
    try {
      this.publisher.publish(topic, JSON.stringify(message));
    } catch (error) {
      this.logger.warn("realtime publish failed", { topic, error });
    }
  }

  /** A campaign message, to supervisors of all the tenant's campaigns and of this one. */
  toCampaign(tenantId: string, campaignId: string, message: Record<string, unknown>): void {
    this.publish(campaignsTopic(tenantId), message);
    this.publish(campaignTopic(campaignId), message);
  }

  toSupervisors(tenantId: string, message: Record<string, unknown>): void {
    this.publish(agentsTopic(tenantId), message);
  }

  toAgent(userId: string, message: Record<string, unknown>): void {
    this.publish(agentTopic(userId), message);
  }

  /** Asks for a `campaign.stats` push; several asks within 250 ms become one message. */
  statsChanged(tenantId: string, campaignId: string): void {
    if (!this.publisher || this.statsDue.has(campaignId)) return;
    // Statistics cost queries: compute them only for someone who listens.
    const listeners =
      this.publisher.subscriberCount(campaignsTopic(tenantId)) +
      this.publisher.subscriberCount(campaignTopic(campaignId));
    if (listeners === 0) return;
    const last = this.statsSentAt.get(campaignId) ?? 0;
    const wait = Math.max(0, last + STATS_INTERVAL_MS - Date.now());
    const timer = setTimeout(() => void this.sendStats(tenantId, campaignId), wait);
    this.statsDue.set(campaignId, { tenantId, timer });
  }

  private async sendStats(tenantId: string, campaignId: string) {
    this.statsDue.delete(campaignId);
    this.statsSentAt.set(campaignId, Date.now());
    try {
      const stats = await this.statsOf(tenantId, campaignId);
      if (stats)
        this.toCampaign(tenantId, campaignId, {
          type: "campaign.stats",
          campaign_id: campaignId,
          stats,
        });
    } catch (error) {
      this.logger.warn("campaign stats push failed", { campaign_id: campaignId, error });
    }
  }

  close(): void {
    for (const { timer } of this.statsDue.values()) clearTimeout(timer);
    this.statsDue.clear();
    this.publisher = undefined;
  }
}
