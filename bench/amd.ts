/**
 * Answering-machine detection over a synthetic corpus (test/media/amd-corpus.ts: espeak-ng
 * voices and sox on a G.711 line), split by index into a tuning half (even) and a held-out
 * half (odd). The detector's settings are tuned on the tuning half only; the held-out half
 * says how well they carry over.
 *
 *   bun bench/amd.ts [--seed 1] [--count 240] [--settings '{"greetingMs":1500}'] [--misses]
 *   bun bench/amd.ts --tune --count 480      the grid search the defaults came from
 *
 * For each half: the confusion matrix (truth × verdict), machines found, people taken for
 * machines, the verdict's time after the greeting starts (p50, p95), CPU per detection, and
 * the voicemail cue on the machines found. `--misses` lists every wrong verdict with what
 * the call holds. The goals, on the held-out half: machines found ≥ 90 %, people taken for
 * machines ≤ 3 %, median verdict < 2.5 s after the greeting starts. `--tune` runs the
 * detector with every combination of a grid of settings over the tuning half only, and prints
 * the best trade-offs between machines found and people taken for machines.
 */
import { parseArgs } from "node:util";
import type { AmdSettings } from "../edge/media/amd.ts";
import {
  type CorpusCall,
  corpusDir,
  corpusToolsAvailable,
  generateCorpus,
  readWav,
} from "../test/media/amd-corpus.ts";
import {
  type Detection,
  detect,
  EXPECTED,
  type Score,
  score,
} from "../test/media/amd-evaluation.ts";

const { values } = parseArgs({
  options: {
    seed: { type: "string", default: "1" },
    count: { type: "string", default: "240" },
    settings: { type: "string", default: "{}" },
    misses: { type: "boolean", default: false },
    tune: { type: "boolean", default: false },
  },
});
const seed = Number(values.seed);
const count = Number(values.count);
const settings = JSON.parse(values.settings) as Partial<AmdSettings>;

if (!corpusToolsAvailable()) {
  console.error(
    "bench/amd.ts needs espeak-ng and sox on PATH (Debian: apt-get install espeak-ng sox)",
  );
  process.exit(1);
}

const generation = performance.now();
const calls = await generateCorpus({
  seed,
  count,
  onProgress: (done) => {
    if (done % 20 === 0 || done === count) process.stderr.write(`\rcorpus: ${done}/${count} calls`);
  },
});
process.stderr.write(
  `\rcorpus: ${count} calls in ${corpusDir(seed)} (${((performance.now() - generation) / 1000).toFixed(1)} s)\n`,
);

// Files are read before anything is timed, so the CPU measured is the detector's alone.
const audio = calls.map((call) => ({ call, samples: readWav(call.file) }));
if (values.tune) {
  tune(audio.filter((_, index) => index % 2 === 0));
  process.exit(0);
}
const detections = audio.map(({ call, samples }) => detect(call, samples, settings));
const halves: [string, Detection[]][] = [
  ["tuning half (even calls)", detections.filter((_, index) => index % 2 === 0)],
  ["held-out half (odd calls)", detections.filter((_, index) => index % 2 === 1)],
];

console.log(`# Answering-machine detection: seed ${seed}, ${count} calls`);
if (values.settings !== "{}") console.log(`settings: ${values.settings}`);
for (const [name, half] of halves) {
  console.log(`\n## ${name}\n`);
  report(score(half));
  if (values.misses) misses(half);
}

function report(result: Score): void {
  const results = ["human", "machine", "fax", "unknown"] as const;
  console.log(`| truth \\ verdict | ${results.join(" | ")} |`);
  console.log(`|---|${results.map(() => "---:").join("|")}|`);
  for (const [label, row] of Object.entries(result.confusion)) {
    console.log(`| ${label} | ${results.map((verdict) => row[verdict]).join(" | ")} |`);
  }
  const percent = (share: number) => `${(100 * share).toFixed(1)} %`;
  const goal = (met: boolean) => (met ? "goal met" : "GOAL MISSED");
  const { afterGreeting: after, cues, cueDelay } = result;
  const { human: people, machine: machines } = result.afterGreetingOf;
  console.log();
  console.log(
    `- machines found: ${percent(result.machinesFound)} (${goal(result.machinesFound >= 0.9)}: ≥ 90 %)`,
  );
  console.log(
    `- people taken for machines: ${percent(result.peopleTakenForMachines)} (${goal(result.peopleTakenForMachines <= 0.03)}: ≤ 3 %)`,
  );
  console.log(`- verdicts as expected: ${percent(result.accuracy)} of ${result.calls} calls`);
  console.log(
    `- verdict after the greeting starts: p50 ${ms(after.p50)}, p95 ${ms(after.p95)} (${goal(after.p50 < 2500)}: p50 < 2.5 s); people p50 ${ms(people.p50)}, p95 ${ms(people.p95)}; machines p50 ${ms(machines.p50)}, p95 ${ms(machines.p95)}`,
  );
  console.log(`- CPU per detection: ${result.cpuMsPerCall.toFixed(2)} ms`);
  console.log(
    `- voicemail cue on the machines found: beep ${cues.beep}, silence ${cues.silence}, timeout ${cues.timeout}, none ${cues.none}; before the recorder was ready ${cues.early}; after it p50 ${ms(cueDelay.p50)}, p95 ${ms(cueDelay.p95)}`,
  );
}

function misses(half: Detection[]): void {
  const wrong = half.filter(({ call, verdict }) => verdict.result !== EXPECTED[call.label]);
  if (wrong.length === 0) return;
  console.log("\nwrong verdicts:");
  for (const { call, verdict } of wrong) {
    const name = call.file.split("/").at(-1);
    console.log(
      `- ${name} ${call.label} → ${verdict.result} at ${verdict.ms} ms (${verdict.reason}): ${call.script}`,
    );
  }
}

/**
 * Every combination of a grid of settings over the tuning half (the others at their
 * defaults, or `--settings`): those that no other combination beats on machines found, people
 * taken for machines and verdicts as expected together, with a median verdict within 2.3 s
 * of the greeting's start. The defaults are the combination that found the most machines
 * while taking at most 3 % of the people for machines.
 */
function tune(half: { call: CorpusCall; samples: Int16Array }[]): void {
  const grid: Record<string, number[]> = {
    greetingMs: [2000, 2200, 2400, 2600],
    greetingAtBudgetMs: [1600, 1800, 2000, 99999],
    maxWords: [4, 5, 6],
    silenceThreshold: [128, 256],
    minWordMs: [60, 100],
  };

  let combinations: Partial<AmdSettings>[] = [{ ...settings }];
  for (const [name, options] of Object.entries(grid)) {
    combinations = combinations.flatMap((base) =>
      options.map((value) => ({ ...base, [name]: value })),
    );
  }
  const scored = combinations.map((candidate) => ({
    candidate,
    result: score(half.map(({ call, samples }) => detect(call, samples, candidate))),
  }));
  // The trade-off between machines found and people taken for machines: the combinations no
  // other beats on both (then on verdicts as expected), fewest people taken first.
  const beats = (a: Score, b: Score) =>
    a.machinesFound >= b.machinesFound &&
    a.peopleTakenForMachines <= b.peopleTakenForMachines &&
    a.accuracy >= b.accuracy &&
    (a.machinesFound > b.machinesFound ||
      a.peopleTakenForMachines < b.peopleTakenForMachines ||
      a.accuracy > b.accuracy);
  const front = scored
    .filter(({ result }) => result.afterGreeting.p50 <= 2300)
    .filter(({ result }) => !scored.some((other) => beats(other.result, result)))
    .sort(
      (a, b) =>
        a.result.peopleTakenForMachines - b.result.peopleTakenForMachines ||
        b.result.machinesFound - a.result.machinesFound ||
        a.result.afterGreeting.p50 - b.result.afterGreeting.p50,
    );
  console.log(`${combinations.length} combinations on the tuning half; the best trade-offs:`);
  const percent = (share: number) => `${(100 * share).toFixed(1)} %`;
  for (const { candidate, result } of front.slice(0, 20)) {
    console.log(
      `${JSON.stringify(candidate)} machines ${percent(result.machinesFound)}, people→machine ${percent(result.peopleTakenForMachines)}, right ${percent(result.accuracy)}, p50 ${ms(result.afterGreeting.p50)}, p95 ${ms(result.afterGreeting.p95)}`,
    );
  }
}

function ms(value: number): string {
  return Number.isNaN(value) ? "–" : `${Math.round(value)} ms`;
}
