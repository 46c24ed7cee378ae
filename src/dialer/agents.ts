import type { NextAgent } from "../../actors/commands.ts";
import type { Clock } from "../../actors/ports.ts";
import {
  type DatabaseAvailability,
  DatabaseUnavailableError,
  databaseFailureOf,
} from "../../db/availability.ts";
import type { RawClient } from "../../db/client.ts";
import {
  claimExpiredGraces,
  type PresenceRow,
  type PresenceWrite,
  type StateSpan,
  setGraceDeadlines,
  upsertPresence,
} from "../../db/queries/presence.ts";
import type { ChangePublisher } from "../cluster/change-feed.ts";
import type { Logger } from "../logger.ts";

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
  /**
   * Why a paused agent is not ready: one of the workspace's reasons, `after_call` for the
   * campaign's breath after a call, or null. With `pauseAfterCall`, the reason asked for.
   */
  reason?: string | null | undefined;
  /** The agent asked to pause during a call or its wrap-up: paused once it is dispositioned. */
  pauseAfterCall?: boolean | undefined;
  /** When an agent's breath after a call ends, and the agent is ready again by itself. */
  readyAt?: number | null | undefined;
}

/** The reason of a paused agent whose breath after a call runs. */
export const AFTER_CALL_REASON = "after_call";

/** `remote`: the change was committed by another process and adopted here. */
export interface AgentChange {
  remote: boolean;
}

export type AgentListener = (agent: AgentPresence, change: AgentChange) => void;

/**
 * How often a process pushes forward the deadlines of the agents its sockets hold. A deadline
 * is the grace plus this interval ahead, so it never runs out between two renewals.
 */
export const GRACE_RENEW_MS = 5_000;

/** Agents written in one statement at most; more wait for the next. */
const MAX_BATCH = 500;

/** Where the board keeps its agents, and how long an agent left by its sockets keeps its state. */
export interface PresencePersistence {
  raw: RawClient;
  clock: Clock;
  logger: Logger;
  availability?: DatabaseAvailability | undefined;
  graceMs: number;
}

/** A write that failed, and why. */
interface Failure {
  cause: unknown;
}

interface Waiter {
  resolve(): void;
  reject(error: unknown): void;
}

/**
 * An agent's state not yet committed, with the callers waiting for its commit and the states
 * it left since the last one written (several changes between two writes each count).
 */
interface PendingState {
  agent: AgentPresence;
  waiters: Waiter[];
  left: StateSpan[];
}

/** States an agent left kept for one write at most: a long outage keeps the latest. */
const MAX_SPANS_PER_AGENT = 100;

/** The state `agent` held until `next` began, under the tenant the agent is in now. */
const spanOf = (agent: AgentPresence, next: AgentPresence): StateSpan => ({
  tenantId: next.tenantId,
  userId: next.userId,
  state: agent.state,
  reason: agent.reason ?? null,
  campaignId: agent.campaignId,
  startedAt: agent.since,
  endedAt: next.since,
});

/**
 * Where every agent is. Memory answers every question (pacing, answers, wallboards); each
 * change is also written behind to `agent_presence`, so that a restart or another process
 * sharing the database carries on from it. `set` stays synchronous: the writes of one agent
 * go in order, those that queue up while a batch is being written coalesce to the latest, and
 * a caller that must not answer before the commit awaits `persisted`. A signed-out agent's row
 * stays, in state `offline`, so that its version keeps rising across sessions.
 *
 * Changes are announced to listeners (the realtime hub, the dialer), including those adopted
 * from other processes, which are marked `remote`.
 */
export class AgentBoard {
  private readonly agents = new Map<string, AgentPresence>();
  /** The same agents by campaign: pacing and every answer look at one campaign's agents. */
  private readonly byCampaign = new Map<string, Map<string, AgentPresence>>();
  private readonly listeners = new Set<AgentListener>();
  /** The version of each agent's row last committed or adopted here. */
  private readonly versions = new Map<string, number>();
  /** Agents this process's sockets hold, whose deadlines it renews. */
  private readonly held = new Set<string>();
  /** Deadlines of agents whose sockets here all closed, until they pass or a socket returns. */
  private readonly released = new Map<string, number>();
  private pendingStates = new Map<string, PendingState>();
  private writingStates = new Map<string, PendingState>();
  private pendingGraces = new Map<string, number | null>();
  private writingGraces = new Map<string, number | null>();
  /** Woken after each write of deadlines, and when writing stops. */
  private graceWaiters: (() => void)[] = [];
  /** Rows of other processes that came while this process's own write of the agent was queued. */
  private readonly deferred = new Map<string, PresenceRow>();
  private writing = false;
  private readonly settledWaiters: (() => void)[] = [];
  private publish: ChangePublisher | undefined;

  constructor(private readonly persistence?: PresencePersistence) {}

  get(userId: string): AgentPresence | undefined {
    return this.agents.get(userId);
  }

  /** The version of the agent's row as this process knows it; 0 if none. */
  version(userId: string): number {
    return this.versions.get(userId) ?? 0;
  }

  /** Agents of a campaign, optionally in one state. */
  inCampaign(campaignId: string, state?: AgentState): AgentPresence[] {
    const found: AgentPresence[] = [];
    for (const agent of this.byCampaign.get(campaignId)?.values() ?? []) {
      if (state === undefined || agent.state === state) found.push(agent);
    }
    return found;
  }

  /** The agents on the board, of every tenant. */
  userIds(): string[] {
    return [...this.agents.keys()];
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

  /** Changes an agent in memory at once and writes the change behind; never throws for the database. */
  set(agent: NextAgent, now: number): AgentPresence {
    const { keepSince, ...rest } = agent;
    const next = { ...rest, since: keepSince ? (agent.since ?? now) : now };
    const before = this.agents.get(next.userId);
    this.place(next);
    if (this.persistence) {
      const pending = this.pendingStates.get(next.userId);
      const left = pending?.left ?? [];
      if (before && before.since < next.since) left.push(spanOf(before, next));
      if (left.length > MAX_SPANS_PER_AGENT) left.splice(0, left.length - MAX_SPANS_PER_AGENT);
      this.pendingStates.set(next.userId, { agent: next, waiters: pending?.waiters ?? [], left });
      this.deferred.delete(next.userId);
      this.flush();
    }
    this.announce(next, { remote: false });
    return next;
  }

  /**
   * Resolves once the agent's latest change has committed; rejects with the database's error
   * when its write failed (the board retries it with the next write or renewal).
   */
  persisted(userId: string): Promise<void> {
    const pending = this.pendingStates.get(userId) ?? this.writingStates.get(userId);
    if (!pending) return Promise.resolve();
    return new Promise((resolve, reject) => pending.waiters.push({ resolve, reject }));
  }

  /** Resolves once every write queued so far has been attempted. */
  settled(): Promise<void> {
    if (!this.writing) return Promise.resolve();
    return new Promise((resolve) => this.settledWaiters.push(resolve));
  }

  /**
   * Takes rows read at start into memory, without writing them back or announcing them: the
   * agents carry on in the state, campaign, call and `since` they had.
   */
  restore(rows: readonly PresenceRow[]): void {
    for (const row of rows) {
      this.versions.set(row.userId, Math.max(this.version(row.userId), row.version));
      this.place(presenceOf(row));
    }
  }

  /**
   * Takes another process's committed row if it is newer than what this board holds, and
   * announces it as remote. A row that comes while this process's own change of the agent is
   * queued waits for that write: whichever version is higher then wins.
   */
  adopt(row: PresenceRow): boolean {
    if (row.version <= this.version(row.userId)) return false;
    if (this.pendingStates.has(row.userId) || this.writingStates.has(row.userId)) {
      const waiting = this.deferred.get(row.userId);
      if (!waiting || waiting.version < row.version) this.deferred.set(row.userId, row);
      return false;
    }
    this.versions.set(row.userId, row.version);
    const next = presenceOf(row);
    this.place(next);
    this.announce(next, { remote: true });
    return true;
  }

  /** A socket of this process holds the agent: its deadline is renewed until the socket closes. */
  hold(userId: string): void {
    this.held.add(userId);
    this.released.delete(userId);
    if (!this.persistence) return;
    this.pendingGraces.set(userId, this.renewedDeadline());
    this.flush();
  }

  /**
   * The agent's last socket here closed: it keeps its state until the returned deadline, unless
   * a socket (here or in another process) holds it again.
   */
  release(userId: string, now: number): number {
    const deadline = now + (this.persistence?.graceMs ?? 0);
    this.held.delete(userId);
    this.released.set(userId, deadline);
    if (this.persistence) {
      this.pendingGraces.set(userId, deadline);
      this.flush();
    }
    return deadline;
  }

  /** Pushes the deadlines of every agent held here forward, in one statement. */
  renewGraces(): void {
    if (!this.persistence) return;
    const now = this.persistence.clock.now();
    for (const [userId, deadline] of this.released) {
      if (deadline < now) this.released.delete(userId);
    }
    const deadline = this.renewedDeadline();
    for (const userId of this.held) this.pendingGraces.set(userId, deadline);
    this.flush();
  }

  /**
   * The agents whose deadline passed by `until` (one agent's, or all), each taken by exactly
   * one process; the caller signs them out.
   */
  async claimExpired(params: {
    until: number;
    userId?: string | undefined;
  }): Promise<{ userId: string; tenantId: string }[]> {
    if (!this.persistence) return [];
    // One agent's claim follows the write of the deadline its socket's close set.
    if (params.userId) await this.graceWritten(params.userId);
    const claimed = await claimExpiredGraces(this.persistence.raw, params);
    const expired: { userId: string; tenantId: string }[] = [];
    for (const agent of claimed) {
      this.released.delete(agent.userId);
      // A socket here came back while the claim was under way: the agent stays, renewed.
      if (this.held.has(agent.userId)) this.pendingGraces.set(agent.userId, this.renewedDeadline());
      else expired.push(agent);
    }
    if (expired.length < claimed.length) this.flush();
    return expired;
  }

  private async graceWritten(userId: string): Promise<void> {
    while (this.writingGraces.has(userId) || (this.writing && this.pendingGraces.has(userId))) {
      await new Promise<void>((resolve) => this.graceWaiters.push(resolve));
    }
  }

  /** Announces every committed change from here on to the other processes. */
  publishChangesTo(publish: ChangePublisher): () => void {
    this.publish = publish;
    return () => {
      if (this.publish === publish) this.publish = undefined;
    };
  }

  subscribe(listener: AgentListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private place(next: AgentPresence): void {
    const before = this.agents.get(next.userId)?.campaignId;
    // An agent keeps its place in its campaign's order while it stays in the campaign.
    if (before && (before !== next.campaignId || next.state === "offline"))
      this.campaignAgents(before).delete(next.userId);
    if (next.state === "offline") this.agents.delete(next.userId);
    else {
      this.agents.set(next.userId, next);
      if (next.campaignId) this.campaignAgents(next.campaignId).set(next.userId, next);
    }
  }

  private announce(agent: AgentPresence, change: AgentChange): void {
    for (const listener of this.listeners) listener(agent, change);
  }

  private campaignAgents(campaignId: string): Map<string, AgentPresence> {
    let agents = this.byCampaign.get(campaignId);
    if (!agents) {
      agents = new Map();
      this.byCampaign.set(campaignId, agents);
    }
    return agents;
  }

  private renewedDeadline(): number {
    const persistence = this.persistence;
    return persistence ? persistence.clock.now() + persistence.graceMs + GRACE_RENEW_MS : 0;
  }

  /** The deadline a session that starts now gets: renewed if held here, else one already running. */
  private sessionDeadline(userId: string): number | null {
    if (this.held.has(userId)) return this.renewedDeadline();
    return this.released.get(userId) ?? null;
  }

  /** Starts writing what is queued, unless a write is under way (it takes the queue when done). */
  private flush(): void {
    if (!this.persistence || this.writing) return;
    this.writing = true;
    void this.drain(this.persistence).finally(() => {
      this.writing = false;
      for (const resolve of this.settledWaiters.splice(0)) resolve();
      for (const resolve of this.graceWaiters.splice(0)) resolve();
    });
  }

  /**
   * Writes the queue one statement at a time (states, then deadlines) until it is empty. After
   * a failure it stops: what the database failed to write stays queued, unless newer, for the
   * next write or renewal, and the callers waiting for a commit hear of the failure rather
   * than wait for that.
   */
  private async drain(persistence: PresencePersistence): Promise<void> {
    while (this.pendingStates.size > 0 || this.pendingGraces.size > 0) {
      const error =
        (this.pendingStates.size > 0 ? await this.writeStates(persistence) : undefined) ??
        (this.pendingGraces.size > 0 ? await this.writeGraces(persistence) : undefined);
      if (error === undefined) continue;
      for (const pending of this.pendingStates.values()) {
        for (const waiter of pending.waiters.splice(0)) waiter.reject(stillQueued(error.cause));
      }
      return;
    }
  }

  /** Writes a batch of the queued states; returns the failure, if any. */
  private async writeStates(persistence: PresencePersistence): Promise<Failure | undefined> {
    const batch = new Map<string, PendingState>();
    for (const [userId, pending] of this.pendingStates) {
      if (batch.size === MAX_BATCH) break;
      batch.set(userId, pending);
    }
    for (const userId of batch.keys()) this.pendingStates.delete(userId);
    this.writingStates = batch;
    const writes: PresenceWrite[] = [...batch.values()].map(({ agent }) => ({
      userId: agent.userId,
      tenantId: agent.tenantId,
      state: agent.state,
      campaignId: agent.campaignId,
      callId: agent.callId,
      since: agent.since,
      reason: agent.reason ?? null,
      pauseAfterCall: agent.pauseAfterCall ?? false,
      readyAt: agent.readyAt ?? null,
      graceUntil: this.sessionDeadline(agent.userId),
    }));
    const spans = [...batch.values()].flatMap((pending) => pending.left);
    let written: { userId: string; version: number }[];
    try {
      written = await upsertPresence(persistence.raw, writes, spans);
    } catch (error) {
      this.writingStates = new Map();
      const retry = this.failed(
        persistence,
        error,
        "agents' presence could not be written",
        batch.size,
      );
      for (const [userId, pending] of batch) {
        for (const waiter of pending.waiters) waiter.reject(stillQueued(error));
        if (!retry) continue;
        const newer = this.pendingStates.get(userId);
        if (newer) newer.left.unshift(...pending.left);
        else
          this.pendingStates.set(userId, { agent: pending.agent, waiters: [], left: pending.left });
      }
      return { cause: error };
    }
    this.writingStates = new Map();
    for (const { userId, version } of written) {
      this.versions.set(userId, Math.max(this.version(userId), version));
      const agent = batch.get(userId)?.agent;
      if (agent) this.publish?.({ kind: "agent", tenantId: agent.tenantId, userId, version });
    }
    for (const [userId, pending] of batch) {
      for (const waiter of pending.waiters) waiter.resolve();
      const row = this.deferred.get(userId);
      if (row && !this.pendingStates.has(userId)) {
        this.deferred.delete(userId);
        this.adopt(row);
      }
    }
    return undefined;
  }

  /** Writes every queued deadline in one statement; returns the failure, if any. */
  private async writeGraces(persistence: PresencePersistence): Promise<Failure | undefined> {
    const batch = this.pendingGraces;
    this.pendingGraces = new Map();
    this.writingGraces = batch;
    try {
      await setGraceDeadlines(
        persistence.raw,
        [...batch].map(([userId, graceUntil]) => ({ userId, graceUntil })),
      );
      return undefined;
    } catch (error) {
      if (this.failed(persistence, error, "agents' deadlines could not be written", batch.size)) {
        for (const [userId, graceUntil] of batch) {
          if (!this.pendingGraces.has(userId)) this.pendingGraces.set(userId, graceUntil);
        }
      }
      return { cause: error };
    } finally {
      this.writingGraces = new Map();
      for (const resolve of this.graceWaiters.splice(0)) resolve();
    }
  }

  /**
   * Logs a failed write; true if it is worth retrying. The database's failures are (the write
   * waits for it to answer again); any other error would fail the same way every time, and
   * would take every agent batched with it along, so that write is dropped.
   */
  private failed(
    persistence: PresencePersistence,
    error: unknown,
    message: string,
    agents: number,
  ): boolean {
    persistence.availability?.report(error);
    const failure = databaseFailureOf(error);
    if (failure) persistence.logger.warn(message, { agents, failure, error });
    else persistence.logger.error(message, { agents, error });
    return failure !== undefined;
  }
}

/**
 * What a caller waiting for a commit hears when the database failed it: the change stands in
 * memory and stays queued until the database answers, so its outcome is not "nothing
 * happened" but unknown to whoever reads the database meanwhile.
 */
const stillQueued = (error: unknown) =>
  databaseFailureOf(error)
    ? new DatabaseUnavailableError(
        "outcome_unknown",
        "the agent's change was made here and is written when the database answers again",
        { cause: error },
      )
    : error;

const presenceOf = (row: PresenceRow): AgentPresence => ({
  userId: row.userId,
  tenantId: row.tenantId,
  email: row.email ?? undefined,
  state: row.state as AgentState,
  campaignId: row.campaignId,
  callId: row.callId,
  since: row.since,
  reason: row.reason,
  pauseAfterCall: row.pauseAfterCall,
  readyAt: row.readyAt,
});

/**
 * Whether an agent may take a call sent to it: ready, or looking at a lead offered in preview
 * (no call of its own yet; the offer is given up for the call).
 */
export const freeForTransfer = (agent: AgentPresence) =>
  agent.state === "ready" || (agent.state === "reserved" && agent.callId === null);
