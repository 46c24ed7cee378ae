/**
 * What the import and campaign benchmarks (bench/import.ts, bench/campaigns*.ts) share: a
 * throwaway PostgreSQL 15 cluster, the real server as its own process, its resident memory,
 * and a small client for the HTTP API. Everything listens on 127.0.0.1 only, and everything
 * started here is stopped on exit.
 */

import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { standInMessage } from "../src/media/stand-in-message.ts";

export const ROOT = new URL("..", import.meta.url).pathname;

/**
 * The checkout whose `src/index.ts` is benchmarked: this repository, or the directory given
 * with `--app DIR` (a copy of a tree that stays put while others edit this one).
 */
let appRoot = ROOT;
export function setAppRoot(dir: string): void {
  if (dir) appRoot = dir.endsWith("/") ? dir : `${dir}/`;
}
export const PG_BIN = process.env.PG_BIN ?? "/usr/lib/postgresql/15/bin";
export const ADMIN_EMAIL = "bench-admin@platform.local";
export const ADMIN_PASSWORD = "bench-admin-password-2026";
export const JWT_SECRET = "bench-jwt-secret-that-is-longer-than-32-bytes";

export type DatabaseName = "pglite" | "postgres";

// ---------------------------------------------------------------- cleanup on any exit

const exitTasks: (() => void)[] = [];
let exiting = false;

/** Runs `task` (synchronously) when the process exits, however it exits. */
export function onExit(task: () => void): void {
  exitTasks.push(task);
}

function runExitTasks() {
  if (exiting) return;
  exiting = true;
  for (const task of exitTasks.reverse()) {
    try {
      task();
    } catch {}
  }
}
process.on("exit", runExitTasks);
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    runExitTasks();
    process.exit(130);
  });
}

/** A temporary directory, removed on exit unless `keep` is set. */
export function tempDir(prefix: string, keep = false): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  if (!keep) onExit(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// ---------------------------------------------------------------- processes and memory

/** Resident memory of a process in MiB, from /proc/<pid>/status; undefined once it is gone. */
export function rssMiB(pid: number): number | undefined {
  try {
    const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

const CLOCK_TICKS = 100;

/** utime + stime of a process, and its parent's pid, from /proc/<pid>/stat. */
function processStat(pid: number): { cpu: number; ppid: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name, which is in parentheses and may hold spaces.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[11]) + Number(fields[12]);
    return { cpu: ticks / CLOCK_TICKS, ppid: Number(fields[1]) };
  } catch {
    return undefined;
  }
}

/** CPU seconds (user + system) a process has used so far. */
export const cpuSeconds = (pid: number) => processStat(pid)?.cpu ?? Number.NaN;

/** CPU seconds used so far by a process and its live children (a PostgreSQL cluster). */
export function treeCpuSeconds(root: number): number {
  let total = cpuSeconds(root);
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = processStat(Number(entry));
    if (stat?.ppid === root) total += stat.cpu;
  }
  return total;
}

/** Samples a process's RSS every `everyMs` until stopped; keeps the peak and the samples. */
export function sampleRss(pid: number, everyMs = 100) {
  const samples: number[] = [];
  const take = () => {
    const value = rssMiB(pid);
    if (value !== undefined) samples.push(value);
  };
  take();
  const timer = setInterval(take, everyMs);
  return {
    stop() {
      clearInterval(timer);
      take();
      return { peak: Math.max(...samples), last: samples.at(-1) ?? 0, samples };
    },
  };
}

/** A free TCP port on 127.0.0.1, chosen by the kernel and released again. */
export function freePort(): number {
  const listener = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = listener.port;
  listener.stop(true);
  return port;
}

const liveChildren = new Set<Subprocess>();
onExit(() => {
  for (const child of liveChildren) child.kill("SIGKILL");
});

/** Keeps a child process on the list of processes killed on exit. */
export function track<T extends Subprocess>(child: T): T {
  liveChildren.add(child);
  void child.exited.then(() => liveChildren.delete(child));
  return child;
}

async function drain(stream: ReadableStream<Uint8Array>, onText: (text: string) => void) {
  const decoder = new TextDecoder();
  for await (const chunk of stream) onText(decoder.decode(chunk, { stream: true }));
}

export interface Server {
  pid: number;
  baseUrl: string;
  process: Subprocess<"ignore", "pipe", "pipe">;
  /** performance.now() when the process was spawned. */
  spawnedAt: number;
  /** performance.now() when "campaign actors restored" was read from its output. */
  restoredAt: number | undefined;
  /** The fields of the "campaign actors restored" line: {campaigns, milliseconds}. */
  restored: { campaigns: number; milliseconds: number } | undefined;
  output(): string;
  stop(): Promise<void>;
}

/**
 * Starts `bun src/index.ts` on a free loopback port (PORT=0) with the benchmark's admin and
 * signing secret, and waits until it prints "listening on http://HOST:PORT".
 */
export function startServer(
  database: { databaseUrl?: string; dataDir?: string },
  extraEnv: Record<string, string> = {},
  options: { bunFlags?: string[]; timeoutMs?: number } = {},
): Promise<Server> {
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    HOST: "127.0.0.1",
    PORT: "0",
    LOG_LEVEL: "info",
    AUTH_JWT_SECRET: JWT_SECRET,
    BOOTSTRAP_ADMIN_EMAIL: ADMIN_EMAIL,
    BOOTSTRAP_ADMIN_PASSWORD: ADMIN_PASSWORD,
    ...extraEnv,
  };
  delete env.DATABASE_URL;
  delete env.DATA_DIR;
  if (database.databaseUrl) env.DATABASE_URL = database.databaseUrl;
  if (database.dataDir) env.DATA_DIR = database.dataDir;
  return startListening(
    [process.execPath, ...(options.bunFlags ?? []), "src/index.ts"],
    env,
    options.timeoutMs,
    appRoot,
  );
}

/**
 * Spawns `cmd` in the repository and waits until it prints "listening on http://HOST:PORT".
 * Its output is read continuously, so that a full pipe never stalls it.
 */
export async function startListening(
  cmd: string[],
  env: Record<string, string>,
  timeoutMs = 120_000,
  cwd = ROOT,
): Promise<Server> {
  const spawnedAt = performance.now();
  const child = track(
    Bun.spawn(cmd, { cwd, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" }),
  );
  let printed = "";
  let errors = "";
  let listening: (port: string) => void = () => {};
  const portPromise = new Promise<string>((resolve) => {
    listening = resolve;
  });
  const server: Server = {
    pid: child.pid,
    baseUrl: "",
    process: child,
    spawnedAt,
    restoredAt: undefined,
    restored: undefined,
    output: () => printed,
    async stop() {
      if (child.exitCode !== null) return;
      child.kill("SIGTERM");
      const stopped = await Promise.race([
        child.exited.then(() => true),
        Bun.sleep(15_000).then(() => false),
      ]);
      if (!stopped) {
        child.kill("SIGKILL");
        await child.exited;
      }
    },
  };
  void drain(child.stdout, (text) => {
    printed += text;
    if (!server.restored) {
      const line = /^.*"campaign actors restored".*$/m.exec(printed)?.[0];
      if (line) {
        server.restoredAt = performance.now();
        const entry = JSON.parse(line) as { campaigns: number; milliseconds: number };
        server.restored = { campaigns: entry.campaigns, milliseconds: entry.milliseconds };
      }
    }
    const port = /listening on http:\/\/[^:]+:(\d+)/.exec(printed)?.[1];
    if (port) listening(port);
  });
  void drain(child.stderr, (text) => {
    errors += text;
  });
  let timer: Timer | undefined;
  try {
    const port = await Promise.race([
      portPromise,
      child.exited.then((code) => {
        throw new Error(
          `${cmd.join(" ")} exited with ${code} before listening:\n${printed}\n${errors}`,
        );
      }),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          child.kill("SIGKILL");
          reject(
            new Error(`${cmd.join(" ")} did not listen in ${timeoutMs} ms:\n${printed}\n${errors}`),
          );
        }, timeoutMs);
      }),
    ]);
    server.baseUrl = `http://127.0.0.1:${port}`;
  } finally {
    clearTimeout(timer);
  }
  return server;
}

/** Polls until the server answers any HTTP request (a 404 will do); returns performance.now(). */
export async function waitForHttp(baseUrl: string, timeoutMs = 30_000): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    try {
      await (await fetch(`${baseUrl}/__bench_ready`)).arrayBuffer();
      return performance.now();
    } catch (error) {
      if (performance.now() > deadline) throw error;
      await Bun.sleep(5);
    }
  }
}

// ---------------------------------------------------------------- PostgreSQL 15

export interface Cluster {
  port: number;
  root: string;
  dataDir: string;
  /** A URL for database `name` on the cluster. */
  url(name?: string): string;
  /** The pid of the postmaster, whose children are the cluster's processes. */
  postmasterPid(): number;
  /** Stops the cluster now (it is stopped on exit anyway). */
  stop(): void;
}

const asPostgres = (cmd: string[]) =>
  process.getuid?.() === 0 ? ["runuser", "-u", "postgres", "--", ...cmd] : cmd;

function runAsPostgres(cmd: string[], what: string): void {
  const result = Bun.spawnSync({ cmd: asPostgres(cmd), stdout: "pipe", stderr: "pipe" });
  if (result.exitCode !== 0) throw new Error(`${what} failed: ${result.stderr.toString()}`);
}

export const postgresInstalled = () =>
  existsSync(join(PG_BIN, "initdb")) && existsSync(join(PG_BIN, "pg_ctl"));

/**
 * A new cluster in a temporary directory, run by the `postgres` user, with stock settings
 * (durable: fsync, full_page_writes and synchronous_commit stay on) except that it listens on
 * 127.0.0.1 at a free port and keeps its socket in its own directory, and any `settings`
 * given (`name=value`, passed as `-c`). It is stopped on exit.
 */
export function startCluster(settings: string[] = []): Cluster {
  const root = mkdtempSync(join(tmpdir(), "bench-import-campaigns-pg-"));
  onExit(() => rmSync(root, { recursive: true, force: true }));
  const dataDir = join(root, "data");
  if (process.getuid?.() === 0) {
    const id = (flag: string) =>
      Number(Bun.spawnSync({ cmd: ["id", flag, "postgres"] }).stdout.toString());
    chownSync(root, id("-u"), id("-g"));
  }
  // --no-sync only skips initdb's own flush of the new files; the server runs with defaults.
  runAsPostgres(
    [join(PG_BIN, "initdb"), "-D", dataDir, "-U", "postgres", "-A", "trust", "--no-sync"],
    "initdb",
  );
  const port = freePort();
  const options = [`-c listen_addresses=127.0.0.1 -p ${port} -k ${root}`]
    .concat(settings.map((setting) => `-c ${setting}`))
    .join(" ");
  const log = join(root, "postgres.log");
  runAsPostgres(
    [join(PG_BIN, "pg_ctl"), "-D", dataDir, "-l", log, "-o", options, "-w", "start"],
    "pg_ctl start",
  );
  const stop = () =>
    Bun.spawnSync({
      cmd: asPostgres([join(PG_BIN, "pg_ctl"), "-D", dataDir, "-m", "fast", "-w", "stop"]),
      stdout: "ignore",
      stderr: "ignore",
    });
  onExit(stop);
  return {
    port,
    root,
    dataDir,
    url: (name = "postgres") => `postgres://postgres@127.0.0.1:${port}/${name}`,
    postmasterPid: () =>
      Number(readFileSync(join(dataDir, "postmaster.pid"), "utf8").split("\n")[0]),
    stop,
  };
}

// ---------------------------------------------------------------- the HTTP API

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
    what: string,
  ) {
    super(`${what} answered ${status}: ${body.slice(0, 500)}`);
  }
}

/** A logged-in client of the app's JSON API. */
export class Api {
  constructor(
    readonly baseUrl: string,
    readonly token = "",
  ) {}

  static async login(baseUrl: string, email = ADMIN_EMAIL, password = ADMIN_PASSWORD) {
    const body = await new Api(baseUrl).call("POST", "/api/v1/auth/login", { email, password });
    return new Api(baseUrl, body.data.token as string);
  }

  get headers(): Record<string, string> {
    return { authorization: `Bearer ${this.token}` };
  }

  // biome-ignore lint/suspicious/noExplicitAny: the API's JSON is read field by field.
  async call(method: string, path: string, body?: unknown, init: RequestInit = {}): Promise<any> {
    const headers: Record<string, string> = { ...this.headers };
    if (body !== undefined) headers["content-type"] = "application/json";
    const response = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      ...init,
    });
    const text = await response.text();
    if (!response.ok) throw new ApiError(response.status, text, `${method} ${path}`);
    return JSON.parse(text);
  }

  async tenantId(): Promise<string> {
    return (await this.call("GET", "/api/v1/auth/me")).data.user.tenant_id as string;
  }

  async createCampaign(name: string): Promise<string> {
    return (await this.call("POST", "/api/v1/campaigns", { name })).data.campaign.id as string;
  }

  /** The stand-in abandon message: a campaign under a profile that requires one has it. */
  async recordAbandonMessage(campaignId: string): Promise<void> {
    await this.call("PUT", `/api/v1/campaigns/${campaignId}/messages/abandon`, undefined, {
      headers: { ...this.headers, "content-type": "audio/wav" },
      body: standInMessage(),
    });
  }

  async createList(campaignId: string, name: string): Promise<string> {
    const body = await this.call("POST", `/api/v1/campaigns/${campaignId}/lead-lists`, {
      name,
      caller_id: "+14155550100",
    });
    return body.data.lead_list.id as string;
  }
}

/** Creates `count` campaigns through the API, eight at a time; returns their ids in order. */
export async function createCampaigns(api: Api, count: number): Promise<string[]> {
  const ids: string[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < count) {
        const index = next++;
        ids[index] = await api.createCampaign(`Status benchmark ${index}`);
      }
    }),
  );
  return ids;
}

/** Writes "<id> <status>" lines for `ids`, with each campaign's status as the API reports it. */
export async function writeCampaignFile(api: Api, ids: string[], path: string) {
  const status = new Map<string, string>();
  for (let offset = 0; ; offset += 500) {
    const page = await api.call("GET", `/api/v1/campaigns?limit=500&offset=${offset}`);
    for (const item of page.data.items as { id: string; status: string }[])
      status.set(item.id, item.status);
    if (page.data.items.length < 500) break;
  }
  await Bun.write(path, ids.map((id) => `${id} ${status.get(id)}\n`).join(""));
}

// ---------------------------------------------------------------- numbers

export { byTenSeconds, median, medianOfRoundRatios, percentile } from "./lib/stats.ts";

export const round = (value: number, digits = 1) => {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
};

/** "1234567" → "1,234,567". */
export const grouped = (value: number) => Math.round(value).toLocaleString("en-US");

/** Prints a Markdown table. */
export function table(header: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]) => `| ${cells.join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}

/** Reads `--name value` options into a map, with defaults. */
export function option(args: string[], name: string, fallback: string): string {
  const index = args.indexOf(`--${name}`);
  if (index === -1) return fallback;
  const value = args[index + 1];
  if (value === undefined) throw new Error(`--${name} needs a value`);
  return value;
}

/** The databases named by `--db pglite|postgres|both`. */
export function databasesOf(value: string): DatabaseName[] {
  if (value === "both") return ["pglite", "postgres"];
  if (value === "pglite" || value === "postgres") return [value];
  throw new Error(`--db must be pglite, postgres or both, not ${value}`);
}

/** One line of progress on stderr, so that stdout stays the report. */
export const progress = (message: string) =>
  process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${message}\n`);
