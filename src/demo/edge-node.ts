import { type CallScript, DEFAULT_MODEL, type OutcomeModel } from "../simulator/outcome-model.ts";
import { type DemoClient, sleep } from "./http.ts";

/**
 * The demo's calls: the simulator's outcome model on a shorter day, so that a newcomer sees
 * calls answered, talked, abandoned and wrapped up within a minute or two.
 */
export const DEMO_MODEL: OutcomeModel = {
  ...DEFAULT_MODEL,
  answerRate: 0.45,
  ring: { mean: 6_000, cv: 0.5 },
  noAnswerMs: 15_000,
  talk: { mean: 30_000, cv: 0.6 },
  wrap: { mean: 6_000, cv: 0.4 },
};

interface Job {
  call_id: string;
}

/** What the service asks of the node (`POST /nodes/commands`). */
interface Command {
  id: string;
  type: "hangup" | "transfer" | "dial";
  call_id: string;
}

/** Command ids acted on, kept to act on each once when a poll's acknowledgement is lost. */
const DONE_KEPT = 1_000;

/**
 * A simulated edge node on the real clock: it claims jobs, plays each call's script from the
 * outcome model through the node protocol, and sends heartbeats with its live calls.
 */
export class SimulatedEdgeNode {
  private readonly live = new Set<string>();
  /** Each live call's hang-up: it cuts short whatever the call is waiting for. */
  private readonly hangUps = new Map<string, () => void>();
  private readonly done = new Set<string>();
  private stopped = false;

  constructor(
    private readonly node: DemoClient,
    private readonly capacity: number,
    /** Each call's script: the demo's draws it from the outcome model. */
    private readonly script: () => CallScript,
    private readonly onError: (error: unknown) => void,
  ) {}

  start() {
    void this.heartbeats();
    void this.claims();
    void this.commands();
  }

  stop() {
    this.stopped = true;
  }

  private async heartbeats() {
    while (!this.stopped) {
      await this.node
        .call("POST", "/nodes/heartbeat", {
          active_calls: this.live.size,
          active_call_ids: [...this.live],
        })
        .catch(this.onError);
      await sleep(5_000);
    }
  }

  private async claims() {
    while (!this.stopped) {
      const room = this.capacity - this.live.size;
      if (room <= 0) {
        await sleep(500);
        continue;
      }
      try {
        const { jobs } = await this.node.call<{ jobs: Job[] }>("POST", "/nodes/jobs/claim", {
          max: Math.min(room, 100),
          wait_ms: 2_000,
        });
        for (const job of jobs) void this.place(job.call_id, this.script());
        if (!jobs.length) await sleep(1_000);
      } catch (error) {
        this.onError(error);
        await sleep(2_000);
      }
    }
  }

  /** Agents' hang-ups and transfers, and the dials of previews and numbers dialled by hand. */
  private async commands() {
    let ack: string[] = [];
    while (!this.stopped) {
      try {
        const { commands } = await this.node.call<{ commands: Command[] }>(
          "POST",
          "/nodes/commands",
          { ack, wait_ms: 10_000 },
        );
        ack = commands.map((command) => command.id);
        for (const command of commands) this.carryOut(command);
      } catch (error) {
        this.onError(error);
        await sleep(2_000);
      }
    }
  }

  private carryOut(command: Command) {
    if (this.done.has(command.id)) return;
    if (this.done.size >= DONE_KEPT) this.done.clear();
    this.done.add(command.id);
    switch (command.type) {
      case "hangup":
        this.hangUps.get(command.call_id)?.();
        return;
      case "transfer":
        // The simulated line always reaches whoever the call is sent to.
        void this.event(command.call_id, "transferred").catch(this.onError);
        return;
      case "dial":
        if (!this.live.has(command.call_id)) void this.place(command.call_id, this.script());
        return;
    }
  }

  /** Waits `ms`, or less if the call is hung up meanwhile: answers whether it was. */
  private wait(callId: string, ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      this.hangUps.set(callId, () => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  private event(callId: string, type: string, extra: Record<string, unknown> = {}) {
    return this.node.call<{ call: { action?: string } }>("POST", `/nodes/calls/${callId}/events`, {
      type,
      at: new Date().toISOString(),
      ...extra,
    });
  }

  /** One call, as its script says: rings, then a person, a machine, a busy line or nothing. */
  private async place(callId: string, script: CallScript) {
    this.live.add(callId);
    try {
      await sleep(400);
      await this.event(callId, "ringing");
      if (await this.wait(callId, script.ringMs)) {
        await this.event(callId, "ended", { hangup_cause: "ORIGINATOR_CANCEL" });
        return;
      }
      switch (script.kind) {
        case "person": {
          const { call } = await this.event(callId, "answered");
          if (call.action === "bridge") await this.wait(callId, script.talkMs);
          await this.event(callId, "ended", {
            hangup_cause: "NORMAL_CLEARING",
            ...(call.action === "bridge" ? { node_bridge_ms: script.bridgeMs } : {}),
          });
          break;
        }
        case "machine":
          await this.event(callId, "machine");
          await sleep(DEMO_MODEL.machineDetectMs);
          await this.event(callId, "ended", { hangup_cause: "NORMAL_CLEARING" });
          break;
        case "busy":
          await this.event(callId, "ended", { hangup_cause: "USER_BUSY" });
          break;
        case "failed":
          await this.event(callId, "ended", { hangup_cause: "NO_ROUTE_DESTINATION" });
          break;
        case "no_answer":
          await this.event(callId, "ended", { hangup_cause: "NO_ANSWER" });
          break;
      }
    } catch (error) {
      this.onError(error);
    } finally {
      this.live.delete(callId);
      this.hangUps.delete(callId);
    }
  }
}
