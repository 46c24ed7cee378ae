import type { CommitNotice, CommitNotices } from "../../db/commit-notices.ts";
import type { Logger } from "../logger.ts";

/** Anything that can publish to a topic: Bun's server once the app listens. */
export interface Publisher {
  publish(topic: string, data: string): number;
  subscriberCount(topic: string): number;
}

// Every topic starts with its tenant: a publish names the tenant it speaks to, so no code path
// can reach another tenant's sockets by naming a campaign or a user of theirs.

/** Every campaign message of a tenant: what an unnarrowed supervisor listens to. */
export const campaignsTopic = (tenantId: string) => `tenant:${tenantId}:campaigns`;
/** One campaign's messages: what a supervisor narrowed with `subscribe` listens to. */
export const campaignTopic = (tenantId: string, campaignId: string) =>
  `tenant:${tenantId}:campaign:${campaignId}`;
/** Where a campaign's messages go: its tenant's supervisors, and those following it alone. */
const campaignTopics = (tenantId: string, campaignId: string) => [
  campaignsTopic(tenantId),
  campaignTopic(tenantId, campaignId),
];
export const agentsTopic = (tenantId: string) => `tenant:${tenantId}:agents`;
export const agentTopic = (tenantId: string, userId: string) =>
  `tenant:${tenantId}:agent:${userId}`;

export const STATS_INTERVAL_MS = 250;
/**
 * Another process hears of this one's first supervisor of a tenant within this long: a
 * heartbeat repeats the announcement every second (src/cluster/push-relay.ts).
 */
const ANNOUNCED_WITHIN_MS = 2_000;

/** A campaign's status change, as supervisors receive it. */
export const campaignStatusMessage = (
  campaignId: string,
  from: string,
  to: string,
): Record<string, unknown> => ({
  type: "campaign.status",
  campaign_id: campaignId,
  status: to,
  from,
});

/** What carries this process's pushes to the sockets of other processes (src/cluster/push-relay.ts). */
export interface PushRelay {
  /** Whether another process shares the database, and so may have sockets listening. */
  readonly active: boolean;
  /** How a write notifies a push in its own commit, in the relay's form. */
  readonly inCommit: CommitNotices;
  /** Sends a serialised message to the other processes, after those sent before it. */
  send(topics: string[], text: string): void;
  /** Whether another process may have a supervisor of the tenant (it said so, or said nothing yet). */
  supervisedElsewhere(tenantId: string): boolean;
  /** Tells the other processes at once that this one now has a supervisor of a new tenant. */
  supervisorsChanged(): void;
}

/**
 * Pushes state changes to subscribed sockets through Bun's pub/sub, and through a relay to
 * the sockets of other processes sharing the database. Until the server listens (in-process
 * tests) pushes reach no socket of this process. `campaign.stats` is coalesced: the campaigns asked for
 * are pushed together at most every 250 ms, each once, computed when they are sent.
 */
export class RealtimeHub {
  private publisher: Publisher | undefined;
  private relay: PushRelay | undefined;
  /** Campaigns whose stats are due at the next flush, and their tenants. */
  private readonly statsDue = new Map<string, string>();
  private flushTimer: ReturnType<typeof setTimeout> | undefined;
  private lastFlushAt = Number.NEGATIVE_INFINITY;
  /** A flush computes its stats asynchronously; the next waits for it to publish. */
  private flushing = false;
  /** Supervisor sockets open here, by tenant: other processes compute stats only for these. */
  private readonly supervisors = new Map<string, number>();
  /** What brings sockets up to date after pushes were lost (registered by the socket routes). */
  private readonly catchUps = new Set<(supervisorsOf?: string) => void>();
  /** What closes this process's sockets when it stops (registered by the socket routes). */
  private readonly socketClosers = new Set<() => void>();

  constructor(
    private readonly logger: Logger,
    private readonly statsOf: (
      tenantId: string,
      campaignId: string,
    ) => Promise<Record<string, unknown> | undefined>,
    private readonly announcedWithinMs = ANNOUNCED_WITHIN_MS,
  ) {}

  attach(publisher: Publisher | undefined): void {
    this.publisher = publisher;
  }

  /** Sends every message published from now on to other processes too; returns the detach. */
  relayTo(relay: PushRelay): () => void {
    this.relay = relay;
    return () => {
      if (this.relay === relay) this.relay = undefined;
    };
  }

  /**
   * Serialises a message once and publishes it to each topic, here and on other processes;
   * `relayed`: a write's commit already carried it to them (see `inCommit`). A message for
   * the supervisors of `supervisorsOf` alone goes only where the tenant has supervisors.
   * A message no socket here subscribes to, and none elsewhere may, is not serialised.
   */
  publish(
    topics: string[],
    message: Record<string, unknown>,
    options: { relayed?: boolean; supervisorsOf?: string } = {},
  ): void {
    const relay = !options.relayed && this.relaysTo(options.supervisorsOf) ? this.relay : undefined;
    const here = this.subscribedHere(topics);
    if (!here && !relay) return;
    const text = JSON.stringify(message);
    if (here) this.deliver(topics, text);
    relay?.send(topics, text);
  }

  private subscribedHere(topics: string[]): boolean {
    const publisher = this.publisher;
    return publisher !== undefined && topics.some((topic) => publisher.subscriberCount(topic) > 0);
  }

  /** Whether another process may listen: any, or one with a supervisor of the tenant. */
  private relaysTo(supervisorsOf: string | undefined): boolean {
    if (!this.relay?.active) return false;
    return supervisorsOf === undefined || this.relay.supervisedElsewhere(supervisorsOf);
  }

  /**
   * A campaign message for other processes that a write notifies in its own commit, when
   * another process is heard of: no statement and no commit of its own. Once the write
   * commits, the message is published here with `relayed`.
   */
  campaignMessageInCommit(
    tenantId: string,
    campaignId: string,
    message: Record<string, unknown>,
  ): CommitNotice | undefined {
    if (!this.relay || !this.relaysTo(tenantId)) return undefined;
    const notices = this.relay.inCommit;
    const entry = JSON.stringify([campaignTopics(tenantId, campaignId), JSON.stringify(message)]);
    // Too large to share a notification: the relay stores it and sends its reference.
    return Buffer.byteLength(entry) <= notices.maxBytes ? { notices, entry } : undefined;
  }

  /** Publishes serialised text to this process's sockets alone: what another process relayed. */
  deliver(topics: string[], text: string): void {
    if (!this.publisher) return;
    for (const topic of topics) {
      try {
        this.publisher.publish(topic, text);
      } catch (error) {
        this.logger.warn("realtime publish failed", { topic, error });
      }
    }
  }

  /** A campaign message, to supervisors of all the tenant's campaigns and of this one. */
  toCampaign(
    tenantId: string,
    campaignId: string,
    message: Record<string, unknown>,
    relayed = false,
  ): void {
    this.publish(campaignTopics(tenantId, campaignId), message, {
      relayed,
      supervisorsOf: tenantId,
    });
  }

  toSupervisors(tenantId: string, message: Record<string, unknown>): void {
    this.publish([agentsTopic(tenantId)], message, { supervisorsOf: tenantId });
  }

  toAgent(tenantId: string, userId: string, message: Record<string, unknown>): void {
    this.publish([agentTopic(tenantId, userId)], message);
  }

  /** Whether another process sharing the database has been heard of (it says so at start). */
  othersHeard(): boolean {
    return this.relay?.active ?? false;
  }

  /**
   * A supervisor socket of the tenant opened here (`+1`) or closed (`-1`). The first of a
   * tenant is announced to the other processes, which relay the tenant's supervisor messages
   * only once they hear of it: a change they committed meanwhile is in a second snapshot,
   * sent once they have surely heard.
   */
  supervisorSocket(tenantId: string, change: 1 | -1): void {
    const count = (this.supervisors.get(tenantId) ?? 0) + change;
    if (count > 0) this.supervisors.set(tenantId, count);
    else this.supervisors.delete(tenantId);
    if (change === 1 && count === 1 && this.relay?.active) {
      this.relay.supervisorsChanged();
      setTimeout(() => this.pushesMissed(tenantId), this.announcedWithinMs).unref?.();
    }
  }

  /** The tenants with a supervisor socket open here. */
  supervisedTenants(): string[] {
    return [...this.supervisors.keys()];
  }

  /** Asks for a `campaign.stats` push at the next flush; asks before it become one message. */
  statsChanged(tenantId: string, campaignId: string): void {
    // Statistics cost work: compute them only for someone who listens. Only this process can
    // compute its campaigns' stats: it does so for its own sockets, and for a tenant that
    // another process has a supervisor of (each says which, when it changes and every second).
    if (!this.relay?.active || !this.relay.supervisedElsewhere(tenantId)) {
      if (!this.publisher) return;
      const listeners =
        this.publisher.subscriberCount(campaignsTopic(tenantId)) +
        this.publisher.subscriberCount(campaignTopic(tenantId, campaignId));
      if (listeners === 0) return;
    }
    this.statsDue.set(campaignId, tenantId);
    this.scheduleFlush();
  }

  /**
   * The interval runs from one publish to the next, as clients see them: a flush whose stats
   * took long to compute does not shorten the gap to the one after it.
   */
  private scheduleFlush(): void {
    if (this.flushTimer || this.flushing || this.statsDue.size === 0) return;
    const wait = Math.max(0, this.lastFlushAt + STATS_INTERVAL_MS - Date.now());
    this.flushTimer = setTimeout(() => void this.flushStats(), wait);
  }

  /**
   * Pushes every due campaign's stats in one turn of the event loop. Bun then writes each
   * socket's share of them at once: twenty messages published together cost a twelfth of the
   * server's time of the same twenty published one turn apart, with 1,000 sockets listening.
   */
  private async flushStats(): Promise<void> {
    this.flushTimer = undefined;
    this.flushing = true;
    const due = [...this.statsDue];
    this.statsDue.clear();
    const computed = await Promise.all(
      due.map(async ([campaignId, tenantId]) => {
        try {
          return { tenantId, campaignId, stats: await this.statsOf(tenantId, campaignId) };
        } catch (error) {
          this.logger.warn("campaign stats push failed", { campaign_id: campaignId, error });
          return undefined;
        }
      }),
    );
    for (const entry of computed) {
      if (!entry?.stats) continue;
      this.toCampaign(entry.tenantId, entry.campaignId, {
        type: "campaign.stats",
        campaign_id: entry.campaignId,
        stats: entry.stats,
      });
    }
    this.lastFlushAt = Date.now();
    this.flushing = false;
    this.scheduleFlush();
  }

  /** Registers what sends sockets their state again after pushes were lost. */
  onPushesMissed(catchUp: (supervisorsOf?: string) => void): void {
    this.catchUps.add(catchUp);
  }

  /**
   * Pushes from other processes were lost: every socket's (the relay's connection was down),
   * or those of the supervisors of `supervisorsOf` alone.
   */
  pushesMissed(supervisorsOf?: string): void {
    for (const catchUp of this.catchUps) catchUp(supervisorsOf);
  }

  /** Registers what closes the sockets of one kind when this process stops. */
  onClose(closeSockets: () => void): void {
    this.socketClosers.add(closeSockets);
  }

  /**
   * Stops pushing and closes every socket (a server stops only once its sockets are closed):
   * clients reconnect, to another process behind the load balancer.
   */
  close(): void {
    for (const closeSockets of this.socketClosers) closeSockets();
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    this.statsDue.clear();
    this.publisher = undefined;
  }
}
