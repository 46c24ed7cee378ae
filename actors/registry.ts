import { KeyedMutex } from "../src/lib/keyed-mutex.ts";
import type { Logger } from "../src/logger.ts";
import {
  type CampaignActor,
  type CampaignContext,
  type CampaignEmitted,
  type CampaignMachine,
  campaignActorFrom,
  campaignMachine,
  restoredSnapshot,
} from "./campaign.machine.ts";
import type { CampaignStore, Clock } from "./ports.ts";

export type CampaignListener = (event: CampaignEmitted) => void;

/**
 * Owns the lifecycle of campaign actors. An actor is restored from the store before it takes
 * any event (the init gate), commands to one campaign run one at a time, and an actor that
 * fails is dropped and restored from its last committed state on next use.
 */
export class CampaignRegistry {
  private readonly actors = new Map<string, CampaignActor>();
  private readonly loading = new Map<string, Promise<CampaignActor | undefined>>();
  private readonly queue = new KeyedMutex();
  private readonly listeners = new Set<CampaignListener>();

  constructor(
    private readonly store: CampaignStore,
    private readonly clock: Clock,
    private readonly logger: Logger,
    /** The machine to run; tests provide variants (a failing action, for one). */
    private readonly machine: CampaignMachine = campaignMachine,
  ) {}

  /** Brings back every running and paused campaign, as they were committed. */
  async hydrateActive(): Promise<number> {
    const contexts = await this.store.loadActive(this.clock.now());
    for (const context of contexts) this.spawn(context);
    return contexts.length;
  }

  /**
   * Runs `command` with the campaign's actor, after every earlier command to that campaign.
   * Returns undefined when the campaign does not exist or belongs to another tenant.
   */
  async withCampaign<T>(
    tenantId: string,
    campaignId: string,
    command: (actor: CampaignActor) => Promise<T>,
  ): Promise<{ found: true; value: T } | { found: false }> {
    return this.queue.run(campaignId, async () => {
      const actor = await this.actorFor(campaignId);
      if (!actor || actor.getSnapshot().context.campaign.tenantId !== tenantId)
        return { found: false };
      return { found: true, value: await command(actor) };
    });
  }

  /** The live context of a loaded campaign, without waiting for its queue. */
  peek(campaignId: string): CampaignContext | undefined {
    return this.actors.get(campaignId)?.getSnapshot().context;
  }

  /** Status changes of every campaign, for realtime pushes. */
  subscribe(listener: CampaignListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  stopAll(): void {
    for (const actor of this.actors.values()) actor.stop();
    this.actors.clear();
  }

  private actorFor(campaignId: string): Promise<CampaignActor | undefined> {
    const live = this.actors.get(campaignId);
    if (live) return Promise.resolve(live);
    let pending = this.loading.get(campaignId);
    if (!pending) {
      pending = this.store
        .load(campaignId, this.clock.now())
        .then((context) => (context ? this.spawn(context) : undefined))
        .finally(() => this.loading.delete(campaignId));
      this.loading.set(campaignId, pending);
    }
    return pending;
  }

  private spawn(context: CampaignContext): CampaignActor {
    const id = context.campaign.id;
    const actor = campaignActorFrom(restoredSnapshot(context), {}, this.machine);
    actor.on("campaign.statusChanged", (event) => {
      for (const listener of this.listeners) {
        try {
          listener(event);
        } catch (error) {
          this.logger.error("campaign listener failed", { campaign_id: id, error });
        }
      }
    });
    actor.subscribe({
      error: (error) => {
        // Contain the failure to this campaign: forget the actor; the next command restores it.
        this.logger.error("campaign actor failed; it will be restored", { campaign_id: id, error });
        if (this.actors.get(id) === actor) this.actors.delete(id);
      },
    });
    this.actors.set(id, actor.start());
    return actor;
  }
}
