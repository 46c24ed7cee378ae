import { afterEach, describe, expect, test } from "bun:test";
import { EdgeNode } from "../../edge/node.ts";
import type { LeadEvents, LeadLeg, Placer } from "../../edge/placer.ts";
import { ServiceClient } from "../../edge/service-client.ts";
import { until } from "../helpers/edge.ts";

/**
 * A stop's drain against a stand-in service whose claims each test scripts, and leads that
 * ring until the node cancels them: how long a stop takes is then the drain limit's doing.
 */

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const ID = "01a21300-0000-7000-8000-00000000000b";
const callId = (n: number) => `01a21300-0000-7000-8000-0000000001${String(n).padStart(2, "0")}`;
const job = (n: number) => ({
  call_id: callId(n),
  campaign_id: ID,
  lead_id: ID,
  phone: `+141555526${String(n).padStart(2, "0")}`,
  caller_id: "+14155550100",
  timeout_seconds: 60,
  agent_id: null,
});
const edgeNode = {
  id: ID,
  tenant_id: ID,
  name: "edge",
  prefix: "svc_node_abcd",
  max_concurrent_calls: 5,
  active_calls: 0,
  online: true,
  last_heartbeat_at: null,
  created_at: "2026-11-25T10:00:00.000Z",
  updated_at: "2026-11-25T10:00:00.000Z",
  revoked_at: null,
};

/** `claims[n]` answers the n-th claim (from 0) with its jobs after its delay; later ones wait out `wait_ms`. */
function standIn(
  claims: { afterMs: number; jobs: ReturnType<typeof job>[] }[],
  /** What each poll for commands answers, in turn; later polls answer none. */
  commandReplies: Record<string, unknown>[][] = [],
) {
  const claimsSeen: number[] = [];
  const acks: string[][] = [];
  const ended: { callId: string; cause: string; at: number }[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 60,
    async fetch(request) {
      const path = new URL(request.url).pathname;
      const body = (await request.json()) as Record<string, unknown>;
      if (path.endsWith("/heartbeat"))
        return Response.json({ status: "success", data: { edge_node: edgeNode } });
      if (path.endsWith("/commands")) {
        acks.push(body.ack as string[]);
        const commands = commandReplies[acks.length - 1];
        if (!commands) await Bun.sleep(Math.min(body.wait_ms as number, 1_000));
        return Response.json({ status: "success", data: { commands: commands ?? [] } });
      }
      if (path.endsWith("/jobs/claim")) {
        const n = claimsSeen.push(performance.now()) - 1;
        const scripted = claims[n] ?? { afterMs: body.wait_ms as number, jobs: [] };
        await Bun.sleep(scripted.afterMs);
        return Response.json({ status: "success", data: { jobs: scripted.jobs } });
      }
      const id = path.split("/").at(-2) as string;
      if (body.type === "ended")
        ended.push({ callId: id, cause: body.hangup_cause as string, at: performance.now() });
      return Response.json({
        status: "success",
        data: { call: { id, status: "ringing", agent_id: null } },
      });
    },
  });
  cleanups.push(() => server.stop(true));
  return { url: `http://127.0.0.1:${server.port}`, claimsSeen, ended, acks };
}

/** Leads that ring until cancelled; the CANCEL's 487 comes back at once. */
const ringing: Placer = {
  async callLead(_job, events: LeadEvents): Promise<LeadLeg> {
    events.trying();
    events.progress();
    return {
      cancel: () => setTimeout(() => events.failed(487, undefined), 10),
      abandon: () => {},
      hangUp: () => {},
      media: null,
    };
  },
  bridge: () => Promise.reject(new Error("no bridge here")),
  numberUri: (phone) => `sip:${phone}@test.invalid`,
  release: () => {},
};

function node(url: string, claimWaitMs: number) {
  const edge = new EdgeNode({
    client: new ServiceClient(url, "svc_node_test"),
    placer: ringing,
    maxRingSeconds: null,
    heartbeatMs: 10_000,
    claimWaitMs,
    log: () => {},
  });
  return edge;
}

describe("edge node, drain", () => {
  test("the drain limit counts from the stop, not from the end of the claim in flight", async () => {
    const service = standIn([{ afterMs: 0, jobs: [job(1)] }]);
    const edge = node(service.url, 4_000);
    await edge.start();
    cleanups.push(() => edge.stop(0));
    await until(() => edge.liveCallIds.length === 1 || undefined, "the first call");
    // The second claim is a long poll that will find nothing for 4 s.
    await until(() => service.claimsSeen.length === 2 || undefined, "the second claim");
    const stopped = performance.now();
    await edge.stop(500);
    const took = performance.now() - stopped;
    expect(took).toBeGreaterThanOrEqual(450);
    expect(took).toBeLessThan(1_500);
    // The ringing call was cancelled at the limit and its end reported before the stop returned.
    expect(service.ended).toEqual([
      { callId: callId(1), cause: "NO_ANSWER", at: expect.any(Number) },
    ]);
    expect(service.claimsSeen).toHaveLength(2);
  }, 30_000);

  test("a claim in flight at the stop still places its jobs, within the same drain limit", async () => {
    const service = standIn([
      { afterMs: 0, jobs: [job(1)] },
      { afterMs: 1_000, jobs: [job(2)] },
    ]);
    const edge = node(service.url, 4_000);
    await edge.start();
    cleanups.push(() => edge.stop(0));
    await until(() => service.claimsSeen.length === 2 || undefined, "the second claim");
    const stopped = performance.now();
    await edge.stop(1_500);
    const took = performance.now() - stopped;
    expect(took).toBeGreaterThanOrEqual(1_400);
    expect(took).toBeLessThan(2_200);
    expect(service.ended.map((e) => [e.callId, e.cause]).sort()).toEqual([
      [callId(1), "NO_ANSWER"],
      [callId(2), "NO_ANSWER"],
    ]);
    // No claim after the stop.
    expect(service.claimsSeen).toHaveLength(2);
  }, 30_000);
});

describe("edge node, the service's commands", () => {
  test("a dial handed out again (its reply lost) is placed once, and acknowledged", async () => {
    const dial = { id: ID.replace("000b", "0c01"), type: "dial", call_id: callId(7), job: job(7) };
    const service = standIn([], [[dial], [dial]]);
    const placed: string[] = [];
    const counting: Placer = {
      ...ringing,
      callLead: (job, events) => {
        placed.push(job.phone);
        return ringing.callLead(job, events);
      },
    };
    const edge = new EdgeNode({
      client: new ServiceClient(service.url, "svc_node_test"),
      placer: counting,
      maxRingSeconds: null,
      heartbeatMs: 10_000,
      claimWaitMs: 1_000,
      commandWaitMs: 1_000,
      log: () => {},
    });
    await edge.start();
    cleanups.push(() => edge.stop(0));
    await until(() => service.acks.length >= 3 || undefined, "the third poll");
    expect(placed).toEqual([job(7).phone]);
    // Each poll acknowledges what the one before it brought.
    expect(service.acks.slice(0, 3)).toEqual([[], [dial.id], [dial.id]]);
    expect(edge.liveCallIds).toEqual([callId(7)]);
  }, 30_000);
});
