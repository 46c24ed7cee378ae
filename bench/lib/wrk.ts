export interface WrkResult {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  /** Answers outside 2xx/3xx: a benchmark of error pages would be meaningless. */
  non2xx: number;
  socketErrors: number;
}

export interface WrkOptions {
  url: string;
  threads: number;
  connections: number;
  durationSeconds: number;
  headers?: Record<string, string>;
  /** A Lua script and the arguments wrk passes to its `init`. */
  script?: { path: string; args: string[] };
}

/** True when the `wrk` binary is on PATH. */
export const wrkAvailable = () => Bun.which("wrk") !== null;

/** Runs wrk once against `url` (bounded by its duration) and parses its `--latency` report. */
export async function runWrk(options: WrkOptions): Promise<WrkResult> {
  const cmd = [
    "wrk",
    `-t${options.threads}`,
    `-c${options.connections}`,
    `-d${options.durationSeconds}s`,
    "--latency",
  ];
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    cmd.push("-H", `${name}: ${value}`);
  }
  if (options.script) cmd.push("-s", options.script.path);
  cmd.push(options.url);
  if (options.script) cmd.push("--", ...options.script.args);
  const child = Bun.spawn({ cmd, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  if (code !== 0) throw new Error(`wrk exited with ${code}: ${err || out}`);
  return parseWrk(out);
}

const UNIT_MS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000 };

function latencyMs(report: string, percentile: string): number {
  const match = new RegExp(`^\\s*${percentile}%\\s+([\\d.]+)(us|ms|s|m)\\s*$`, "m").exec(report);
  if (!match) throw new Error(`wrk report has no ${percentile}% latency:\n${report}`);
  return Number(match[1]) * (UNIT_MS[match[2] as string] as number);
}

function numberAfter(report: string, pattern: RegExp): number {
  const match = pattern.exec(report);
  return match ? Number(match[1]) : 0;
}

export function parseWrk(report: string): WrkResult {
  const rps = /^Requests\/sec:\s+([\d.]+)/m.exec(report);
  if (!rps) throw new Error(`wrk report has no Requests/sec:\n${report}`);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(
    report,
  );
  return {
    requestsPerSecond: Number(rps[1]),
    p50Ms: latencyMs(report, "50"),
    p99Ms: latencyMs(report, "99"),
    requests: numberAfter(report, /^\s*(\d+) requests in/m),
    non2xx: numberAfter(report, /Non-2xx or 3xx responses:\s+(\d+)/),
    socketErrors: socket ? socket.slice(1).reduce((sum, part) => sum + Number(part), 0) : 0,
  };
}
