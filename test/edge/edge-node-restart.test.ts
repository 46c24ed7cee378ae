import { afterEach, expect, test } from "bun:test";
import { EdgeNode } from "../../edge/node.ts";
import { RtpPorts } from "../../edge/rtp-ports.ts";
import { ServiceClient } from "../../edge/service-client.ts";
import { SipAdapter } from "../../edge/sip-adapter.ts";
import { SipPlacer } from "../../edge/sip-placer.ts";
import { until } from "../helpers/edge.ts";
import { portBlock, sipPort } from "../helpers/ports.ts";
import { SipPhone } from "../helpers/sip-phone.ts";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const CALL = "01a21300-0000-7000-8000-00000000000a";
const ID = "01a21300-0000-7000-8000-00000000000b";
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

test("a restarted node reports nothing it does not hold: no event for the call it lost, an empty heartbeat", async () => {
  let handOut = true;
  const posts: { path: string; body: unknown }[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const path = new URL(request.url).pathname;
      const body = await request.json();
      posts.push({ path, body });
      if (path.endsWith("/heartbeat"))
        return Response.json({ status: "success", data: { edge_node: edgeNode } });
      if (path.endsWith("/jobs/claim")) {
        const jobs = handOut
          ? [
              {
                call_id: CALL,
                campaign_id: ID,
                lead_id: ID,
                phone: "+14155552671",
                caller_id: "+14155550100",
                timeout_seconds: 30,
                agent_id: null,
              },
            ]
          : [];
        handOut = false;
        return Response.json({ status: "success", data: { jobs } });
      }
      return Response.json({
        status: "success",
        data: { call: { id: CALL, status: "ringing", agent_id: null } },
      });
    },
  });
  cleanups.push(() => server.stop(true));
  const trunk = await SipPhone.start(sipPort());
  trunk.defaultBehaviour = { kind: "ring" };
  cleanups.push(() => trunk.stop());

  const start = async () => {
    const adapter = new SipAdapter({
      address: "127.0.0.1",
      port: sipPort(),
      trunk: { host: "127.0.0.1", port: trunk.port, transport: "udp" },
      credentials: null,
      log: () => {},
    });
    adapter.start();
    const node = new EdgeNode({
      client: new ServiceClient(`http://127.0.0.1:${server.port}`, "svc_node_test"),
      placer: new SipPlacer(adapter, new RtpPorts("127.0.0.1", ...portBlock(200))),
      maxRingSeconds: 30,
      heartbeatMs: 200,
      claimWaitMs: 100,
      log: () => {},
    });
    await node.start();
    return { node, adapter };
  };

  // The first node is the command itself, killed mid-call: nothing reported, nothing kept.
  const first = Bun.spawn([process.execPath, "edge/index.ts"], {
    cwd: new URL("../..", import.meta.url).pathname,
    env: {
      ...process.env,
      EDGE_API_URL: `http://127.0.0.1:${server.port}`,
      EDGE_NODE_KEY: "svc_node_abcdefghijklmnopqrstuvwxyz",
      EDGE_SIP_TRUNK: `sip:127.0.0.1:${trunk.port}`,
      EDGE_SIP_PORT: String(sipPort()),
      EDGE_RTP_PORTS: "24400-24600",
    },
    stdout: "ignore",
    stderr: "ignore",
  });
  cleanups.push(() => {
    if (first.exitCode === null) first.kill(9);
  });
  await until(
    () => posts.find((p) => p.path.endsWith(`/calls/${CALL}/events`)),
    "the ringing report",
  );
  first.kill(9);
  await first.exited;
  const seen = posts.length;

  const second = await start();
  cleanups.push(async () => {
    await second.node.stop(0);
    second.adapter.stop();
  });
  await Bun.sleep(700);
  const after = posts.slice(seen);
  expect(after.some((p) => p.path.includes("/calls/"))).toBe(false);
  const beats = after.filter((p) => p.path.endsWith("/heartbeat")).map((p) => p.body);
  expect(beats.length).toBeGreaterThan(1);
  for (const beat of beats) expect(beat).toEqual({ active_calls: 0, active_call_ids: [] });
}, 30_000);
