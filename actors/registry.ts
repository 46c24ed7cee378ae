import { databaseFailureOf } from "../db/availability.ts";
import {
  type CampaignLeases,
  isLeaseLost,
  LeaseLostError,
  localLeases,
} from "../src/cluster/leases.ts";
import { KeyedMutex } from "../src/lib/keyed-mutex.ts";
import type { Logger } from "../src/logger.ts";
import {
  type CampaignActor,
  type CampaignContext,
  type CampaignEmitted,
  type CampaignMachine,
  campaignActorFrom,
  campaignMachine,
  type RestorableContext,
  restoredSnapshot,
} from "./campaign.machine.ts";
import type { DialingEvent, DialingState, LiveCall } from "./dialing.ts";
import type { CampaignPipeline, CampaignStore, Clock } from "./ports.ts";

export type CampaignListener = (event: CampaignEmitted) => void;

/** Commands waiting in one campaign's line at most; more are refused (503) until it moves. */
export const MAX_WAITING_COMMANDS = 1_000;

/**
 * Owns the lifecycle of campaign actors. An actor is restored from the store before it takes
 * any event (the init gate), commands to one campaign run one at a time, and an actor that
 * fails is dropped and restored from its last committed state on next use.
 */
export class CampaignRegistry {
  private readonly actors = new Map<string, CampaignActor>();
  private readonly loading = new Map<string, Promise<CampaignActor | undefined>>();
  private readonly queue = new KeyedMutex(MAX_WAITING_COMMANDS);
  private readonly listeners = new Set<CampaignListener>();
  /** Running campaigns by tenant: where claims look for work. */
  private readonly running = new Map<string, Set<string>>();
  /** Calls in flight of loaded dialing states: which campaign an event goes to, and node load. */
  private readonly liveCalls = new Map<string, { campaignId: string; nodeId: string }>();
  private readonly nodeLoad = new Map<string, number>();

  constructor(
    private readonly store: CampaignStore,
    private readonly clock: Clock,
    private readonly logger: Logger,
    /** The machine to run; tests provide variants (a failing action, for one). */
    private readonly machine: CampaignMachine = campaignMachine,
    /** Which campaigns this process owns; all of them unless several processes share the database. */
    readonly leases: CampaignLeases = localLeases(),
  ) {
    // A campaign whose lease moves, either way, starts again from the database.
    leases.onChange((_change, campaignId) => this.release(campaignId));
  }

  /**
   * Brings back every running and paused campaign, as they were committed, and the dialing
   * state of every campaign with calls in flight, so that their events and node load are known.
   */
  async hydrateActive(): Promise<number> {
    // Shared with other processes: only the campaigns nobody else holds are this one's.
    const taken = this.leases.shared
      ? new Set(await this.leases.takeOrphans(2 ** 31 - 1))
      : undefined;
    const mine = (campaignId: string) => !taken || taken.has(campaignId);
    const contexts = (await this.store.loadActive(this.clock.now())).filter((context) =>
      mine(context.campaign.id),
    );
    for (const context of contexts) this.spawn(context);
    for (const campaignId of await this.store.campaignsWithLiveCalls()) {
      if (!mine(campaignId)) continue;
      await this.queue.run(campaignId, async () => {
        const actor = await this.actorFor(campaignId);
        if (actor) await this.ensureDialing(actor);
      });
    }
    return contexts.length;
  }

  /**
   * Takes the campaigns that need an owner and have none (running or paused, or with calls in
   * flight: their owner stopped renewing) and restores each with its dialing state, so that their
   * calls' events and their pacing carry on here; with `only`, of those campaigns alone (handed
   * over by another process). Returns the campaigns taken.
   */
  async adoptOrphans(only?: readonly string[]): Promise<string[]> {
    const taken = await this.leases.takeOrphans(undefined, only);
    await Promise.all(
      taken.map((campaignId) =>
        this.queue.run(campaignId, async () => {
          if (!this.leases.holds(campaignId)) return;
          const actor = await this.actorFor(campaignId);
          if (actor) await this.ensureDialing(actor);
        }),
      ),
    );
    return taken;
  }

  /**
   * Like `withCampaign`, with the campaign's dialing state loaded first (once, inside the
   * campaign's queue, so no committed change can slip between the read and the actor).
   */
  withDialing<T>(
    tenantId: string,
    campaignId: string,
    command: (actor: CampaignActor, dialing: DialingState) => Promise<T>,
  ): Promise<{ found: true; value: T } | { found: false }> {
    return this.withCampaign(tenantId, campaignId, async (actor) =>
      command(actor, await this.ensureDialing(actor)),
    );
  }

  /**
   * The tenant's campaign actor when its dialing state is already loaded: changes to single
   * calls need no place in the campaign's queue, only their committed order per call.
   */
  dialingActor(tenantId: string, campaignId: string): CampaignActor | undefined {
    const actor = this.actors.get(campaignId);
    const context = actor?.getSnapshot().context;
    if (!context?.dialing || context.campaign.tenantId !== tenantId) return undefined;
    return this.leases.holds(campaignId) ? actor : undefined;
  }

  /** Hands a committed dialing change to the campaign's actor and keeps the call index. */
  dispatch(actor: CampaignActor, event: DialingEvent): void {
    if (event.type === "dialing.loaded")
      for (const call of Object.values(event.dialing.calls)) this.indexCall(call);
    if (event.type === "dialing.callsPlaced") for (const call of event.calls) this.indexCall(call);
    if (event.type === "dialing.callEnded") this.unindexCall(event.callId);
    actor.send(event);
  }

  /** The campaign a call in flight belongs to, when its dialing state is loaded. */
  campaignOfCall(callId: string): string | undefined {
    return this.liveCalls.get(callId)?.campaignId;
  }

  /** The calls in flight on a node, with their campaigns. */
  liveCallsOnNode(nodeId: string): { callId: string; campaignId: string }[] {
    const found: { callId: string; campaignId: string }[] = [];
    if (!this.nodeLoad.has(nodeId)) return found;
    for (const [callId, entry] of this.liveCalls) {
      if (entry.nodeId === nodeId) found.push({ callId, campaignId: entry.campaignId });
    }
    return found;
  }

  /** Calls in flight on a node, across its tenant's campaigns. */
  callsOnNode(nodeId: string): number {
    return this.nodeLoad.get(nodeId) ?? 0;
  }

  /** The tenant's running campaigns, oldest first. */
  runningCampaigns(tenantId: string): string[] {
    const ids = [...(this.running.get(tenantId) ?? [])];
    const createdAt = (id: string) => this.peek(id)?.campaign.createdAt ?? "";
    return ids.sort((a, b) => createdAt(a).localeCompare(createdAt(b)) || a.localeCompare(b));
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
      // Commands run only where the campaign's lease is held; its owner restores it.
      if (!this.leases.holds(campaignId)) throw new LeaseLostError(campaignId);
      const actor = await this.actorFor(campaignId);
      if (!actor || actor.getSnapshot().context.campaign.tenantId !== tenantId)
        return { found: false };
      try {
        return { found: true, value: await command(actor) };
      } catch (error) {
        this.forgetIfUncertain(campaignId, actor, error);
        throw error;
      }
    });
  }

  /**
   * Runs a command through its pipeline, after every earlier command to the campaign: the
   * step decides from the actor's state, the port commits what it decided, and only then does
   * the actor adopt the events; a failed commit leaves the actor as it was.
   */
  execute<C, W, F, R, E>(
    tenantId: string,
    campaignId: string,
    command: C,
    pipeline: CampaignPipeline<C, W, F, R, E>,
  ): Promise<{ found: true; value: R } | { found: false }> {
    return this.withCampaign(tenantId, campaignId, (actor) =>
      this.executeOn(actor, command, pipeline),
    );
  }

  /** `execute` for a command that already holds the campaign's place in its queue. */
  async executeOn<C, W, F, R, E>(
    actor: CampaignActor,
    command: C,
    pipeline: CampaignPipeline<C, W, F, R, E>,
  ): Promise<R> {
    const decision = pipeline.step(actor.getSnapshot(), command, this.clock.now());
    const facts = await pipeline.commit(decision.writes);
    for (const event of decision.adopt(facts)) {
      if (event.type.startsWith("dialing.")) this.dispatch(actor, event as DialingEvent);
      else actor.send(event);
    }
    const effects = decision.effects?.(facts);
    if (effects?.length) pipeline.apply?.(effects);
    return decision.reply(facts);
  }

  /**
   * A write whose outcome is unknown (the connection dropped during its commit) leaves the
   * actor unsure of what the database holds: it is forgotten and restored from the database on
   * its next command, so that memory never claims a change the database may not have, nor
   * misses one it has (a retry with the same idempotency key then finds the stored reply).
   */
  forgetIfUncertain(campaignId: string, actor: CampaignActor, error: unknown): void {
    if (isLeaseLost(error)) {
      this.leases.lost(campaignId);
      return;
    }
    if (databaseFailureOf(error) !== "outcome_unknown") return;
    if (this.actors.get(campaignId) !== actor) return;
    this.logger.warn("campaign actor forgotten after a commit of unknown outcome", {
      campaign_id: campaignId,
    });
    actor.stop();
    this.actors.delete(campaignId);
  }

  /**
   * Forgets the expired replies of windows that no change has pruned for `idleMs`: a busy
   * window prunes itself as it records, but an idle one would hold its last burst for good.
   * Busy windows are left alone, so a sweep costs nothing per change. Returns how many it pruned.
   * The event skips the campaign's command queue: it drops only replies past their expiry,
   * which every lookup already treats as absent, so no command can tell it happened.
   */
  forgetIdleReplies(idleMs: number): number {
    const now = this.clock.now();
    let pruned = 0;
    for (const actor of this.actors.values()) {
      const oldest = actor.getSnapshot().context.idempotency.oldestExpiresAt;
      if (oldest === undefined || oldest > now - idleMs) continue;
      actor.send({ type: "idempotency.expired", now });
      pruned++;
    }
    return pruned;
  }

  /** The live context of a loaded campaign, without waiting for its queue. */
  peek(campaignId: string): CampaignContext | undefined {
    const actor = this.actors.get(campaignId);
    return actor && this.leases.holds(campaignId) ? actor.getSnapshot().context : undefined;
  }

  /** Status changes of every campaign, for realtime pushes. */
  subscribe(listener: CampaignListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private async ensureDialing(actor: CampaignActor): Promise<DialingState> {
    const loaded = actor.getSnapshot().context.dialing;
    if (loaded) return loaded;
    const dialing = await this.store.loadDialing(
      actor.getSnapshot().context.campaign.id,
      this.clock.now(),
    );
    this.dispatch(actor, { type: "dialing.loaded", dialing });
    return actor.getSnapshot().context.dialing as DialingState;
  }

  private indexCall(call: LiveCall): void {
    if (this.liveCalls.has(call.id)) return;
    this.liveCalls.set(call.id, { campaignId: call.campaignId, nodeId: call.edgeNodeId });
    this.nodeLoad.set(call.edgeNodeId, (this.nodeLoad.get(call.edgeNodeId) ?? 0) + 1);
  }

  private unindexCall(callId: string): void {
    const entry = this.liveCalls.get(callId);
    if (!entry) return;
    this.liveCalls.delete(callId);
    const load = (this.nodeLoad.get(entry.nodeId) ?? 1) - 1;
    if (load > 0) this.nodeLoad.set(entry.nodeId, load);
    else this.nodeLoad.delete(entry.nodeId);
  }

  private trackRunning(tenantId: string, campaignId: string, running: boolean): void {
    const ids = this.running.get(tenantId) ?? new Set<string>();
    if (running) ids.add(campaignId);
    else ids.delete(campaignId);
    this.running.set(tenantId, ids);
  }

  /**
   * Forgets a campaign this process no longer owns (or owns anew): its actor, its calls in the
   * index and its place among running campaigns. Its next command restores it from the database.
   */
  release(campaignId: string): void {
    const actor = this.actors.get(campaignId);
    if (!actor) return;
    const { campaign } = actor.getSnapshot().context;
    actor.stop();
    this.actors.delete(campaignId);
    this.trackRunning(campaign.tenantId, campaignId, false);
    for (const [callId, entry] of [...this.liveCalls])
      if (entry.campaignId === campaignId) this.unindexCall(callId);
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

  private spawn(context: RestorableContext): CampaignActor {
    const id = context.campaign.id;
    const actor = campaignActorFrom(restoredSnapshot(context), {}, this.machine);
    this.trackRunning(context.campaign.tenantId, id, context.campaign.status === "running");
    actor.on("campaign.statusChanged", (event) => {
      this.trackRunning(event.tenantId, event.campaignId, event.to === "running");
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
