import { type Actor, createActor } from "xstate";
import { type CallCommand, callMachine } from "./call.machine.ts";
import { CallAudio } from "./call-audio.ts";
import { MessageCache } from "./messages.ts";
import type { AgentLeg, LeadLeg, Placer } from "./placer.ts";
import {
  type CallReport,
  type DialJob,
  type NodeCommand,
  pause,
  type ServiceClient,
} from "./service-client.ts";

/** The command ids a node remembers having carried out: far more than a poll hands out. */
const REMEMBERED_COMMANDS = 10_000;

export interface NodeOptions {
  client: ServiceClient;
  placer: Placer;
  /** Caps each job's `timeout_seconds` when set. */
  maxRingSeconds: number | null;
  heartbeatMs: number;
  /** How long a claim waits for jobs. A stop's drain limit cuts it short. */
  claimWaitMs: number;
  /** How long a poll for the service's commands waits (25 s unless a test says otherwise). */
  commandWaitMs?: number;
  log: (line: string) => void;
  now?: () => number;
}

/** One call the node holds: its machine, its legs, its reports in order. */
class LiveCall {
  readonly actor: Actor<typeof callMachine>;
  private lead: LeadLeg | null = null;
  private agent: AgentLeg | null = null;
  /** Which bridge's leg is the agent's now: a leg left behind by a transfer is not heard. */
  private agentLeg = 0;
  private readonly bridgeAbort = new AbortController();
  private readonly audio: CallAudio;
  /** Reports go out one after another, so the service hears them in the order they happened. */
  private reports: Promise<unknown> = Promise.resolve();
  /** Settles once `ended` was delivered (or given up on). */
  readonly finished: Promise<void>;
  private finish!: () => void;

  constructor(
    readonly job: DialJob,
    private readonly node: EdgeNode,
    private readonly options: NodeOptions,
  ) {
    const now = options.now ?? Date.now;
    const ringSeconds = Math.min(job.timeout_seconds, options.maxRingSeconds ?? Infinity);
    this.finished = new Promise((resolve) => {
      this.finish = resolve;
    });
    this.actor = createActor(callMachine, {
      input: {
        callId: job.call_id,
        ringTimeoutMs: ringSeconds * 1000,
        startedAt: now(),
        detect: !!job.amd,
      },
    });
    this.audio = new CallAudio(
      {
        job,
        media: () => this.lead?.media ?? null,
        report: (report) => void this.report(report).catch(() => {}),
        verdict: (verdict) => this.actor.send({ type: "media.verdict", at: this.now(), verdict }),
        played: () => this.send("media.done"),
        now: () => this.now(),
        log: options.log,
      },
      node.messages,
    );
    this.actor.on("*", (command) => this.carryOut(command as CallCommand));
    this.actor.subscribe({
      error: (error) => {
        // Contained to this call: its end goes unreported and the service's lease fails it.
        options.log(`call ${job.call_id}: its machine failed: ${String(error)}`);
        this.lead?.hangUp();
        node.forget(this);
        this.finish();
      },
    });
  }

  /** When something happened, for the machine and the reports: the node's clock. */
  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  private send(type: Parameters<LiveCall["actor"]["send"]>[0]["type"]) {
    const at = this.now();
    this.actor.send({ type, at } as Parameters<LiveCall["actor"]["send"]>[0]);
  }

  async start(): Promise<void> {
    this.actor.start();
    try {
      this.lead = await this.options.placer.callLead(
        { phone: this.job.phone, callerId: this.job.caller_id },
        {
          trying: () => this.send("sip.trying"),
          progress: () => this.send("sip.progress"),
          answered: () => this.send("sip.answered"),
          failed: (status, reason) =>
            this.actor.send({
              type: "sip.failed",
              at: this.now(),
              status,
              reason,
            }),
          bye: () => this.send("lead.bye"),
          machine: () => this.send("lead.machine"),
        },
      );
    } catch (error) {
      this.options.log(`call ${this.job.call_id}: not placed: ${String(error)}`);
      // A local fault (no RTP port): the call fails at once and the lead is retried.
      this.actor.send({ type: "sip.failed", at: this.now(), status: 500, reason: undefined });
    }
  }

  hangUp(): void {
    this.send("node.hangup");
  }

  /** Sends the connected lead on to an agent's phone or a number (the service's command). */
  transfer(to: { agent_uri: string | null; phone: string | null }): void {
    const targetUri = to.agent_uri ?? (to.phone ? this.options.placer.numberUri(to.phone) : null);
    if (!targetUri) return;
    this.actor.send({ type: "service.transfer", at: this.now(), targetUri });
  }

  /** A hang-up of the agent's current leg ends the conversation; an earlier leg's does not. */
  private agentBye(leg: number): void {
    if (leg === this.agentLeg) this.send("agent.bye");
  }

  private report(report: CallReport) {
    const delivered = this.reports.then(() => this.options.client.report(this.job.call_id, report));
    this.reports = delivered.catch((error) => {
      this.options.log(`call ${this.job.call_id}: ${report.type} not reported: ${String(error)}`);
    });
    return delivered;
  }

  private carryOut(command: CallCommand): void {
    switch (command.type) {
      case "report": {
        const delivered = this.report(command.report);
        if (command.report.type === "answered" || command.report.type === "amd") {
          delivered.then(
            (call) => {
              const at = this.now();
              if (call.action === "bridge")
                this.actor.send({ type: "service.bridge", at, agentUri: call.agent_uri ?? null });
              else if (call.action === "detect") this.actor.send({ type: "service.detect", at });
              else this.actor.send({ type: "service.hangup", at, message: call.message ?? null });
            },
            // No verdict from the service: nobody waits for this lead, so let it go.
            () => this.send("service.hangup"),
          );
        }
        if (command.report.type === "ended") {
          this.audio.stop();
          if (this.lead) this.options.placer.release(this.lead);
          this.reports.then(() => {
            this.node.forget(this);
            this.finish();
          });
        }
        return;
      }
      case "sip.cancel":
        this.lead?.cancel();
        return;
      case "sip.abandon":
        this.lead?.abandon();
        return;
      case "sip.hangupLead":
        this.lead?.hangUp();
        return;
      case "media.detect":
        this.audio.detect();
        return;
      case "media.play":
        this.audio.play(command.message);
        return;
      case "media.stop":
        this.audio.stop();
        return;
      case "sip.hangupAgent":
        this.bridgeAbort.abort();
        this.agent?.hangUp();
        return;
      case "sip.callAgent": {
        const lead = this.lead;
        if (!lead) return;
        const leg = ++this.agentLeg;
        this.options.placer
          .bridge(lead, command.agentUri, () => this.agentBye(leg), this.bridgeAbort.signal)
          .then(
            (agent) => {
              this.agent = agent;
              this.send("agent.connected");
            },
            (error) => {
              this.options.log(`call ${this.job.call_id}: no bridge: ${String(error)}`);
              this.send("agent.failed");
            },
          );
        return;
      }
      case "sip.transfer": {
        const lead = this.lead;
        if (!lead) return;
        const leg = this.agentLeg + 1;
        this.options.placer
          .bridge(lead, command.targetUri, () => this.agentBye(leg), this.bridgeAbort.signal)
          .then(
            (agent) => {
              // The lead hears the new party now: the agent's leg is let go without a word.
              const left = this.agent;
              this.agentLeg = leg;
              this.agent = agent;
              left?.hangUp();
              this.send("transfer.connected");
            },
            (error: Error) => {
              this.options.log(`call ${this.job.call_id}: no transfer: ${error.message}`);
              this.actor.send({ type: "transfer.failed", at: this.now(), reason: error.message });
            },
          );
        return;
      }
    }
  }
}

/**
 * The node: claims jobs within its capacity, runs each as a call, sends heartbeats with the
 * calls it holds, and on stop lets its calls finish (up to a limit) before it goes.
 */
export class EdgeNode {
  private readonly live = new Map<string, LiveCall>();
  private capacity = 0;
  private stopping = false;
  /** Fires at stop: a claim that keeps failing is not retried past it. */
  private readonly stopped = new AbortController();
  /** Fires at the drain limit: a claim still waiting then is given up. */
  private readonly drainOver = new AbortController();
  private heartbeatTimer: ReturnType<typeof setInterval> | undefined;
  private claiming: Promise<void> | undefined;
  private commanded: Promise<void> | undefined;
  /** Fires once the last call has ended at a stop: the command poll is given up. */
  private readonly commandsOver = new AbortController();
  /** Commands carried out, oldest first, so that one handed out again is not acted on twice. */
  private readonly acted = new Set<string>();
  private wake: (() => void) | undefined;
  /** The campaigns' recorded messages, fetched once per version. */
  readonly messages: MessageCache;

  constructor(private readonly options: NodeOptions) {
    this.messages = new MessageCache(
      (campaignId, kind) => options.client.fetchMessage(campaignId, kind),
      options.log,
    );
  }

  get liveCallIds(): string[] {
    return [...this.live.keys()];
  }

  get maxConcurrentCalls(): number {
    return this.capacity;
  }

  /**
   * The first heartbeat checks the key and tells the node its `max_concurrent_calls`; a
   * service that cannot be reached is waited for (see `ServiceClient.firstHeartbeat`) until
   * `signal` fires. Rejects when the service refuses the node, or once `signal` fired.
   */
  async start(signal: AbortSignal = new AbortController().signal): Promise<void> {
    const { client, log } = this.options;
    const { maxConcurrentCalls } = await client.firstHeartbeat({
      signal,
      onRetry: (error, waitMs) =>
        log(
          `the service at ${client.baseUrl} is unreachable: ${String(error)}; ` +
            `trying again in ${(waitMs / 1000).toFixed(1)} s`,
        ),
    });
    this.capacity = maxConcurrentCalls;
    this.heartbeatTimer = setInterval(() => void this.beat(), this.options.heartbeatMs);
    this.claiming = this.claimLoop();
    this.commanded = this.commandLoop();
  }

  /**
   * Polls the service's commands until the node has stopped, acting on each id once and
   * acknowledging it in the next poll. Commands come during a stop's drain too: a hang-up
   * still matters then.
   */
  private async commandLoop(): Promise<void> {
    const { client, log } = this.options;
    let ack: string[] = [];
    while (!this.commandsOver.signal.aborted) {
      let commands: NodeCommand[];
      try {
        commands = await client.commands(
          ack,
          this.options.commandWaitMs ?? 25_000,
          this.commandsOver.signal,
        );
        ack = [];
      } catch (error) {
        if (this.commandsOver.signal.aborted) break;
        log(`command poll failed: ${String(error)}`);
        await pause(1_000, this.commandsOver.signal);
        continue;
      }
      for (const command of commands) {
        if (!this.acted.has(command.id)) {
          this.carryOutCommand(command);
          this.acted.add(command.id);
          if (this.acted.size > REMEMBERED_COMMANDS)
            this.acted.delete(this.acted.values().next().value as string);
        }
        ack.push(command.id);
      }
    }
    if (ack.length > 0) await client.commands(ack, 0).catch(() => {});
  }

  /** One command of the service; one for a call the node no longer holds is moot. */
  private carryOutCommand(command: NodeCommand): void {
    const call = this.live.get(command.call_id);
    switch (command.type) {
      case "hangup":
        call?.hangUp();
        return;
      case "transfer":
        call?.transfer(command.to);
        return;
      case "dial":
        if (this.stopping) {
          this.options.log(`call ${command.call_id}: not dialled, the node is stopping`);
          return;
        }
        this.place(command.job);
        return;
    }
  }

  /** Places a job, claimed or commanded, unless the node already holds its call. */
  private place(job: DialJob): void {
    if (this.live.has(job.call_id)) return;
    if (job.messages) this.messages.prefetch(job.campaign_id, job.messages);
    const call = new LiveCall(job, this, this.options);
    this.live.set(job.call_id, call);
    void call.start();
  }

  private async beat(): Promise<void> {
    try {
      const { maxConcurrentCalls } = await this.options.client.heartbeat(this.liveCallIds);
      this.capacity = maxConcurrentCalls;
    } catch (error) {
      this.options.log(`heartbeat failed: ${String(error)}`);
    }
  }

  forget(call: LiveCall): void {
    if (this.live.get(call.job.call_id) === call) this.live.delete(call.job.call_id);
    this.wake?.();
  }

  private async claimLoop(): Promise<void> {
    while (!this.stopping) {
      const free = Math.min(100, this.capacity - this.live.size);
      if (free <= 0) {
        // Full: wait for a call to end (or a heartbeat to raise the capacity).
        await new Promise<void>((resolve) => {
          this.wake = resolve;
          setTimeout(resolve, 1_000);
        });
        continue;
      }
      let jobs: DialJob[] = [];
      try {
        jobs = await this.options.client.claim(free, this.options.claimWaitMs, {
          stop: this.stopped.signal,
          abandon: this.drainOver.signal,
        });
      } catch (error) {
        if (this.drainOver.signal.aborted) {
          this.options.log("the claim in flight was given up at the drain limit");
          break;
        }
        this.options.log(`claim failed: ${String(error)}`);
        if (!this.stopping) await Bun.sleep(1_000);
        continue;
      }
      // Jobs handed out by a claim already in flight at a stop are still this node's: placed.
      for (const job of jobs) this.place(job);
    }
  }

  /**
   * Stops claiming, waits up to `drainMs` from now for live calls to end, hangs up the rest,
   * waits for every `ended` to be reported, and sends a last heartbeat. A claim in flight
   * places the jobs it brings back within the same limit, and is given up at the limit.
   */
  async stop(drainMs: number): Promise<void> {
    this.stopping = true;
    this.stopped.abort();
    this.wake?.();
    const all = () => Promise.all([...this.live.values()].map((call) => call.finished));
    let limit: ReturnType<typeof setTimeout> | undefined;
    const drained = await Promise.race([
      // The claim first: the calls it places are only known once it is back.
      Promise.resolve(this.claiming)
        .then(all)
        .then(() => true),
      new Promise<false>((resolve) => {
        limit = setTimeout(() => resolve(false), drainMs);
      }),
    ]);
    clearTimeout(limit);
    if (!drained) {
      this.drainOver.abort();
      await this.claiming;
      this.options.log(`hanging up ${this.live.size} call(s) still live after the drain limit`);
      for (const call of this.live.values()) call.hangUp();
      await all();
    }
    this.commandsOver.abort();
    await this.commanded;
    clearInterval(this.heartbeatTimer);
    await this.beat();
  }
}
