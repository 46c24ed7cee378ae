import { readFileSync } from "node:fs";
import type { Subprocess } from "bun";

/** A memory figure of a process in MiB from /proc/<pid>/status; undefined once it is gone. */
function statusMiB(pid: number, field: "VmRSS" | "VmHWM"): number | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const match = new RegExp(`^${field}:\\s+(\\d+)\\s+kB$`, "m").exec(status);
    return match ? Number(match[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** Resident memory now. */
export const rssMiB = (pid: number) => statusMiB(pid, "VmRSS");

/** The highest resident memory since the process started (boot included). */
export const peakRssMiB = (pid: number) => statusMiB(pid, "VmHWM");

/** A free TCP port on 127.0.0.1: the kernel picks one, and it is released for the target. */
export function freePort(): number {
  const listener = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: { data() {} },
  });
  const port = listener.port;
  listener.stop(true);
  return port;
}

export interface Target {
  name: string;
  port: number;
  process: Subprocess;
  logFile: string;
}

/**
 * Starts one server under test as its own `bun` process, its output going to a log file
 * (a pipe nobody reads would fill up and stall the server), and waits until it answers HTTP.
 */
export async function startTarget(options: {
  name: string;
  cmd: string[];
  env: Record<string, string>;
  port: number;
  logFile: string;
  timeoutMs?: number;
}): Promise<Target> {
  const child = Bun.spawn({
    cmd: options.cmd,
    env: { ...process.env, ...options.env },
    stdin: "ignore",
    stdout: Bun.file(options.logFile),
    stderr: Bun.file(`${options.logFile}.err`),
  });
  liveChildren.add(child);
  child.exited.then(() => liveChildren.delete(child));
  const target = {
    name: options.name,
    port: options.port,
    process: child,
    logFile: options.logFile,
  };
  await waitUntilAnswering(target, options.timeoutMs ?? 90_000);
  return target;
}

async function waitUntilAnswering(target: Target, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (target.process.exitCode !== null) {
      throw new Error(
        `${target.name} exited with ${target.process.exitCode} before listening; see ${target.logFile}.err`,
      );
    }
    try {
      // Any answer, even a 404, means the server has finished booting and listens.
      await fetch(`http://127.0.0.1:${target.port}/__bench_ready`, {
        signal: AbortSignal.timeout(1000),
      });
      return;
    } catch {
      await Bun.sleep(100);
    }
  }
  target.process.kill("SIGKILL");
  throw new Error(`${target.name} did not answer on port ${target.port} within ${timeoutMs} ms`);
}

/** Asks for a graceful drain, then kills the process if it has not gone within the grace time. */
export async function stopTarget(target: Target, graceMs = 10_000): Promise<void> {
  if (target.process.exitCode !== null) return;
  target.process.kill("SIGTERM");
  const stopped = await Promise.race([
    target.process.exited.then(() => true),
    Bun.sleep(graceMs).then(() => false),
  ]);
  if (!stopped) {
    target.process.kill("SIGKILL");
    await target.process.exited;
  }
}

const liveChildren = new Set<Subprocess>();

/** For the exit trap: no server under test survives the benchmark. */
export function killLiveChildren(): void {
  for (const child of liveChildren) child.kill("SIGKILL");
}
