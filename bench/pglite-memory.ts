/**
 * Idle resident memory of a process holding one migrated PGlite database, per PGlite option.
 *
 *   bun bench/pglite-memory.ts
 *
 * Each variant runs in a fresh `bun` process, which opens PGlite, applies the app's
 * migrations and then reports VmRSS three times: right after that (what an idle server shows
 * when no garbage collection has run yet), after 5 s left alone, and after two forced full
 * collections (the floor the process can reach). "fresh" variants start from an empty
 * directory, so PGlite runs initdb in the process; "restart" variants reopen a directory a
 * previous process created, as a server restart does.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PGlite, type PGliteOptions } from "@electric-sql/pglite";
import { drizzle } from "drizzle-orm/pglite";
import { migrate } from "drizzle-orm/pglite/migrator";
import { rssMiB } from "./lib/proc.ts";

interface Variant {
  name: string;
  /** "memory" is memory://; "fresh" an empty directory; "restart" one made by an earlier run. */
  storage: "memory" | "fresh" | "restart";
  options?: PGliteOptions;
  /** Extra `bun` flags for the child process. */
  bunFlags?: string[];
}

const MiB = 1024 * 1024;
const CHILD_TIMEOUT_MS = 60_000;
// startParams replaces PGlite's defaults, so every variant keeps them and appends its own.
const withSettings = (...settings: string[]): PGliteOptions => ({
  startParams: [...PGlite.defaultStartParams, ...settings.flatMap((setting) => ["-c", setting])],
});

const VARIANTS: Variant[] = [
  { name: "defaults, memory://", storage: "memory" },
  { name: "defaults, fresh directory", storage: "fresh" },
  { name: "defaults, restart", storage: "restart" },
  { name: "initialMemory 64 MiB", storage: "restart", options: { initialMemory: 64 * MiB } },
  { name: "initialMemory 256 MiB", storage: "restart", options: { initialMemory: 256 * MiB } },
  {
    name: "shared_buffers=16MB, memory://",
    storage: "memory",
    options: withSettings("shared_buffers=16MB"),
  },
  {
    name: "shared_buffers=16MB, fresh",
    storage: "fresh",
    options: withSettings("shared_buffers=16MB"),
  },
  {
    name: "shared_buffers=16MB, restart",
    storage: "restart",
    options: withSettings("shared_buffers=16MB"),
  },
  {
    name: "shared_buffers=16MB via postgresqlconf, restart",
    storage: "restart",
    options: { postgresqlconf: ["shared_buffers=16MB"] },
  },
  {
    name: "shared_buffers=16MB, work_mem=1MB, maintenance_work_mem=8MB, temp_buffers=1MB, restart",
    storage: "restart",
    options: withSettings(
      "shared_buffers=16MB",
      "work_mem=1MB",
      "maintenance_work_mem=8MB",
      "temp_buffers=1MB",
    ),
  },
  { name: "defaults, bun --smol, fresh", storage: "fresh", bunFlags: ["--smol"] },
  { name: "defaults, bun --smol, restart", storage: "restart", bunFlags: ["--smol"] },
  {
    name: "shared_buffers=16MB, bun --smol, restart",
    storage: "restart",
    options: withSettings("shared_buffers=16MB"),
    bunFlags: ["--smol"],
  },
];

interface Reading {
  afterBootMiB: number;
  after5sMiB: number;
  afterGcMiB: number;
  sharedBuffers: string;
}

/** Child side: open, migrate, read memory; prints one JSON line. */
async function child(dataDir: string, options: PGliteOptions): Promise<void> {
  const client = await PGlite.create(dataDir, options);
  await migrate(drizzle({ client }), {
    migrationsFolder: join(import.meta.dir, "../db/migrations"),
  });
  const afterBootMiB = rssMiB(process.pid) ?? Number.NaN;
  await Bun.sleep(5000);
  const after5sMiB = rssMiB(process.pid) ?? Number.NaN;
  // Two passes: the first frees objects whose finalizers release the next batch.
  for (let pass = 0; pass < 2; pass++) {
    Bun.gc(true);
    await Bun.sleep(300);
  }
  const afterGcMiB = rssMiB(process.pid) ?? Number.NaN;
  const setting = await client.query<{ shared_buffers: string }>("show shared_buffers");
  const reading: Reading = {
    afterBootMiB,
    after5sMiB,
    afterGcMiB,
    sharedBuffers: setting.rows[0]?.shared_buffers ?? "?",
  };
  console.log(JSON.stringify(reading));
  await client.close();
}

function spawnChild(dataDir: string, variant: Variant): Reading | string {
  const result = Bun.spawnSync({
    cmd: [
      process.execPath,
      ...(variant.bunFlags ?? []),
      import.meta.path,
      "--child",
      dataDir,
      JSON.stringify(variant.options ?? {}),
    ],
    stdout: "pipe",
    stderr: "pipe",
    // A failed PGlite start can leave the process waiting forever instead of exiting.
    timeout: CHILD_TIMEOUT_MS,
    killSignal: "SIGKILL",
  });
  const line = result.stdout.toString().trim().split("\n").pop() ?? "";
  if (result.exitCode === 0 && line.startsWith("{")) return JSON.parse(line) as Reading;
  const error = result.stderr
    .toString()
    .split("\n")
    .find((text) => /Error/.test(text));
  const how = result.exitedDueToTimeout
    ? `no answer within ${CHILD_TIMEOUT_MS / 1000} s`
    : `exit ${result.exitCode}`;
  return error ? `${how}; ${error.trim()}` : how;
}

function measure(variant: Variant, temp: string, index: number): Reading | string {
  if (variant.storage === "memory") return spawnChild("memory://", variant);
  const dataDir = join(temp, `data-${index}`);
  // A restart reopens what a first boot with default options left behind.
  if (variant.storage === "restart") spawnChild(dataDir, { name: "setup", storage: "fresh" });
  return spawnChild(dataDir, variant);
}

function main(): void {
  const temp = mkdtempSync(join(tmpdir(), "pglite-memory-"));
  process.on("exit", () => rmSync(temp, { recursive: true, force: true }));
  process.on("SIGINT", () => process.exit(130));
  process.on("SIGTERM", () => process.exit(143));
  console.log(
    "| variant | RSS after boot+migrations MiB | after 5 s idle | after forced GC | shared_buffers |",
  );
  console.log("|---|---:|---:|---:|---|");
  VARIANTS.forEach((variant, index) => {
    const reading = measure(variant, temp, index);
    const cells =
      typeof reading === "string"
        ? `fails: ${reading} | | | |`
        : `${Math.round(reading.afterBootMiB)} | ${Math.round(reading.after5sMiB)} | ${Math.round(reading.afterGcMiB)} | ${reading.sharedBuffers} |`;
    console.log(`| ${variant.name} | ${cells}`);
  });
}

if (process.argv[2] === "--child") {
  // biome-ignore lint/suspicious/noExplicitAny: options arrive as JSON from the parent.
  const options = JSON.parse(process.argv[4] ?? "{}") as any;
  await child(process.argv[3] ?? "memory://", options).then(
    () => process.exit(0),
    (error) => {
      console.error(String(error));
      process.exit(1);
    },
  );
} else {
  main();
}
