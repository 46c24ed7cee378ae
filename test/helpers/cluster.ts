import postgres from "postgres";
import { type Json, type ServerProcess, startServer } from "./server-process.ts";
import { type Message, openSocket } from "./sockets.ts";

/**
 * Several identical server processes on one PostgreSQL database, as they run behind a load
 * balancer: started, killed, stopped, restarted, paused and resumed one by one, and a client
 * that spreads requests over the processes that are up.
 */

export const CLUSTER_ADMIN_EMAIL = "ops@example.test";
export const CLUSTER_ADMIN_PASSWORD = "a configured password";

/** One signing secret for every process: a token from one is good on the others. */
const CLUSTER_SECRET = "cluster-test-secret-long-enough-to-be-used";

export type MemberState = "live" | "paused" | "stopped" | "killed";

export interface Member {
  index: number;
  state: MemberState;
  /** The running (or last) incarnation; a restart replaces it. */
  server: ServerProcess;
  baseUrl: string;
  port: number;
  /** Every incarnation so far, oldest first, so that a killed process's log stays readable. */
  incarnations: ServerProcess[];
  /** When the current incarnation started listening (Date.now()). */
  startedAt: number;
  /** Everything the current incarnation wrote on stderr. */
  stderr: string;
}

export interface LogLine extends Json {
  time: string;
  level: string;
  message: string;
}

/** A new database on the PostgreSQL server of `serverUrl`; `drop()` removes it with force. */
export async function createDatabase(serverUrl: string, prefix: string) {
  const name = `${prefix}_${process.pid}_${Date.now()}`;
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  await admin.end({ timeout: 5 });
  const parsed = new URL(serverUrl);
  parsed.pathname = `/${name}`;
  return {
    name,
    url: parsed.toString(),
    async drop() {
      const again = postgres(serverUrl, { max: 1, onnotice: () => {} });
      await again.unsafe(`drop database if exists ${name} with (force)`);
      await again.end({ timeout: 5 });
    },
  };
}

/** The port of a URL such as a lease's `owner_url`, or undefined when it has none. */
export function portOf(url: string): number | undefined {
  try {
    const port = new URL(url).port;
    return port ? Number(port) : undefined;
  } catch {
    return undefined;
  }
}

/** Whether a fetch failed before the request reached a server (a load balancer retries then). */
export function connectionRefused(error: unknown): boolean {
  const code = (error as { code?: string } | undefined)?.code;
  return code === "ConnectionRefused" || code === "ECONNREFUSED";
}

export interface Reply {
  status: number;
  headers: Headers;
  /** The body as sent, for byte-for-byte comparisons. */
  text: string;
  body: Json;
  /** Index of the process that answered. */
  via: number;
}

export interface RequestOptions {
  token?: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** Send to this process only (no retry elsewhere). */
  via?: number;
  timeoutMs?: number;
}

export type Cluster = Awaited<ReturnType<typeof startCluster>>;

/**
 * Starts `size` processes of `bun src/index.ts` on a new database of the PostgreSQL server
 * `serverUrl` (DATABASE_URL unless given), each on its own loopback port with LOG_LEVEL=info,
 * its stdout kept. Each process's database connections are named `dialer-<index>`
 * (application_name), so that the database can tell who wrote what.
 */
export async function startCluster(options: {
  size: number;
  serverUrl?: string;
  env?: Record<string, string>;
  databasePrefix?: string;
}) {
  const serverUrl = options.serverUrl ?? process.env.DATABASE_URL;
  if (!serverUrl) throw new Error("a cluster needs PostgreSQL: set DATABASE_URL");
  const database = await createDatabase(serverUrl, options.databasePrefix ?? "dialer_cluster");
  const sql = postgres(database.url, { max: 3, onnotice: () => {} });
  const envOf = (index: number): Record<string, string> => ({
    DATABASE_URL: database.url,
    AUTH_JWT_SECRET: CLUSTER_SECRET,
    BOOTSTRAP_ADMIN_EMAIL: CLUSTER_ADMIN_EMAIL,
    BOOTSTRAP_ADMIN_PASSWORD: CLUSTER_ADMIN_PASSWORD,
    PGAPPNAME: `dialer-${index}`,
    ...options.env,
    // Start-up is seen by the "listening on" line, and lease changes are logged, at info.
    LOG_LEVEL: "info",
  });

  const launch = async (index: number): Promise<Omit<Member, "index" | "incarnations">> => {
    const server = await startServer(envOf(index), 90_000);
    const member = {
      state: "live" as MemberState,
      server,
      baseUrl: server.baseUrl,
      port: Number(new URL(server.baseUrl).port),
      startedAt: Date.now(),
      stderr: "",
    };
    // A pipe nobody reads fills up and stalls the writer.
    void new Response(server.process.stderr).text().then((text) => {
      member.stderr = text;
    });
    return member;
  };

  const members: Member[] = [];
  try {
    // The first migrates the new database; the others then start side by side.
    const first = await launch(0);
    members.push({ index: 0, incarnations: [first.server], ...first });
    const rest = await Promise.all(
      Array.from({ length: options.size - 1 }, (_, offset) => launch(offset + 1)),
    );
    rest.forEach((started, offset) => {
      members.push({ index: offset + 1, incarnations: [started.server], ...started });
    });
  } catch (error) {
    for (const member of members) member.server.process.kill("SIGKILL");
    await sql.end({ timeout: 5 });
    await database.drop();
    throw error;
  }

  const member = (index: number): Member => {
    const found = members[index];
    if (!found) throw new Error(`no process ${index}`);
    return found;
  };
  const live = () => members.filter((m) => m.state === "live").map((m) => m.index);

  let turn = 0;
  /** The next live process in turn, skipping `except`; undefined when none is up. */
  const nextLive = (except?: number): number | undefined => {
    const up = live().filter((index) => index !== except);
    if (up.length === 0) return undefined;
    turn = (turn + 1) % 1_000_000;
    return up[turn % up.length];
  };

  const send = async (index: number, method: string, path: string, options: RequestOptions) => {
    const headers: Record<string, string> = { ...options.headers };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    let payload: FormData | string | undefined;
    if (options.body instanceof FormData) payload = options.body;
    else if (options.body !== undefined) {
      headers["content-type"] = "application/json";
      payload = JSON.stringify(options.body);
    }
    const response = await fetch(`${member(index).baseUrl}${path}`, {
      method,
      headers,
      body: payload,
      signal: AbortSignal.timeout(options.timeoutMs ?? 30_000),
    });
    const text = await response.text();
    let body: Json = {};
    try {
      body = text ? JSON.parse(text) : {};
    } catch {
      body = { unparsed: text };
    }
    return { status: response.status, headers: response.headers, text, body, via: index };
  };

  /**
   * A request as a load balancer passes it on: to the next live process in turn, and once more
   * to another if the connection was refused (nothing reached the first). Any other failure is
   * the caller's to judge: the request may or may not have been executed.
   */
  const request = async (
    method: string,
    path: string,
    options: RequestOptions = {},
  ): Promise<Reply> => {
    if (options.via !== undefined) return send(options.via, method, path, options);
    const first = nextLive();
    if (first === undefined) throw new Error("no live process");
    try {
      return await send(first, method, path, options);
    } catch (error) {
      const second = connectionRefused(error) ? nextLive(first) : undefined;
      if (second === undefined) throw error;
      return send(second, method, path, options);
    }
  };

  const signal = (index: number, name: "SIGKILL" | "SIGTERM" | "SIGSTOP" | "SIGCONT") =>
    member(index).server.process.kill(name);

  const cluster = {
    database,
    /** A client on the cluster's database, for checks. */
    sql,
    members,
    member,
    live,
    /** Indexes of every process, whatever its state. */
    all: () => members.map((m) => m.index),
    request,
    /** A WebSocket URL on process `index`. */
    socketUrl: (index: number, path: string, token: string) =>
      `${member(index).baseUrl.replace("http", "ws")}${path}?token=${encodeURIComponent(token)}`,
    /** Opens a socket on process `index` (see sockets.ts `openSocket`). */
    openSocket: (index: number, path: string, token: string) =>
      openSocket(cluster.socketUrl(index, path, token)),
    /** Kills process `index` at once; the load balancer stops sending to it. */
    async kill(index: number, name: "SIGKILL" | "SIGTERM" = "SIGKILL") {
      const target = member(index);
      target.state = name === "SIGKILL" ? "killed" : "stopped";
      if (target.server.process.exitCode === null) signal(index, "SIGCONT");
      signal(index, name);
      await target.server.process.exited;
    },
    /**
     * Asks process `index` to drain and waits until it has exited: its exit code, or "hung"
     * when it was still running after 30 s and was killed.
     */
    async stop(index: number): Promise<number | "hung"> {
      const target = member(index);
      target.state = "stopped";
      signal(index, "SIGTERM");
      const exited = await Promise.race([
        target.server.process.exited,
        Bun.sleep(30_000).then(() => "hung" as const),
      ]);
      if (exited === "hung") {
        signal(index, "SIGKILL");
        await target.server.process.exited;
      }
      return exited;
    },
    /** Starts process `index` again (same environment and database; a new port). */
    async restart(index: number) {
      const target = member(index);
      if (target.state === "live" || target.state === "paused") {
        throw new Error(`process ${index} is still running`);
      }
      const started = await launch(index);
      Object.assign(target, started);
      target.incarnations.push(started.server);
    },
    /** Freezes process `index` (SIGSTOP): it keeps its sockets but answers nothing. */
    pause(index: number) {
      member(index).state = "paused";
      signal(index, "SIGSTOP");
    },
    resume(index: number) {
      member(index).state = "live";
      signal(index, "SIGCONT");
    },
    /** Everything process `index` printed, over all its incarnations. */
    output: (index: number) =>
      member(index)
        .incarnations.map((server) => server.output())
        .join(""),
    /** The JSON log lines of process `index` (every incarnation) whose message matches. */
    logLines(index: number, pattern?: RegExp): LogLine[] {
      const lines: LogLine[] = [];
      for (const text of cluster.output(index).split("\n")) {
        if (!text.startsWith("{")) continue;
        try {
          const line = JSON.parse(text) as LogLine;
          if (!pattern || pattern.test(line.message)) lines.push(line);
        } catch {
          // A line cut by a kill.
        }
      }
      return lines;
    },
    /** The log lines about campaign leases (taken, renewed, lost, released) of process `index`. */
    leaseLog: (index: number) => cluster.logLines(index, /campaign lease/i),
    /** The lease row of a campaign, or undefined when there is none (or no lease table). */
    async lease(campaignId: string) {
      try {
        const rows = await sql<
          { owner: string; owner_url: string; token: string; expires_at: Date }[]
        >`select owner, owner_url, token::text as token, expires_at
          from campaign_leases where campaign_id = ${campaignId}`;
        const row = rows[0];
        return row ? { ...row, token: BigInt(row.token) } : undefined;
      } catch {
        return undefined;
      }
    },
    /** Which live process owns a campaign by its lease row, matched by port; undefined if none. */
    async ownerOf(campaignId: string): Promise<number | undefined> {
      const lease = await cluster.lease(campaignId);
      if (!lease) return undefined;
      const port = portOf(lease.owner_url);
      return members.find((m) => m.baseUrl === lease.owner_url || m.port === port)?.index;
    },
    /** Kills every process still running and drops the database. */
    async close() {
      for (const m of members) {
        if (m.server.process.exitCode !== null) continue;
        m.server.process.kill("SIGCONT");
        m.server.process.kill("SIGKILL");
        await m.server.process.exited;
      }
      await sql.end({ timeout: 5 });
      await database.drop();
    },
  };
  return cluster;
}

export type { Json, Message };
