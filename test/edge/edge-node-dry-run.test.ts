import { afterEach, describe, expect, test } from "bun:test";
import { DryRunPlacer } from "../../edge/dry-run-placer.ts";
import { EdgeNode } from "../../edge/node.ts";
import { ServiceClient } from "../../edge/service-client.ts";
import { DEFAULT_MODEL } from "../../src/simulator/outcome-model.ts";
import { dialerOnLoopback, until } from "../helpers/edge.ts";
import { alive, commandLine, descendants } from "../helpers/processes.ts";

const ROOT = new URL("../..", import.meta.url).pathname;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe("edge node, dry run", () => {
  test("plays the simulator's model against the service: busy and failed lines", async () => {
    const phones = ["+14155552671", "+14155552672", "+14155552673", "+14155552674"];
    const service = await dialerOnLoopback({ phones, agentUri: null, dialRatio: 5 });
    cleanups.push(() => service.server.stop(true));
    const node = new EdgeNode({
      client: new ServiceClient(service.baseUrl, service.nodeKey),
      placer: new DryRunPlacer(
        {
          ...DEFAULT_MODEL,
          answerRate: 0,
          machineRate: 0,
          busyRate: 0.5,
          failedRate: 0.5,
          ring: { mean: 2_000, cv: 0.1 },
        },
        7,
      ),
      maxRingSeconds: null,
      heartbeatMs: 10_000,
      claimWaitMs: 500,
      log: () => {},
    });
    await node.start();
    cleanups.push(() => node.stop(1_000));
    await service.start();
    const rows = await until(async () => {
      const all = await service.cdrs();
      return all.length === 4 ? all : undefined;
    }, "four CDRs");
    for (const row of rows) {
      expect([
        ["busy", "USER_BUSY"],
        ["failed", "NORMAL_TEMPORARY_FAILURE"],
      ]).toContainEqual([row.outcome, row.hangup_cause]);
    }
    await until(() => node.liveCallIds.length === 0 || undefined, "no call left on the node");
  }, 60_000);

  test("npm run edge-node -- --dry-run: starts, and on SIGTERM to npm the node reports, exits 0 and is gone", async () => {
    const service = await dialerOnLoopback({ phones: ["+14155552671"], agentUri: null });
    cleanups.push(() => service.server.stop(true));
    // npm as an operator or a supervisor runs it, not this test's own bun.
    const npm = Bun.spawn(["npm", "run", "--silent", "edge-node", "--", "--dry-run"], {
      cwd: ROOT,
      env: {
        ...process.env,
        EDGE_API_URL: service.baseUrl,
        EDGE_NODE_KEY: service.nodeKey,
        // A stop waits for the claim in flight: a short one keeps the test short.
        EDGE_CLAIM_WAIT_SECONDS: "1",
      },
      stdout: "pipe",
      stderr: "pipe",
    });
    let started: number[] = [];
    cleanups.push(() => {
      for (const pid of [npm.pid, ...started]) if (alive(pid)) process.kill(pid, "SIGKILL");
    });
    let printed = "";
    const reader = npm.stdout.getReader();
    void (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        printed += new TextDecoder().decode(value);
      }
    })();
    await until(() => printed.includes("edge node up") || undefined, "the node to start");
    expect(printed).toContain("dry run (no SIP), up to 10 calls");
    started = descendants(npm.pid);
    const node = started.find((pid) => commandLine(pid).includes("edge/index.ts"));
    expect(node).toBeNumber();
    npm.kill("SIGTERM");
    expect(await npm.exited).toBe(0);
    expect(printed).toContain("every call ended and reported");
    await until(() => !alive(node as number) || undefined, "the node to be gone", 5_000);
  }, 60_000);

  test("bad settings: one line each, exit 2", async () => {
    const child = Bun.spawn([process.execPath, "edge/index.ts"], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "", EDGE_API_URL: "nope", EDGE_SIP_PORT: "0" },
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(await child.exited).toBe(2);
    const lines = (await new Response(child.stderr).text()).trim().split("\n");
    expect(lines).toEqual([
      "EDGE_API_URL is not an http(s) URL: nope",
      "EDGE_NODE_KEY is required: the node's svc_node_… key",
      "EDGE_SIP_TRUNK is required (or run with --dry-run)",
      "EDGE_SIP_PORT must be a port 1–65535, not 0",
    ]);
  });
});
