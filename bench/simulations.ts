/**
 * `bun bench/simulations.ts [--seeds 1,2,3,4,5] [--jobs 1] [--hours 8] [--only NAME]`: the
 * pacing table. Every row is one `npm run simulate` command (printed beside it), run as its
 * own process; the summaries are kept as JSON in `--out` and the table is printed as Markdown.
 */
import { mkdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { DaySummary } from "../src/simulator/summary.ts";

const { values } = parseArgs({
  options: {
    seeds: { type: "string", default: "1,2,3,4,5" },
    jobs: { type: "string", default: "1" },
    hours: { type: "string", default: "8" },
    only: { type: "string" },
    out: { type: "string", default: join(tmpdir(), "simulations") },
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

const seeds = (values.seeds ?? "1").split(",").map(Number);
const rows = ROWS.filter((row) => !values.only || row.name === values.only);
mkdirSync(values.out as string, { recursive: true });

interface Run {
  row: (typeof ROWS)[number];
  seed: number;
  /** The simulator's arguments: the row's command is `npm run simulate -- <args>`. */
  args: string[];
  json: string;
}
const runs: Run[] = rows.flatMap((row) =>
  seeds.map((seed) => ({
    row,
    seed,
    args: [...row.args, ...COMMON, "--hours", values.hours as string, "--seed", `${seed}`],
    json: join(values.out as string, `${row.name}-${seed}.json`),
  })),
);
const commandOf = (run: Run) => `npm run simulate -- ${run.args.join(" ")}`;

async function execute(run: Run) {
  const args = [...run.args, "--json", run.json];
  const child = Bun.spawn(["bun", "src/simulator/cli.ts", ...args], {
    stdout: "ignore",
    stderr: "ignore",
  });
  if ((await child.exited) !== 0) throw new Error(`failed: ${commandOf(run)}`);
  const { summary } = JSON.parse(readFileSync(run.json, "utf8")) as { summary: DaySummary };
  console.error(`done: ${run.row.name} seed ${run.seed} in ${summary.realSeconds.toFixed(0)} s`);
  return summary;
}

const queue = [...runs];
const results = new Map<Run, DaySummary>();
await Promise.all(
  Array.from({ length: Number(values.jobs) }, async () => {
    for (let run = queue.shift(); run; run = queue.shift()) results.set(run, await execute(run));
  }),
);

const percent = (value: number) => `${(value * 100).toFixed(2)}%`;
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
