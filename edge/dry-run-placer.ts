import { DEFAULT_MODEL, drawCall, type OutcomeModel } from "../src/simulator/outcome-model.ts";
import { Random } from "../src/simulator/random.ts";
import type { LeadMedia } from "./media/lead-media.ts";
import type { AgentLeg, LeadEvents, LeadLeg, Placer } from "./placer.ts";

/**
 * The dry run's line: nothing is heard (detection finds no verdict), and a message plays for
 * as long as it lasts.
 */
function silentLine(later: (ms: number, run: () => void) => void): LeadMedia {
  let stop: (() => void) | undefined;
  return {
    start: () => {},
    onFrame: () => {},
    onDigit: () => {},
    keyPressed: () => {},
    play: (samples) =>
      new Promise((resolve) => {
        stop = () => resolve(false);
        later(samples.length / 8, () => resolve(true));
      }),
    stopPlaying: () => stop?.(),
    close: () => stop?.(),
  };
}

interface DryLead extends LeadLeg {
  talkMs: number;
  bridgeMs: number;
  timers: Set<ReturnType<typeof setTimeout>>;
}

/**
 * The dry run: no SIP, each call's fate drawn from the simulator's call model, played out on
 * the same call machine and reported to the service as a real call would be.
 */
export class DryRunPlacer implements Placer {
  private readonly random: Random;

  constructor(
    private readonly model: OutcomeModel = DEFAULT_MODEL,
    seed = Date.now(),
  ) {
    this.random = new Random(seed);
  }

  async callLead(_job: { phone: string; callerId: string }, events: LeadEvents): Promise<LeadLeg> {
    const script = drawCall(this.model, this.random, new Date().getHours());
    const timers = new Set<ReturnType<typeof setTimeout>>();
    const later = (ms: number, run: () => void) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        run();
      }, ms);
      timers.add(timer);
    };
    const stop = () => {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
    };
    const lead: DryLead = {
      talkMs: script.kind === "person" ? script.talkMs : 0,
      bridgeMs: script.kind === "person" ? script.bridgeMs : 0,
      timers,
      media: silentLine(later),
      cancel: () => {
        stop();
        later(20, () => events.failed(487, undefined));
      },
      abandon: stop,
      hangUp: stop,
    };
    events.trying();
    switch (script.kind) {
      case "person":
        later(Math.min(1_000, script.ringMs), () => events.progress());
        later(script.ringMs, () => events.answered());
        break;
      case "machine":
        later(Math.min(1_000, script.ringMs), () => events.progress());
        later(script.ringMs + this.model.machineDetectMs, () => events.machine());
        break;
      case "busy":
        later(script.ringMs, () => events.failed(486, undefined));
        break;
      case "failed":
        later(script.ringMs, () => events.failed(503, undefined));
        break;
      case "no_answer":
        later(1_000, () => events.progress());
        break;
    }
    return lead;
  }

  bridge(lead: LeadLeg, _agentUri: string | null, onBye: () => void, signal: AbortSignal) {
    const dry = lead as DryLead;
    return new Promise<AgentLeg>((resolve, reject) => {
      const bridged = setTimeout(() => {
        // The lead talks for the drawn time, then hangs up: the agent's leg ends with it.
        const talk = setTimeout(onBye, dry.talkMs);
        dry.timers.add(talk);
        resolve({ hangUp: () => clearTimeout(talk) });
      }, dry.bridgeMs);
      dry.timers.add(bridged);
      signal.addEventListener("abort", () => {
        clearTimeout(bridged);
        reject(new Error("the lead hung up"));
      });
    });
  }

  numberUri(phone: string): string {
    return `sip:${phone}@dry-run.invalid`;
  }

  release(lead: LeadLeg): void {
    lead.abandon();
  }
}
