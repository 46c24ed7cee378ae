import type { Random } from "./random.ts";

/** A duration distribution: its mean and coefficient of variation, in milliseconds. */
export interface Spread {
  mean: number;
  cv: number;
}

/**
 * What happens to a dialled number. Every share is of placed calls; what is left after
 * people, machines, busy lines and failures rings out unanswered.
 */
export interface OutcomeModel {
  /** Share of calls a person answers, at an hourly factor of 1. */
  answerRate: number;
  /** Factor on `answerRate` for each local hour 0–23 of the lead (people are home at night). */
  hourly: readonly number[];
  machineRate: number;
  busyRate: number;
  failedRate: number;
  /** From placing the call to a person's or a machine's answer (log-normal, 2–28 s; 0: at once). */
  ring: Spread;
  /** How long an unanswered call rings before the node gives up. */
  noAnswerMs: number;
  /** Talk time of a bridged call (log-normal: most calls short, a few very long). */
  talk: Spread;
  /** Agent wrap-up after hang-up (gamma). */
  wrap: Spread;
  /** The node's answer-to-bridge time, its `node_bridge_ms` (gamma). */
  bridge: Spread;
  /** Answering-machine detection: the node reports `machine` this long after the pick-up. */
  machineDetectMs: number;
  /** Share of conversations the agent closes as `completed`; the rest are `no_contact`. */
  completedShare: number;
}

export const FLAT_DAY: readonly number[] = Array.from({ length: 24 }, () => 1);

export const DEFAULT_MODEL: OutcomeModel = {
  answerRate: 0.3,
  hourly: FLAT_DAY,
  machineRate: 0.1,
  busyRate: 0.05,
  failedRate: 0.02,
  ring: { mean: 12_000, cv: 0.5 },
  noAnswerMs: 30_000,
  talk: { mean: 120_000, cv: 0.8 },
  wrap: { mean: 15_000, cv: 0.4 },
  bridge: { mean: 300, cv: 0.5 },
  machineDetectMs: 2_500,
  completedShare: 0.85,
};

/** One call's fate, drawn when the node dials it. */
export type CallScript =
  | {
      kind: "person";
      ringMs: number;
      talkMs: number;
      wrapMs: number;
      bridgeMs: number;
      disposition: "completed" | "no_contact";
    }
  | { kind: "machine"; ringMs: number }
  | { kind: "no_answer"; ringMs: number }
  | { kind: "busy"; ringMs: number }
  | { kind: "failed"; ringMs: number };

const clamp = (value: number, low: number, high: number) => Math.min(high, Math.max(low, value));

/**
 * Draws one call. Every call takes the same number of draws whatever its fate, so one
 * outcome never shifts the random stream of the calls after it.
 */
export function drawCall(model: OutcomeModel, random: Random, localHour: number): CallScript {
  const fate = random.next();
  // A mean under the 2 s floor lowers the floor with it: a mean of 0 is a node that answers at once.
  const ringFloor = Math.min(2_000, model.ring.mean);
  const ringMs = Math.round(
    clamp(random.logNormal(model.ring.mean, model.ring.cv), ringFloor, 28_000),
  );
  const talkMs = Math.round(Math.max(5_000, random.logNormal(model.talk.mean, model.talk.cv)));
  const wrapMs = Math.round(Math.max(1_000, random.gamma(model.wrap.mean, model.wrap.cv)));
  const bridgeMs = Math.round(Math.max(20, random.gamma(model.bridge.mean, model.bridge.cv)));
  const completed = random.chance(model.completedShare);
  const person = clamp(model.answerRate * (model.hourly[localHour] ?? 1), 0, 1);
  const machine = person + model.machineRate;
  const busy = machine + model.busyRate;
  const failed = busy + model.failedRate;
  if (fate < person)
    return {
      kind: "person",
      ringMs,
      talkMs,
      wrapMs,
      bridgeMs,
      disposition: completed ? "completed" : "no_contact",
    };
  if (fate < machine) return { kind: "machine", ringMs };
  if (fate < busy) return { kind: "busy", ringMs: Math.round(ringMs / 4) };
  if (fate < failed) return { kind: "failed", ringMs: 1_000 };
  return { kind: "no_answer", ringMs: model.noAnswerMs };
}
