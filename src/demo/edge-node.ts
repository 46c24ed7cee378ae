import {
  type CallScript,
  DEFAULT_MODEL,
  drawCall,
  type OutcomeModel,
} from "../simulator/outcome-model.ts";
import type { Random } from "../simulator/random.ts";
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

/**
 * A simulated edge node on the real clock: it claims jobs, plays each call's script from the
 * outcome model through the node protocol, and sends heartbeats with its live calls.
 */
export class SimulatedEdgeNode {
  private readonly live = new Set<string>();
  private stopped = false;

  constructor(
    private readonly node: DemoClient,
    private readonly capacity: number,
    private readonly random: Random,
    private readonly onError: (error: unknown) => void,
  ) {}

  start() {
    void this.heartbeats();
    void this.claims();
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
        for (const job of jobs) void this.place(job.call_id, drawCall(DEMO_MODEL, this.random, 12));
        if (!jobs.length) await sleep(1_000);
      } catch (error) {
        this.onError(error);
        await sleep(2_000);
      }
    }
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
      await sleep(script.ringMs);
      switch (script.kind) {
        case "person": {
          const { call } = await this.event(callId, "answered");
          if (call.action === "bridge") await sleep(script.talkMs);
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
    }
  }
}
