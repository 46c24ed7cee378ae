/**
 * `npm run simulate -- --agents 100 --leads 50000 --answer-rate 0.3 --talk 120 --hours 8
 * --mode predictive --seed 1`: one simulated shift, a summary on stdout, a chart as SVG.
 */
import { writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { isProfileName, PROFILE_NAMES } from "../compliance/profiles.ts";
import { PACER_DEFAULTS } from "../dialer/predictive.ts";
import { dayChart } from "./chart.ts";
import { type PacingMode, simulateDay } from "./contact-center.ts";
import { WARM_UP_MS } from "./intervals.ts";
import { DEFAULT_DATE, PROFILE_LEADS } from "./legal-day.ts";
import { DEFAULT_MODEL, FLAT_DAY } from "./outcome-model.ts";
import { progressBar } from "./progress.ts";
import { formatSummary } from "./summary.ts";

const USAGE = `usage: bun src/simulator/cli.ts [options]
  --agents N            agents logged in (20)
  --leads N             leads imported (5000)
  --hours H             length of the shift, fractions allowed (0.25)
  --mode M              predictive | progressive | ratio (predictive)
  --ratio R             the campaign's dial_ratio: the fixed ratio (ratio), the cap
                        (predictive), calls per ready agent (progressive) (3)
  --max-abandon-rate F  the campaign's max_abandon_rate (0.03)
  --profile P           the campaign's regulatory_profile: us | uk | ca | none (us)
  --answer-rate F       share of calls a person answers (0.3)
  --machine-rate F      share answered by a machine (0.1)
  --hourly LIST         24 comma-separated factors on the answer rate by local hour (flat)
  --talk S              mean talk time, seconds (120)
  --wrap S              mean wrap-up time, seconds (15)
  --ring S              mean ring time before an answer, seconds (12)
  --no-answer S         how long an unanswered call rings before the node gives up, seconds (30)
  --seed N              random seed (1)
  --start ISO           shift start, within the hours the leads may be called (09:00 in
                        their zone on ${DEFAULT_DATE}, earlier if the shift must end by the close)
  --timezone ZONE       the leads' time zone (the profile's: ${PROFILE_NAMES.map((name) => `${name} ${PROFILE_LEADS[name].timezone}`).join(", ")})
  --tick-ms N           how often the edge node claims, simulated ms (1000)
  --chart PATH          where to write the SVG chart (<tmpdir>/simulation-<mode>-<seed>.svg)
  --json PATH           also write the summary and samples as JSON
  --min-team N, --target-share F, --ramp-from F, --ramp-to F, --caution F
                        predictive pacer tuning`;

const { values } = parseArgs({
  options: {
    agents: { type: "string", default: "20" },
    leads: { type: "string", default: "5000" },
    hours: { type: "string", default: "0.25" },
    mode: { type: "string", default: "predictive" },
    ratio: { type: "string", default: "3" },
    "max-abandon-rate": { type: "string", default: "0.03" },
    profile: { type: "string", default: "us" },
    "answer-rate": { type: "string", default: String(DEFAULT_MODEL.answerRate) },
    "machine-rate": { type: "string", default: String(DEFAULT_MODEL.machineRate) },
    hourly: { type: "string" },
    talk: { type: "string", default: "120" },
    wrap: { type: "string", default: "15" },
    ring: { type: "string", default: "12" },
    "no-answer": { type: "string", default: String(DEFAULT_MODEL.noAnswerMs / 1000) },
    seed: { type: "string", default: "1" },
    start: { type: "string" },
    timezone: { type: "string" },
    "tick-ms": { type: "string", default: "1000" },
    chart: { type: "string" },
    json: { type: "string" },
    "min-team": { type: "string", default: String(PACER_DEFAULTS.minTeam) },
    "ramp-from": { type: "string", default: String(PACER_DEFAULTS.rampFrom) },
    "ramp-to": { type: "string", default: String(PACER_DEFAULTS.rampTo) },
    caution: { type: "string", default: String(PACER_DEFAULTS.caution) },
    "target-share": { type: "string", default: String(PACER_DEFAULTS.targetShare) },
    help: { type: "boolean", default: false },
  },
});

function fail(message: string): never {
  console.error(`${message}\n${USAGE}`);
  process.exit(2);
}

function number(name: keyof typeof values, low: number, high: number): number {
  const value = Number(values[name]);
  if (!Number.isFinite(value) || value < low || value > high)
    fail(`--${name} must be a number from ${low} to ${high}`);
  return value;
}

if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
const mode = values.mode as PacingMode;
if (!["predictive", "progressive", "ratio"].includes(mode))
  fail("--mode must be predictive, progressive or ratio");
const hourly = values.hourly ? values.hourly.split(",").map(Number) : FLAT_DAY;
if (hourly.length !== 24 || hourly.some((factor) => !(factor >= 0)))
  fail("--hourly takes 24 non-negative factors");
const startAt = values.start === undefined ? undefined : Date.parse(values.start);
if (startAt !== undefined && Number.isNaN(startAt)) fail("--start must be an ISO 8601 instant");
const profile = values.profile ?? "us";
if (!isProfileName(profile)) fail(`--profile must be one of ${PROFILE_NAMES.join(", ")}`);

const options = {
  agents: number("agents", 1, 5_000),
  leads: number("leads", 1, 1_000_000),
  hours: number("hours", 0.01, 13),
  mode,
  ratio: number("ratio", 1, 5),
  maxAbandonRate: number("max-abandon-rate", 0, 0.1),
  profile,
  seed: number("seed", 0, 2 ** 32 - 1),
  startAt,
  timezone: values.timezone,
  tickMs: number("tick-ms", 100, 60_000),
  sampleMs: 60_000,
  model: {
    ...DEFAULT_MODEL,
    answerRate: number("answer-rate", 0, 1),
    machineRate: number("machine-rate", 0, 1),
    hourly,
    talk: { ...DEFAULT_MODEL.talk, mean: number("talk", 1, 7_200) * 1000 },
    wrap: { ...DEFAULT_MODEL.wrap, mean: number("wrap", 1, 3_600) * 1000 },
    ring: { ...DEFAULT_MODEL.ring, mean: number("ring", 2, 28) * 1000 },
    noAnswerMs: number("no-answer", 1, 300) * 1000,
  },
  tuning: {
    ...PACER_DEFAULTS,
    minTeam: number("min-team", 1, 10_000),
    rampFrom: number("ramp-from", 0.01, 10),
    rampTo: number("ramp-to", 0, 1),
    caution: number("caution", 0, 5),
    targetShare: number("target-share", 0.1, 1),
  },
};

const bar = progressBar(`simulating ${options.hours} h`);
const result = await simulateDay({
  ...options,
  onProgress: (done, detail) => bar.update(done, detail),
}).catch((error: unknown) => {
  // A shift out of the leads' hours, or a zone the runtime does not know.
  if (error instanceof RangeError) fail(error.message);
  throw error;
});
bar.finish();
process.stdout.write(formatSummary(result.summary));
const chartPath =
  values.chart ?? join(tmpdir(), `simulation-${mode}-${profile}-${options.seed}.svg`);
await writeFile(
  chartPath,
  dayChart(result.samples, {
    title: `${mode}, ${profile} profile, ${options.agents} agents, answer rate ${options.model.answerRate}, seed ${options.seed}`,
    maxAbandonRate: options.maxAbandonRate,
    intervals: result.intervals,
    warmUpMs: WARM_UP_MS,
  }),
);
console.log(`chart: ${chartPath}`);
if (values.json) {
  await writeFile(
    values.json,
    `${JSON.stringify({ summary: result.summary, samples: result.samples, intervals: result.intervals }, null, 2)}\n`,
  );
  console.log(`json: ${values.json}`);
}
await result.close();
