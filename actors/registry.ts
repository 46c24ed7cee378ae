import { databaseFailureOf } from "../db/availability.ts";
import {
  type CampaignLeases,
  isLeaseLost,
  LeaseLostError,
  localLeases,
} from "../src/cluster/leases.ts";
import { decideCallControl } from "../src/dialer/call-controls.ts";
import {
  decideCallEvent,
  decideDisposition,
  decideExpiry,
  decideReconcile,
} from "../src/dialer/call-decide.ts";
import { decideClaim } from "../src/dialer/claim-decide.ts";
import { decideDial, decidePreviewSkip, offeredTo } from "../src/dialer/preview-decide.ts";
import { ApiError, notFound } from "../src/errors.ts";
import type { Logger } from "../src/logger.ts";
import { decideAgentState } from "../src/modules/agents/decide.ts";
import {
  decideRecount,
  decideSettings,
  decideStats,
  decideStatus,
} from "../src/modules/campaigns/decide.ts";
import { decideMessage } from "../src/modules/messages/decide.ts";
import { AgentsAfter, snapshotWith } from "./batch-view.ts";
import {
  type CampaignActor,
  type CampaignContext,
  type CampaignEmitted,
  type CampaignEvent,
  type CampaignMachine,
  type CampaignSnapshot,
  campaignActorFrom,
  campaignMachine,
  type RestorableContext,
  restoredSnapshot,
} from "./campaign.machine.ts";
import { type BatchOutcome, CampaignLines, type LineEntry } from "./campaign-lines.ts";
import {
  answer,
  type CampaignCommand,
  type CommandInputs,
  type CommitFacts,
  type Decision,
  isRead,
  type ReplyOf,
} from "./commands.ts";
import type { DialingEvent, DialingState, LiveCall } from "./dialing.ts";
import type { CampaignStore, Clock, CommandPort, Forwarder } from "./ports.ts";

export type CampaignListener = (event: CampaignEmitted) => void;

/** Commands waiting in one campaign's line at most; more are refused (503) until it moves. */
export const MAX_WAITING_COMMANDS = 1_000;

/** Commands decided together, their writes sent side by side, at most. */
const MAX_BATCH = 64;

/** What a command's run hands back: its reply, and what the reply waits for. */
interface Done {
  reply: unknown;
  settled: Promise<unknown> | undefined;
}

type Queued = Extract<
  LineEntry<{ target: CommandTarget; command: CampaignCommand }>,
  { kind: "command" }
>;
type Decided = { entry: Queued; decision: Decision<unknown> };

/** The calls a decision writes. */
const callsWrittenBy = (decision: Decision<unknown>): string[] =>
  decision.writes.flatMap((write) => {
    if (write.type === "save" || write.type === "bridge" || write.type === "optOut")
      return [write.row.id];
    if (write.type === "end") return [write.ended.id];
    if (write.type === "settle") return [write.call.id];
    return [];
  });

/**
 * A claim may commit while the calls already in flight go on: their events cannot name the
 * calls it places, and the leads it takes are not final, so no completion can be decided
 * meanwhile. One that reserves no agent moves no agent they may take; one that does has its
 * agents held meanwhile (`everyCandidatePlaced`). Later claims, status changes and settings
 * wait for it.
 */
/** What a claim's commit would report if it placed every call it sent. */
function everyCandidatePlaced(decision: Decision<unknown>): CommitFacts {
  return {
    marked: decision.writes.flatMap((write) =>
      write.type === "claim"
        ? write.claim.candidates.map((candidate) => ({
            id: candidate.leadId,
            prior: "Fresh" as const,
            attempts: 0,
          }))
        : [],
    ),
  };
}

const overlaps = ({ decision }: Decided) =>
  decision.writes.length === 1 &&
  decision.writes.every(
    (write) =>
      write.type === "claim" && write.claim.candidates.every((candidate) => !candidate.agentId),
  );

/**
 * A campaign's decisions whose writes are on their way: what the next decision sees (the
 * actor's state as every decision sent leaves it, the agents likewise), the calls they
 * write, and the adoption of the last one sent.
 */
interface Flight {
  actor: CampaignActor;
  snapshot: CampaignSnapshot;
  /** Set from the agents at hand of the flight's first gathering. */
  agents: AgentsAfter | undefined;
  calls: Set<string>;
  tail: Promise<void>;
  /** The adoption of a claim sent and not yet adopted: the next claim's pacing counts its calls. */
  claimed: Promise<void> | undefined;
  /** Agents a claim sent reserves, until it is adopted: their own commands wait for it. */
  reserving: Set<string>;
  /** Batches sent and not yet adopted. */
  sent: number;
  /** A commit failed: the campaign is decided afresh once the rest have settled. */
  broken: boolean;
}

/** Attempts to find and reach an owner before answering 503; an owner that died is replaced within a lease. */
const ROUTE_ATTEMPTS = 5;

/** Where a command goes: a campaign of a tenant, and what to call it when there is none. */
export interface CommandTarget {
  tenantId: string;
  campaignId: string;
  /** The resource a 404 names: the campaign, or the call the command was about. */
  missing?: "campaign" | "call";
}

/**
 * Owns the campaign actors and is the one way into them: `run` routes a command to the
 * process that holds the campaign's lease, serialises it in the campaign's queue, restores
 * the actor first if needed (the init gate), gathers what the command reads of the world,
 * decides (a pure step), commits the decision's writes through the port, has the actor adopt
 * them, and carries out what follows. An actor that fails, or whose commit may or may not
 * have happened, is dropped and restored from the database on next use.
 */
export class CampaignRegistry {
  private readonly actors = new Map<string, CampaignActor>();
  private readonly loading = new Map<string, Promise<CampaignActor | undefined>>();
  private readonly lines = new CampaignLines<{ target: CommandTarget; command: CampaignCommand }>(
    (campaignId, batch) => this.runBatch(campaignId, batch),
    ({ command }) => batchable(command),
    MAX_WAITING_COMMANDS,
    MAX_BATCH,
  );
  private readonly listeners = new Set<CampaignListener>();
  /** Running campaigns by tenant: where claims look for work. */
  private readonly running = new Map<string, Set<string>>();
  /** Calls in flight of loaded dialing states: which campaign an event goes to, and node load. */
  private readonly liveCalls = new Map<string, { campaignId: string; nodeId: string }>();
  private readonly nodeLoad = new Map<string, number>();
  private readonly flights = new Map<string, Flight>();
  private port: CommandPort | undefined;
  private forwarder: Forwarder | undefined;

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

  /** The port commands commit and carry out through, and how they reach other processes. */
  connect(port: CommandPort, forwarder?: Forwarder): void {
    this.port = port;
    this.forwarder = forwarder;
  }

  /**
   * Runs a command on the campaign's owner: here when this process holds its lease (or takes
   * it, nobody holding it), else sent to the owner. A command whose write was refused by its
   * fence (the lease moved meanwhile) committed nothing and goes to the new owner. With one
   * process, every campaign is held here.
   */
  async run<C extends CampaignCommand>(
    sent: CommandTarget,
    command: C,
    requestId = "",
  ): Promise<ReplyOf<C>> {
    // Ids are stored in lower case; a campaign is one actor whatever case it was named in.
    const target = { ...sent, campaignId: sent.campaignId.toLowerCase() };
    const leases = this.leases;
    let unreachable: string | undefined;
    for (let attempt = 0; attempt < ROUTE_ATTEMPTS; attempt++) {
      const owner = leases.holds(target.campaignId)
        ? ({ kind: "local" } as const)
        : await leases.resolve(target.tenantId, target.campaignId, unreachable);
      if (owner.kind === "missing") throw notFound(target.missing ?? "campaign");
      if (owner.kind === "local") {
        try {
          return await this.runHere(target, command);
        } catch (error) {
          if (!isLeaseLost(error)) throw error;
          leases.lost(target.campaignId);
          continue;
        }
      }
      // `none`: this process is draining and the campaign has no owner yet; another takes it.
      if (owner.kind === "remote" && this.forwarder) {
        const reply = await this.forwarder.forward(owner.url, { target, command, requestId });
        if (reply.kind === "done") return reply.value as ReplyOf<C>;
        if (reply.kind === "failed") {
          // An owner that went silent is looked up again next time: it may have been replaced.
          if (reply.silent) leases.forgetOwner(target.campaignId);
          throw reply.error;
        }
        leases.forgetOwner(target.campaignId);
        if (reply.kind === "refused") {
          // Nothing listens where the owner was: it died, and its campaign is taken now.
          unreachable = owner.url;
          continue;
        }
      }
      unreachable = undefined;
      // The owner gave the campaign up or is handing it over: ask again shortly.
      await Bun.sleep(100 * 2 ** attempt);
    }
    throw new ApiError(
      503,
      "unavailable",
      "the campaign's owner cannot be reached; retry shortly",
      undefined,
      { "retry-after": "1" },
    );
  }

  /**
   * Runs a command here, where the campaign's lease is held, after every earlier command to
   * the campaign: a command forwarded by another process comes in here. The reply is given
   * once what follows the change has settled (an agent's row committed), outside the line.
   */
  async runHere<C extends CampaignCommand>(target: CommandTarget, command: C): Promise<ReplyOf<C>> {
    const done = (await this.lines.command(target.campaignId, { target, command })) as Done;
    if (done.settled) await done.settled;
    return done.reply as ReplyOf<C>;
  }

  /**
   * Runs a batch of a campaign's commands. What each reads is gathered for all at once; each
   * is then decided in turn on the campaign as every decision sent before it leaves it (the
   * campaign's flight: decisions whose writes are still on their way, see `Flight`); their
   * writes are sent together and, once they have committed and every batch sent before has
   * been adopted, the actor adopts them and they are carried out. The next batch need not wait
   * for the commit: the line goes on while it is under way. A command refused, or whose reads
   * failed, fails alone; a failed commit fails its batch, and the campaign is decided afresh
   * from the database once every commit under way has settled.
   *
   * The batch stops, and hands back the commands after, at a command whose call a decision
   * still under way has changed (what was read of it may be stale, and two writes of one call
   * must not race), and at a decision whose outcome its commit decides (a claim, a status
   * change, settings: the line waits for it, unless it is a claim that reserves no agent).
   */
  private async runBatch(
    campaignId: string,
    batch: Queued[],
  ): Promise<BatchOutcome<Queued["command"]>> {
    const port = this.port;
    if (!port) throw new Error("the campaign registry has no port");
    // Commands run only where the campaign's lease is held; its owner restores it.
    if (!this.leases.holds(campaignId)) throw new LeaseLostError(campaignId);
    const [first] = batch;
    if (batch.length === 1 && first && !batchable(first.command.command))
      return this.runAlone(campaignId, first);
    const flight = await this.flightOf(campaignId, batch);
    const now = this.clock.now();
    const gathered = await Promise.allSettled(
      batch.map(({ command }) =>
        command.target.tenantId === flight.snapshot.context.campaign.tenantId
          ? port.gather(flight.snapshot, command.command, now)
          : Promise.reject(notFound(command.target.missing ?? "campaign")),
      ),
    );
    if (!this.stillFlying(campaignId, flight)) return { left: batch };
    const decided: Decided[] = [];
    const stop = (index: number): BatchOutcome<Queued["command"]> => {
      this.send(campaignId, flight, decided);
      return { left: batch.slice(index), overlapping: flight.tail, blocked: true };
    };
    for (const [index, entry] of batch.entries()) {
      const { command } = entry.command;
      const callId = "callId" in command ? command.callId : undefined;
      if (callId !== undefined && flight.calls.has(callId)) return stop(index);
      if (command.type === "agent.state" && flight.reserving.has(command.agent.userId))
        return stop(index);
      const inputs = gathered[index] as PromiseSettledResult<CommandInputs>;
      if (inputs.status === "rejected") {
        if (isLeaseLost(inputs.reason)) throw inputs.reason;
        entry.reject(inputs.reason);
        continue;
      }
      let decision: Decision<unknown>;
      try {
        flight.agents ??= new AgentsAfter(inputs.value.agents);
        inputs.value.agents = flight.agents;
        decision = decide(flight.snapshot, command, inputs.value, now);
      } catch (error) {
        entry.reject(error);
        continue;
      }
      const written = callsWrittenBy(decision);
      if (written.some((id) => flight.calls.has(id))) return stop(index);
      decided.push({ entry, decision });
      if (decision.writes.some((write) => write.type === "status")) {
        // The campaign's completion: what follows is decided on its new status.
        this.send(campaignId, flight, decided);
        return { left: batch.slice(index + 1), overlapping: flight.tail, blocked: true };
      }
      for (const id of [...written, ...(callId ? [callId] : [])]) flight.calls.add(id);
      flight.snapshot = snapshotWith(flight.snapshot, decision.adopt({}));
      flight.agents?.apply(decision.effects({}));
    }
    this.send(campaignId, flight, decided);
    return { left: [], overlapping: flight.tail };
  }

  /**
   * A command that runs alone. A status change or new settings waits for every decision under
   * way, and what follows waits for it. A claim is decided on the calls' changes under way,
   * without waiting for them; while another claim's placements are on their way, it steps out
   * of the line and joins it again once they are adopted (its pacing counts them); what
   * follows waits for it only if it reserves agents. Stats are read from the actor as committed.
   */
  private async runAlone(
    campaignId: string,
    entry: Queued,
  ): Promise<BatchOutcome<Queued["command"]>> {
    const port = this.port as CommandPort;
    const { command, target } = entry.command;
    let flight = await this.flightOf(campaignId, [entry]);
    if (command.type === "status" || command.type === "settings" || command.type === "message") {
      await flight.tail;
      flight = await this.flightOf(campaignId, [entry]);
    } else if (command.type === "claim" && flight.claimed) {
      // Another claim's placements are on their way, and its pacing must count them: it joins
      // the line again once they are adopted, and the line does not wait meanwhile.
      void flight.claimed.then(() => this.lines.again(campaignId, entry));
      return { left: [] };
    }
    const snapshot = isRead(command) ? flight.actor.getSnapshot() : flight.snapshot;
    const now = this.clock.now();
    let decision: Decision<unknown>;
    try {
      if (snapshot.context.campaign.tenantId !== target.tenantId)
        throw notFound(target.missing ?? "campaign");
      const inputs = await port.gather(snapshot, command, now);
      if (!this.stillFlying(campaignId, flight)) return { left: [entry] };
      flight.agents ??= new AgentsAfter(inputs.agents);
      inputs.agents = flight.agents;
      decision = decide(snapshot, command, inputs, now);
    } catch (error) {
      if (isLeaseLost(error)) throw error;
      entry.reject(error);
      return { left: [] };
    }
    if (isRead(command)) {
      entry.resolve({ reply: decision.reply({}), settled: undefined } satisfies Done);
      return { left: [] };
    }
    this.send(campaignId, flight, [{ entry, decision }]);
    if (command.type === "claim") {
      const sent = flight;
      const claimed = sent.tail.then(() => {
        if (sent.claimed === claimed) sent.claimed = undefined;
      });
      sent.claimed = claimed;
    }
    // A claim lets the calls in flight go on meanwhile. The agents it reserves are held, as if
    // every call it sent were placed, until it is adopted: nothing decided meanwhile takes
    // them, and their own commands wait.
    if (command.type === "claim") {
      if (!overlaps({ entry, decision })) {
        const agents = flight.agents as AgentsAfter;
        const held = agents.hold(decision.effects(everyCandidatePlaced(decision)));
        for (const userId of held) flight.reserving.add(userId);
        void (flight.claimed as Promise<void>).then(() => {
          agents.release(held);
          for (const userId of held) flight.reserving.delete(userId);
        });
      }
      return { left: [], overlapping: flight.tail };
    }
    await flight.tail;
    return { left: [], overlapping: flight.tail, blocked: true };
  }

  /**
   * The campaign's flight, begun from its actor when nothing is under way (restored first
   * if need be); after a failed commit, or once its actor was let go, when every commit under
   * way has settled.
   */
  private async flightOf(campaignId: string, batch: Queued[]): Promise<Flight> {
    const current = this.flights.get(campaignId);
    if (current && this.flies(campaignId, current)) return current;
    if (current) await current.tail;
    const actor = await this.actorFor(campaignId);
    if (!actor) throw notFound(batch[0]?.command.target.missing ?? "campaign");
    if (batch.some((entry) => needsDialing(entry.command.command))) await this.ensureDialing(actor);
    const flight: Flight = {
      actor,
      snapshot: actor.getSnapshot(),
      agents: undefined,
      calls: new Set(),
      tail: Promise.resolve(),
      claimed: undefined,
      reserving: new Set(),
      sent: 0,
      broken: false,
    };
    this.flights.set(campaignId, flight);
    return flight;
  }

  /**
   * Whether a batch may be decided on the flight it began with, once its reads are gathered.
   * The commits under way may have been adopted meanwhile, and the flight let go: the batch's
   * decisions are made on it, so it carries on, and what follows is decided on them and adopted
   * after them (a flight begun afresh from the actor would know neither). A commit that failed
   * meanwhile broke it: the batch is decided again, afresh.
   */
  private stillFlying(campaignId: string, flight: Flight): boolean {
    if (!this.flies(campaignId, flight)) return false;
    if (!this.flights.has(campaignId)) this.flights.set(campaignId, flight);
    return this.flights.get(campaignId) === flight;
  }

  /** A flight goes on unless a commit failed or its actor was let go (the lease moved). */
  private flies(campaignId: string, flight: Flight): boolean {
    return !flight.broken && this.actors.get(campaignId) === flight.actor;
  }

  /**
   * Sends decisions' writes and chains their adoption after every batch sent before: the
   * actor adopts in the order decisions were made, each once its writes have committed.
   */
  private send(campaignId: string, flight: Flight, decided: Decided[]): void {
    if (decided.length === 0) return;
    const port = this.port as CommandPort;
    const commit = port.commit(decided.flatMap(({ decision }) => decision.writes));
    const before = flight.tail;
    const written = decided.flatMap(({ decision }) => callsWrittenBy(decision));
    flight.sent++;
    flight.tail = (async () => {
      const outcome = await commit.then(
        (facts) => ({ facts }),
        (error: unknown) => ({ error }),
      );
      await before;
      if ("error" in outcome) {
        flight.broken = true;
        if (isLeaseLost(outcome.error)) this.leases.lost(campaignId);
        else this.forgetAfterFailedCommit(campaignId, flight.actor, outcome.error);
        for (const { entry } of decided) entry.reject(outcome.error);
      } else this.adoptAll(flight, decided, outcome.facts);
      for (const id of written) flight.calls.delete(id);
      if (--flight.sent === 0 && this.flights.get(campaignId) === flight)
        this.flights.delete(campaignId);
    })();
  }

  /** Decisions committed: adopted by the actor in order, carried out, answered. */
  private adoptAll(flight: Flight, decided: Decided[], facts: CommitFacts): void {
    const port = this.port as CommandPort;
    for (const { entry, decision } of decided) {
      try {
        const events = decision.adopt(facts);
        for (const event of events) this.adopt(flight.actor, event);
        // A claim's placements were not known when later decisions were made: they join
        // what the decisions after them see.
        if (decision.writes.some((write) => write.type === "claim"))
          flight.snapshot = snapshotWith(flight.snapshot, events);
        const settled = port.carryOut(decision.effects(facts));
        entry.resolve({ reply: decision.reply(facts), settled } satisfies Done);
      } catch (error) {
        entry.reject(error);
      }
    }
  }

  /** A committed change, adopted by the campaign's actor; the call index follows its calls. */
  private adopt(actor: CampaignActor, event: CampaignEvent): void {
    if (event.type === "dialing.loaded") {
      // A restore after a forgotten actor starts the campaign's index again from the database.
      const campaignId = actor.getSnapshot().context.campaign.id;
      for (const [callId, entry] of [...this.liveCalls])
        if (entry.campaignId === campaignId) this.unindexCall(callId);
      for (const call of event.dialing.calls) this.indexCall(call);
    }
    if (event.type === "dialing.callsPlaced") for (const call of event.calls) this.indexCall(call);
    if (event.type === "dialing.callEnded") this.unindexCall(event.callId);
    actor.send(event);
  }

  /**
   * A commit that failed may have written part of a decision (a call's end without the
   * campaign's completion), or all of it with its outcome unknown (the connection dropped
   * during its commit): the actor is forgotten and restored from the database on its next
   * command, so that memory never claims a change the database may not have, nor misses one
   * it has. A refusal (an `ApiError`, such as a version conflict) wrote nothing.
   */
  private forgetAfterFailedCommit(campaignId: string, actor: CampaignActor, error: unknown) {
    if (error instanceof ApiError || isLeaseLost(error)) return;
    if (this.actors.get(campaignId) !== actor) return;
    this.logger.warn("campaign actor forgotten after a failed commit", {
      campaign_id: campaignId,
      failure: databaseFailureOf(error) ?? "error",
    });
    // Its place among running campaigns and its calls stay known: claims and events find it,
    // and restore it.
    actor.stop();
    this.actors.delete(campaignId);
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
      if (mine(campaignId)) await this.restoreDialing(campaignId);
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
    await Promise.all(taken.map((campaignId) => this.restoreDialing(campaignId)));
    return taken;
  }

  /** Restores a campaign held here with its dialing state, in its queue. */
  private restoreDialing(campaignId: string): Promise<void> {
    return this.lines.task(campaignId, async () => {
      if (!this.leases.holds(campaignId)) return;
      const actor = await this.actorFor(campaignId);
      if (actor) await this.ensureDialing(actor);
    });
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

  /** Every running campaign this process knows of, with its tenant. */
  allRunning(): { tenantId: string; campaignId: string }[] {
    return [...this.running].flatMap(([tenantId, ids]) =>
      [...ids].map((campaignId) => ({ tenantId, campaignId })),
    );
  }

  /** The tenant's running campaigns, oldest first. */
  runningCampaigns(tenantId: string): string[] {
    const ids = [...(this.running.get(tenantId) ?? [])];
    const createdAt = (id: string) => this.peek(id)?.campaign.createdAt ?? "";
    return ids.sort((a, b) => createdAt(a).localeCompare(createdAt(b)) || a.localeCompare(b));
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

  /** The live context of a loaded campaign, without waiting for its queue: a read. */
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
    this.adopt(actor, { type: "dialing.loaded", dialing } satisfies DialingEvent);
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

/**
 * Decides any campaign command from the actor's snapshot, what was gathered for it and the
 * time: a pure step, whose refusal is thrown. Each kind of command is decided by the module
 * of its aggregate (docs/ARCHITECTURE.md has the table).
 */
export function decide<C extends CampaignCommand>(
  snapshot: CampaignSnapshot,
  command: C,
  inputs: CommandInputs,
  now: number,
): Decision<ReplyOf<C>> {
  return decideAny(snapshot, command, inputs, now) as Decision<ReplyOf<C>>;
}

function decideAny(
  snapshot: CampaignSnapshot,
  command: CampaignCommand,
  inputs: CommandInputs,
  now: number,
): Decision<unknown> {
  switch (command.type) {
    case "status":
      return decideStatus(snapshot, command, now);
    case "settings":
      return decideSettings(snapshot, command, now);
    case "message":
      return decideMessage(snapshot, command, now);
    case "stats":
      return decideStats(snapshot, inputs, now);
    case "preview":
      return answer(offeredTo(snapshot.context, command.agentId));
    case "claim":
      return decideClaim(snapshot, command, inputs, now);
    case "call.event":
      return decideCallEvent(snapshot, command, inputs);
    case "call.disposition":
      return decideDisposition(snapshot, command, inputs, now);
    case "call.control":
      return decideCallControl(snapshot, command, inputs, now);
    case "call.dial":
      return decideDial(snapshot, command, inputs, now);
    case "preview.skip":
      return decidePreviewSkip(snapshot, command, inputs, now);
    case "agent.state":
      return decideAgentState(snapshot, command, inputs, now);
    case "calls.expire":
      return decideExpiry(snapshot, command, now);
    case "node.reconcile":
      return decideReconcile(snapshot, command, now);
    case "leads.recount":
      // New leads join a live campaign's counts (and its stats) once they are committed.
      return decideRecount(snapshot, inputs, now);
  }
}

/** Commands that need the campaign's dialing state loaded before they are decided. */
export const needsDialing = (command: CampaignCommand) =>
  // A start looks at the leads: a campaign started with none left to dial completes.
  (command.type !== "status" || command.action === "start") &&
  command.type !== "settings" &&
  command.type !== "message" &&
  command.type !== "leads.recount";

/**
 * Commands that may be decided and committed with others of their campaign: their events do
 * not depend on what their commit reports, and they write only calls, leads and agents.
 */
export const batchable = (command: CampaignCommand) =>
  command.type === "call.event" ||
  command.type === "call.disposition" ||
  command.type === "calls.expire" ||
  command.type === "node.reconcile" ||
  command.type === "agent.state";
