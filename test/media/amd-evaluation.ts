/**
 * Runs answering-machine detection over corpus calls as a node would (20 ms frames, the
 * detector's budget, then the voicemail cue on a machine), and scores the verdicts: what
 * bench/amd.ts prints and the corpus test checks.
 */
import {
  type AmdResult,
  type AmdSettings,
  type AmdVerdict,
  AnsweringMachineDetector,
} from "../../edge/media/amd.ts";
import type { VoicemailCueEvent } from "../../edge/media/voicemail-cue.ts";
import type { CallLabel, CorpusCall } from "./amd-corpus.ts";

const FRAME = 160;

/** The verdict a call of each label should get: nobody on the line is `unknown`. */
export const EXPECTED: Record<CallLabel, AmdResult> = {
  human: "human",
  machine: "machine",
  fax: "fax",
  silence: "unknown",
  noise: "unknown",
};

export interface Detection {
  call: CorpusCall;
  verdict: AmdVerdict;
  /** After a machine verdict, the voicemail cue over the rest of the call; null if it gave none. */
  cue: VoicemailCueEvent | null;
  /** CPU time of the detection alone (not the cue), in ms. */
  cpuMs: number;
}

export function detect(
  call: CorpusCall,
  samples: Int16Array,
  settings: Partial<AmdSettings> = {},
): Detection {
  const started = process.cpuUsage();
  const detector = new AnsweringMachineDetector(settings);
  let verdict: AmdVerdict | null = null;
  let at = 0;
  for (; at + FRAME <= samples.length && !verdict; at += FRAME) {
    verdict = detector.push(samples.subarray(at, at + FRAME));
  }
  verdict ??= detector.finish();
  const used = process.cpuUsage(started);
  let cue: VoicemailCueEvent | null = null;
  if (verdict.result === "machine") {
    const voicemail = detector.voicemailCue();
    for (; at + FRAME <= samples.length && !cue; at += FRAME) {
      cue = voicemail.push(samples.subarray(at, at + FRAME));
    }
  }
  return { call, verdict, cue, cpuMs: (used.user + used.system) / 1000 };
}

export interface Score {
  calls: number;
  /** confusion[truth][verdict]: how many calls. */
  confusion: Record<CallLabel, Record<AmdResult, number>>;
  /** Share of machines with a `machine` verdict, 0..1. */
  machinesFound: number;
  /** Share of people with a `machine` verdict, 0..1. */
  peopleTakenForMachines: number;
  /** Share of calls whose verdict is the expected one, 0..1. */
  accuracy: number;
  /** Verdict time after the greeting's start, people and machines, ms; then each apart. */
  afterGreeting: { p50: number; p95: number };
  afterGreetingOf: Record<"human" | "machine", { p50: number; p95: number }>;
  cpuMsPerCall: number;
  /** Machines found: their cue, and the starts before the recorder was ready. */
  cues: { beep: number; silence: number; timeout: number; none: number; early: number };
  /** How long after the recorder was ready (beep or greeting end) the cue came, ms. */
  cueDelay: { p50: number; p95: number };
}

export function score(detections: Detection[]): Score {
  const labels: CallLabel[] = ["human", "machine", "fax", "silence", "noise"];
  const results: AmdResult[] = ["human", "machine", "fax", "unknown"];
  const confusion = Object.fromEntries(
    labels.map((label) => [label, Object.fromEntries(results.map((result) => [result, 0]))]),
  ) as Score["confusion"];
  const afterGreeting: number[] = [];
  const afterGreetingOf = { human: [] as number[], machine: [] as number[] };
  const cueDelays: number[] = [];
  const cues = { beep: 0, silence: 0, timeout: 0, none: 0, early: 0 };
  let cpuMs = 0;
  let right = 0;
  for (const { call, verdict, cue, cpuMs: used } of detections) {
    confusion[call.label][verdict.result]++;
    cpuMs += used;
    if (verdict.result === EXPECTED[call.label]) right++;
    if ((call.label === "human" || call.label === "machine") && call.greetingStartMs !== null) {
      afterGreeting.push(verdict.ms - call.greetingStartMs);
      afterGreetingOf[call.label].push(verdict.ms - call.greetingStartMs);
    }
    if (call.label === "machine" && verdict.result === "machine") {
      if (!cue) cues.none++;
      else {
        cues[cue.cue]++;
        const ready = call.beepEndMs ?? call.greetingEndMs ?? 0;
        if (cue.at < ready) cues.early++;
        cueDelays.push(cue.at - ready);
      }
    }
  }
  const count = (label: CallLabel) => sum(confusion[label]);
  return {
    calls: detections.length,
    confusion,
    machinesFound: ratio(confusion.machine.machine, count("machine")),
    peopleTakenForMachines: ratio(confusion.human.machine, count("human")),
    accuracy: ratio(right, detections.length),
    afterGreeting: quantiles(afterGreeting),
    afterGreetingOf: {
      human: quantiles(afterGreetingOf.human),
      machine: quantiles(afterGreetingOf.machine),
    },
    cpuMsPerCall: cpuMs / Math.max(1, detections.length),
    cues,
    cueDelay: quantiles(cueDelays),
  };
}

const sum = (counts: Record<string, number>) =>
  Object.values(counts).reduce((total, value) => total + value, 0);

const ratio = (part: number, whole: number) => (whole > 0 ? part / whole : Number.NaN);

const quantiles = (values: readonly number[]) => ({
  p50: percentile(values, 50),
  p95: percentile(values, 95),
});

/** The nearest-rank percentile `p` (0–100); NaN for no values. */
function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}
