/**
 * `bun bench/simulations.ts [--seeds 1,2,3,4,5] [--jobs 1] [--hours 8] [--only NAME]`: the
 * pacing table. Every row is one `npm run simulate` command (printed beside it), run as its
 * own process; the summaries are kept as JSON in `--out` and the table is printed as Markdown.
 *
 * `bun bench/simulations.ts --grid` (`npm run bench:pacing -- --grid`): the predictive pacer
 * over caps 2, 3, 4, 5 × answer rates 0.15, 0.3, 0.5 × teams of 25 and 100 × seeds 1–3, two
 * hours each, at most two processes at a time; prints every run, then each cell over its
 * seeds, then the goals checked against them. `--demo` runs the demo's settings instead (or
 * beside the grid, with `--grid`).
 *
 * `--profiles us,none` runs every row under each regulatory profile (`us` alone by default)
 * and prints, run by run, what the first profile's abandon governor costs in occupancy
 * against the others, over the day and over its first and last 30 minutes. `--reuse` reads
 * the summaries already in `--out` instead of running those again.
 */
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { type OccupancyInterval, OPENING_MS } from "../src/simulator/intervals.ts";
import type { DaySummary } from "../src/simulator/summary.ts";

const { values } = parseArgs({
  options: {
    seeds: { type: "string", default: "1,2,3,4,5" },
    jobs: { type: "string", default: "1" },
    hours: { type: "string", default: "8" },
    only: { type: "string" },
    out: { type: "string", default: join(tmpdir(), "simulations") },
    grid: { type: "boolean", default: false },
    demo: { type: "boolean", default: false },
    reuse: { type: "boolean", default: false },
    profiles: { type: "string", default: "us" },
    caps: { type: "string", default: "2,3,4,5" },
    "answer-rates": { type: "string", default: "0.15,0.3,0.5" },
    teams: { type: "string", default: "25,100" },
  },
});

/**
 * The rows: 100 agents under each pacing, and a team of 10 under the predictive pacer. The
 * fixed ratio places three times the calls and would run through 50,000 leads in three hours
 * (then sit idle), so it gets enough leads for the whole day.
 */
const ROWS = [
  { name: "predictive", args: ["--agents", "100", "--mode", "predictive", "--leads", "50000"] },
  {
    name: "progressive-1.0",
    args: ["--agents", "100", "--mode", "progressive", "--ratio", "1", "--leads", "50000"],
  },
  {
    name: "fixed-3.0",
    args: ["--agents", "100", "--mode", "ratio", "--ratio", "3", "--leads", "200000"],
  },
  {
    name: "predictive-10-agents",
    args: ["--agents", "10", "--mode", "predictive", "--leads", "50000"],
  },
];
const COMMON = ["--answer-rate", "0.3", "--talk", "120", "--wrap", "15"];
/**
 * `npm run demo`'s campaign and calls (src/demo): progressive at a ratio of 2, four agents,
 * short calls; with the answer rate at 0.6, and leads enough for the day under any profile.
 */
const DEMO = {
  name: "demo",
  args: [
    ...["--agents", "4", "--mode", "progressive", "--ratio", "2", "--leads", "4000"],
    ...["--answer-rate", "0.6", "--talk", "30", "--wrap", "6", "--ring", "6", "--no-answer", "15"],
  ],
  own: true,
};

const list = (text: string | undefined) => (text ?? "").split(",").map(Number);
const short = values.grid || values.demo;
const seeds = list(short && values.seeds === "1,2,3,4,5" ? "1,2,3" : values.seeds);
const hours = short && values.hours === "8" ? "2" : (values.hours as string);
/** Leads enough for two hours of calls at the cell's answer rate, retries aside. */
const leadsFor = (agents: number, answerRate: number) =>
  String(Math.ceil((agents * 200 * 0.3) / answerRate));
const GRID = list(values.caps).flatMap((cap) =>
  list(values["answer-rates"]).flatMap((answerRate) =>
    list(values.teams).map((agents) => ({
      name: `cap ${cap}, answer rate ${answerRate}, ${agents} agents`,
      cell: { cap, answerRate, agents },
      args: [
        "--agents",
        String(agents),
        "--mode",
        "predictive",
        "--ratio",
        String(cap),
        "--answer-rate",
        String(answerRate),
        "--leads",
        leadsFor(agents, answerRate),
        "--talk",
        "120",
        "--wrap",
        "15",
      ],
    })),
  ),
);
type Row = {
  name: string;
  args: string[];
  cell?: { cap: number; answerRate: number; agents: number };
  /** Its arguments are complete: no common ones added. */
  own?: boolean;
};
const rows: Row[] = [
  ...(values.grid ? GRID : []),
  ...(values.demo ? [DEMO] : []),
  ...(values.grid || values.demo
    ? []
    : ROWS.filter((row) => !values.only || row.name === values.only)),
];
const profiles = (values.profiles ?? "us").split(",");
const seriesOf = (row: Row) => (row.cell || row.own ? "grid" : "anchors");
const jobs = short
  ? Math.min(2, Number(values.jobs === "1" ? 2 : values.jobs))
  : Number(values.jobs);
mkdirSync(values.out as string, { recursive: true });

interface Run {
  row: Row;
  seed: number;
  profile: string;
  /** The simulator's arguments: the row's command is `npm run simulate -- <args>`. */
  args: string[];
  json: string;
}
const allRuns: Run[] = rows.flatMap((row) =>
  profiles.flatMap((profile) =>
    seeds.map((seed) => ({
      row,
      seed,
      profile,
      args: [
        ...row.args,
        ...(seriesOf(row) === "grid" ? [] : COMMON),
        ...["--profile", profile, "--hours", hours, "--seed", `${seed}`],
      ],
      json: join(
        values.out as string,
        `${row.name.replaceAll(/[^a-z0-9.]+/gi, "-")}-${profile}-${seed}.json`,
      ),
    })),
  ),
);
/** The runs under the first profile: the tables and the goals are theirs. */
const runs = allRuns.filter((run) => run.profile === profiles[0]);
const commandOf = (run: Run) => `npm run simulate -- ${run.args.join(" ")}`;

/** Occupancy over the 5-minute intervals within [from, to) ms since the start. */
function occupancyBetween(intervals: OccupancyInterval[], from: number, to: number) {
  let time = 0;
  let busy = 0;
  for (const interval of intervals) {
    if (interval.from < from || interval.to > to) continue;
    time += interval.to - interval.from;
    busy += interval.occupancy * (interval.to - interval.from);
  }
  return time === 0 ? 0 : busy / time;
}

/** Occupancy over the first and the last 30 minutes of each run. */
const ends = new Map<Run, { first: number; last: number }>();

async function execute(run: Run) {
  // --reuse: a run whose summary is already in --out is read, not run again.
  if (!values.reuse || !existsSync(run.json)) {
    const args = [...run.args, "--json", run.json];
    const child = Bun.spawn([process.execPath, "src/simulator/cli.ts", ...args], {
      stdout: "ignore",
      stderr: "ignore",
    });
    if ((await child.exited) !== 0) throw new Error(`failed: ${commandOf(run)}`);
  }
  const { summary, intervals } = JSON.parse(readFileSync(run.json, "utf8")) as {
    summary: DaySummary;
    intervals: { occupancy: OccupancyInterval[] };
  };
  const span = Number(hours) * 3_600_000;
  ends.set(run, {
    first: occupancyBetween(intervals.occupancy, 0, OPENING_MS),
    last: occupancyBetween(intervals.occupancy, span - OPENING_MS, span),
  });
  console.error(
    `done: ${run.row.name}, ${run.profile}, seed ${run.seed} in ${summary.realSeconds.toFixed(0)} s`,
  );
  return summary;
}

const queue = [...allRuns];
const results = new Map<Run, DaySummary>();
await Promise.all(
  Array.from({ length: jobs }, async () => {
    for (let run = queue.shift(); run; run = queue.shift()) results.set(run, await execute(run));
  }),
);

const percent = (value: number) => `${(value * 100).toFixed(2)}%`;
if (values.grid) printGrid();
if (profiles.length > 1) printCost();
if (values.grid || values.demo) process.exit(0);
console.log(
  "| row | seed | calls placed | live answers | abandoned (legal window) | occupancy | talk min / agent hour | wall time |",
);
console.log("|---|---:|---:|---:|---:|---:|---:|---:|");
for (const run of runs) {
  const summary = results.get(run) as DaySummary;
  console.log(
    `| ${run.row.name} | ${run.seed} | ${summary.callsPlaced} | ${summary.liveAnswers} | ` +
      `${summary.abandons}, ${percent(summary.abandonRate)} | ${percent(summary.occupancy)} | ` +
      `${summary.talkMinutesPerAgentHour.toFixed(1)} | ${summary.realSeconds.toFixed(0)} s |`,
  );
}
console.log("\nCommands:");
for (const run of runs) console.log(`- ${commandOf(run)}`);

/** The grid: every run, each cell over its seeds, and the goals against them. */
function printGrid() {
  const gridRuns = runs.filter((run) => run.row.cell);
  const runsOf = (row: Row) => gridRuns.filter((run) => run.row === row);
  const summaryOf = (run: Run) => results.get(run) as DaySummary;
  // A day shorter than the warm-up has no 5-minute interval after it: counted as full.
  const lowest5 = (summary: DaySummary) => summary.lowestOccupancyInterval?.occupancy ?? 1;
  console.log(
    "| cap | answer rate | agents | seed | abandoned (day) | first 30 min | worst 15 min | occupancy | lowest 5 min | dial ratio mean ± sd | talk min / agent hour |",
  );
  console.log("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
  for (const run of gridRuns) {
    const s = summaryOf(run);
    const cell = run.row.cell as NonNullable<Row["cell"]>;
    console.log(
      `| ${cell.cap} | ${cell.answerRate} | ${cell.agents} | ${run.seed} | ${percent(s.abandonRate)} | ` +
        `${percent(s.openingAbandonRate)} | ${percent(s.worstAbandonInterval.rate)} | ` +
        `${percent(s.occupancy)} | ${percent(lowest5(s))} | ` +
        `${s.ratioAfterWarmUp.mean.toFixed(2)} ± ${s.ratioAfterWarmUp.sd.toFixed(2)} | ` +
        `${s.talkMinutesPerAgentHour.toFixed(1)} |`,
    );
  }
  console.log("\nEach cell over its seeds (worst seed for the limits, range for occupancy):\n");
  console.log(
    "| cap | answer rate | agents | abandoned (day), max | worst 15 min, max | occupancy, min–max | lowest 5 min, min | talk min / agent hour, mean |",
  );
  console.log("|---:|---:|---:|---:|---:|---:|---:|---:|");
  for (const row of rows.filter((each) => each.cell)) {
    const summaries = runsOf(row).map(summaryOf);
    const cell = row.cell as NonNullable<Row["cell"]>;
    const max = (f: (s: DaySummary) => number) => Math.max(...summaries.map(f));
    const min = (f: (s: DaySummary) => number) => Math.min(...summaries.map(f));
    const talk =
      summaries.reduce((sum, s) => sum + s.talkMinutesPerAgentHour, 0) / summaries.length;
    console.log(
      `| ${cell.cap} | ${cell.answerRate} | ${cell.agents} | ${percent(max((s) => s.abandonRate))} | ` +
        `${percent(max((s) => s.worstAbandonInterval.rate))} | ` +
        `${percent(min((s) => s.occupancy))}–${percent(max((s) => s.occupancy))} | ` +
        `${percent(min(lowest5))} | ${talk.toFixed(1)} |`,
    );
  }
  // Monotone in the cap: for the same day (answer rate, team, seed), a higher cap gives at
  // least the occupancy of a lower one, within one point.
  const inversions: string[] = [];
  for (const run of gridRuns)
    for (const other of gridRuns) {
      const a = run.row.cell as NonNullable<Row["cell"]>;
      const b = other.row.cell as NonNullable<Row["cell"]>;
      if (run.seed !== other.seed || a.answerRate !== b.answerRate || a.agents !== b.agents)
        continue;
      if (b.cap <= a.cap) continue;
      const drop = summaryOf(run).occupancy - summaryOf(other).occupancy;
      if (drop > 0.01)
        inversions.push(
          `answer rate ${a.answerRate}, ${a.agents} agents, seed ${run.seed}: cap ${b.cap} ${percent(drop)} below cap ${a.cap}`,
        );
    }
  const all = gridRuns.map(summaryOf);
  const limit = 0.03;
  console.log("\nGoals:");
  console.log(
    `- abandoned over the day ≤ 3%: worst ${percent(Math.max(...all.map((s) => s.abandonRate)))}, ` +
      `${all.filter((s) => s.abandonRate > limit).length} of ${all.length} runs above`,
  );
  console.log(
    `- first 30 minutes ≤ 3%: worst ${percent(Math.max(...all.map((s) => s.openingAbandonRate)))}, ` +
      `${all.filter((s) => s.openingAbandonRate > limit).length} runs above`,
  );
  console.log(
    `- every 15 minutes ≤ 6%: worst ${percent(Math.max(...all.map((s) => s.worstAbandonInterval.rate)))}, ` +
      `${all.filter((s) => s.worstAbandonInterval.rate > 2 * limit).length} runs above`,
  );
  const broken = all.filter((s) => !s.limit.everyMoment.kept);
  console.log(
    `- abandons ≤ limit × live answers + 1 at every moment: smallest margin ` +
      `${Math.min(...all.map((s) => s.limit.everyMoment.worst.margin)).toFixed(2)}, ` +
      `${broken.length} of ${all.length} runs broke it`,
  );
  const hundred = gridRuns.filter((run) => run.row.cell?.agents === 100).map(summaryOf);
  if (hundred.length > 0)
    console.log(
      `- 100 agents, every 5 minutes after the first 15 ≥ 85% occupancy: lowest ${percent(Math.min(...hundred.map(lowest5)))}, ` +
        `${hundred.filter((s) => lowest5(s) < 0.85).length} of ${hundred.length} runs below`,
    );
  const reach = gridRuns
    .filter(
      (run) =>
        run.row.cell?.agents === 100 && run.row.cell.cap === 5 && run.row.cell.answerRate === 0.3,
    )
    .map(summaryOf);
  if (reach.length > 0)
    console.log(
      `- reach, 100 agents, answer rate 0.3, cap 5: abandoned ${reach.map((s) => percent(s.abandonRate)).join(", ")}; ` +
        `occupancy ${reach.map((s) => percent(s.occupancy)).join(", ")}`,
    );
  console.log(
    `- a higher cap never below a lower one's occupancy by more than a point: ${inversions.length === 0 ? "holds" : `${inversions.length} inversions`}`,
  );
  for (const inversion of inversions) console.log(`  - ${inversion}`);
  console.log(
    `\nCommand of each run: npm run simulate -- <args>, for example:\n- ${commandOf(gridRuns[0] as Run)}`,
  );
}

/**
 * What the first profile costs against each other one, run by run: the same day (row, seed)
 * under each, its abandons, whether it kept the limit at every moment, and its occupancy over
 * the day and given up over its first and last 30 minutes.
 */
function printCost() {
  const [first, ...others] = profiles as [string, ...string[]];
  const twin = (run: Run, profile: string) =>
    allRuns.find(
      (other) => other.row === run.row && other.seed === run.seed && other.profile === profile,
    ) as Run;
  const summaryOf = (run: Run) => results.get(run) as DaySummary;
  const endsOf = (run: Run) => ends.get(run) as { first: number; last: number };
  const points = (value: number) => (value * 100).toFixed(2);
  const mean = (values: number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;
  const kept = (s: DaySummary) =>
    s.limit.everyMoment.kept ? "kept" : `broke (${s.limit.everyMoment.worst.margin.toFixed(1)})`;
  for (const other of others) {
    console.log(`\nOccupancy given up under ${first} against ${other}, run by run (points):\n`);
    console.log(
      `| run | seed | abandoned, ${first} | every moment, ${first} | abandoned, ${other} | ` +
        `every moment, ${other} | occupancy, ${first} | occupancy, ${other} | given up | ` +
        "first 30 min | last 30 min |",
    );
    console.log("|---|---:|---:|---|---:|---|---:|---:|---:|---:|---:|");
    const given: number[] = [];
    for (const run of runs) {
      const a = summaryOf(run);
      const b = summaryOf(twin(run, other));
      const [x, y] = [endsOf(run), endsOf(twin(run, other))];
      given.push(b.occupancy - a.occupancy);
      console.log(
        `| ${run.row.name} | ${run.seed} | ${percent(a.abandonRate)} | ${kept(a)} | ` +
          `${percent(b.abandonRate)} | ${kept(b)} | ${percent(a.occupancy)} | ${percent(b.occupancy)} | ` +
          `${points(b.occupancy - a.occupancy)} | ${points(y.first - x.first)} | ${points(y.last - x.last)} |`,
      );
    }
    console.log("\nEach row over its seeds (means; given up in points):\n");
    console.log(
      `| run | abandoned, ${first} | abandoned, ${other} | occupancy, ${first} | occupancy, ${other} | ` +
        "given up | first 30 min | last 30 min |",
    );
    console.log("|---|---:|---:|---:|---:|---:|---:|---:|");
    for (const row of rows) {
      const mine = runs.filter((run) => run.row === row);
      const theirs = mine.map((run) => twin(run, other));
      const over = (list: Run[], f: (run: Run) => number) => mean(list.map(f));
      const occupancy = (run: Run) => summaryOf(run).occupancy;
      console.log(
        `| ${row.name} | ${percent(over(mine, (run) => summaryOf(run).abandonRate))} | ` +
          `${percent(over(theirs, (run) => summaryOf(run).abandonRate))} | ` +
          `${percent(over(mine, occupancy))} | ${percent(over(theirs, occupancy))} | ` +
          `${points(over(theirs, occupancy) - over(mine, occupancy))} | ` +
          `${points(over(theirs, (run) => endsOf(run).first) - over(mine, (run) => endsOf(run).first))} | ` +
          `${points(over(theirs, (run) => endsOf(run).last) - over(mine, (run) => endsOf(run).last))} |`,
      );
    }
    console.log(
      `\nGiven up over the day: ${points(Math.min(...given))} to ${points(Math.max(...given))} points, ` +
        `mean ${points(mean(given))}, over ${given.length} runs; ` +
        `${runs.filter((run) => !summaryOf(run).limit.everyMoment.kept).length} runs under ${first} ` +
        `and ${runs.filter((run) => !summaryOf(twin(run, other)).limit.everyMoment.kept).length} under ${other} ` +
        "broke abandons ≤ limit × live answers + 1",
    );
  }
}
