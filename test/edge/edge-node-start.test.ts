import { afterEach, describe, expect, test } from "bun:test";
import type { Subprocess } from "bun";
import { dialerOnLoopback, until } from "../helpers/edge.ts";

/**
 * `edge/index.ts` started before its service can be reached: it waits for the service, stops
 * cleanly while it waits, and gives up only when the service refuses its key.
 */

const ROOT = new URL("../..", import.meta.url).pathname;
const KEY = "svc_node_abcdefghijklmnopqrstuvwxyz";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A loopback port nothing listens on (for now). */
function freePort(): number {
  const probe = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const { port } = probe;
  probe.stop(true);
  return port as number;
}

function startNode(apiUrl: string, nodeKey = KEY) {
  const child = Bun.spawn([process.execPath, "edge/index.ts", "--dry-run"], {
    cwd: ROOT,
    env: {
      ...process.env,
      EDGE_API_URL: apiUrl,
      EDGE_NODE_KEY: nodeKey,
      // A stop waits for the claim in flight: a short one keeps the test short.
      EDGE_CLAIM_WAIT_SECONDS: "1",
    },
    stdout: "pipe",
    stderr: "pipe",
  });
  cleanups.push(() => {
    if (child.exitCode === null) child.kill(9);
  });
  const out = { stdout: "", stderr: "" };
  const collect = async (stream: ReadableStream<Uint8Array>, into: "stdout" | "stderr") => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) out[into] += decoder.decode(chunk);
  };
  void collect(child.stdout, "stdout");
  void collect(child.stderr, "stderr");
  return { child: child as Subprocess, out };
}

const count = (text: string, part: string) => text.split(part).length - 1;

describe("edge node, start", () => {
  test("an unreachable service is waited for, with back-off; once it answers the node comes up, and a refused key is final", async () => {
    const service = await dialerOnLoopback({ phones: ["+14155552671"], agentUri: null });
    cleanups.push(() => service.server.stop(true));
    // The service will answer on this port, but not yet.
    const port = freePort();
    const apiUrl = `http://127.0.0.1:${port}`;
    const node = startNode(apiUrl, service.nodeKey);
    const stranger = startNode(apiUrl, KEY);
    await until(
      () => count(node.out.stdout, "is unreachable") >= 2 || undefined,
      "two attempts logged",
      10_000,
    );
    expect(node.out.stdout).toContain(`the service at ${apiUrl} is unreachable: `);
    expect(node.out.stdout).toMatch(/trying again in \d+\.\d s/);
    expect(node.child.exitCode).toBeNull();
    expect(stranger.child.exitCode).toBeNull();

    const proxy = Bun.serve({
      hostname: "127.0.0.1",
      port,
      fetch: (request) => service.w.app.handle(request),
    });
    cleanups.push(() => proxy.stop(true));
    await until(() => node.out.stdout.includes("edge node up") || undefined, "the node up", 15_000);
    // The key the service does not know is refused: that is final.
    expect(await stranger.child.exited).toBe(1);
    expect(stranger.out.stderr).toContain(
      `the service at ${apiUrl} refused the node key (EDGE_NODE_KEY)`,
    );
    node.child.kill("SIGTERM");
    expect(await node.child.exited).toBe(0);
  }, 60_000);

  test("SIGTERM while the service is unreachable: the node exits 0 at once", async () => {
    const { child, out } = startNode(`http://127.0.0.1:${freePort()}`);
    await until(() => out.stdout.includes("is unreachable") || undefined, "an attempt", 10_000);
    const signalled = performance.now();
    child.kill("SIGTERM");
    expect(await child.exited).toBe(0);
    expect(performance.now() - signalled).toBeLessThan(2_000);
    expect(out.stdout).toContain("SIGTERM before the service answered; exiting");
  }, 30_000);
});
