import { chownSync, existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const PG_BIN = process.env.PG_BIN ?? "/usr/lib/postgresql/15/bin";

export interface Cluster {
  url: string;
  port: number;
  /** The cluster's own temporary directory: data, log and socket. */
  root: string;
  dataDir: string;
  logFile: string;
}

/**
 * PostgreSQL refuses to run as root, so as root its commands run as the `postgres` user;
 * as anyone else they run as that user.
 */
function asPostgresUser(cmd: string[]): string[] {
  return process.getuid?.() === 0 ? ["runuser", "-u", "postgres", "--", ...cmd] : cmd;
}

function run(cmd: string[], what: string): void {
  const result = Bun.spawnSync({ cmd: asPostgresUser(cmd), stdout: "pipe", stderr: "pipe" });
  if (result.exitCode !== 0) {
    throw new Error(`${what} failed (${result.exitCode}): ${result.stderr.toString()}`);
  }
}

export function postgresInstalled(): boolean {
  return existsSync(join(PG_BIN, "initdb")) && existsSync(join(PG_BIN, "pg_ctl"));
}

/**
 * A throwaway cluster in a new temporary directory: stock settings except that it listens on
 * 127.0.0.1:`port` only and keeps its socket in that directory, so it never meets a system
 * cluster. The directory is its own (not inside another private one) so that the `postgres`
 * user can reach it.
 */
export function startCluster(port: number): Cluster {
  const root = mkdtempSync(join(tmpdir(), "bench-pg-"));
  const dataDir = join(root, "data");
  const logFile = join(root, "postgres.log");
  if (process.getuid?.() === 0) {
    const owner = Bun.spawnSync({ cmd: ["id", "-u", "postgres"] });
    const group = Bun.spawnSync({ cmd: ["id", "-g", "postgres"] });
    chownSync(root, Number(owner.stdout.toString()), Number(group.stdout.toString()));
  }
  run(
    [
      join(PG_BIN, "initdb"),
      "-D",
      dataDir,
      "-U",
      "postgres",
      "-A",
      "trust",
      "-E",
      "UTF8",
      "--no-sync",
    ],
    "initdb",
  );
  const cluster = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    root,
    dataDir,
    logFile,
  };
  startAgain(cluster);
  return cluster;
}

/** Starts a cluster's server (again, after a stop), waiting until it accepts connections. */
export function startAgain(cluster: Cluster): void {
  const serverOptions = `-c listen_addresses=127.0.0.1 -p ${cluster.port} -k ${cluster.root}`;
  run(
    [
      join(PG_BIN, "pg_ctl"),
      "-D",
      cluster.dataDir,
      "-l",
      cluster.logFile,
      "-o",
      serverOptions,
      "-w",
      "start",
    ],
    "pg_ctl start",
  );
}

/** Stops the server as a crash would (`-m immediate`): connections are cut, nothing is flushed. */
export function crash(cluster: Cluster): void {
  run(
    [join(PG_BIN, "pg_ctl"), "-D", cluster.dataDir, "-m", "immediate", "-w", "stop"],
    "pg_ctl stop -m immediate",
  );
}

/** Fast shutdown; synchronous so that it also works from the exit trap. */
export function stopCluster(cluster: Cluster): void {
  Bun.spawnSync({
    cmd: asPostgresUser([
      join(PG_BIN, "pg_ctl"),
      "-D",
      cluster.dataDir,
      "-m",
      "fast",
      "-w",
      "stop",
    ]),
    stdout: "ignore",
    stderr: "ignore",
  });
}
