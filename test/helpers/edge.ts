import { systemClock } from "../../actors/ports.ts";
import { EdgeNode } from "../../edge/node.ts";
import { RtpPorts } from "../../edge/rtp-ports.ts";
import { ServiceClient } from "../../edge/service-client.ts";
import { SipAdapter } from "../../edge/sip-adapter.ts";
import { SipPlacer } from "../../edge/sip-placer.ts";
import { createWorkspace, type TestResponse } from "./app.ts";
import { importFile } from "./leads.ts";
import { portBlock } from "./ports.ts";
import { awakeZone } from "./zones.ts";

export async function until<T>(
  probe: () => T | undefined | Promise<T | undefined>,
  what: string,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(50);
  }
}

/**
 * The real service on loopback (in-process, on the real clock), a workspace with a running
 * campaign over `phones`, an agent who is ready, and a node key.
 */
export async function dialerOnLoopback(o: {
  phones: string[];
  agentUri: string | null;
  dialRatio?: number;
  maxCalls?: number;
  dialMode?: "preview" | "progressive";
}) {
  const w = await createWorkspace({ clock: systemClock });
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (request) => w.app.handle(request),
  });
  const baseUrl = `http://127.0.0.1:${server.port}`;
  const adminToken = await w.login("admin@acme.test");
  const agent = await w.user(w.acme.id, "agent@acme.test", "agent");
  if (o.agentUri !== null) {
    await w.request("PATCH", `/api/v1/users/${agent.id}`, {
      token: adminToken,
      body: { phone_uri: o.agentUri },
    });
  }
  const agentToken = await w.login("agent@acme.test");
  const campaign = (
    await w.request("POST", "/api/v1/campaigns", {
      token: adminToken,
      body: {
        name: "Edge",
        // Open all day under no profile's hours, whatever the hour the test runs.
        regulatory_profile: "none",
        calling_window: { start: "00:00", end: "23:59" },
        dial_ratio: o.dialRatio ?? 1,
        dial_mode: o.dialMode ?? "progressive",
      },
    })
  ).body.data.campaign;
  const list = (
    await w.request("POST", `/api/v1/campaigns/${campaign.id}/lead-lists`, {
      token: adminToken,
      body: { name: "L", caller_id: "+14155550100" },
    })
  ).body.data.lead_list;
  const csv = `phone,timezone\n${o.phones.map((p) => `${p},${awakeZone()}`).join("\n")}\n`;
  const imported = await importFile(
    w,
    `/api/v1/campaigns/${campaign.id}/lead-lists/${list.id}/import`,
    adminToken,
    csv,
  );
  if (imported.body.data.import.imported !== o.phones.length)
    throw new Error(`import: ${JSON.stringify(imported.body)}`);
  const nodeKey = (
    await w.request("POST", "/api/v1/edge-nodes", {
      token: adminToken,
      body: { name: "edge", max_concurrent_calls: o.maxCalls ?? 10 },
    })
  ).body.data.key as string;
  await w.request("POST", "/api/v1/agents/me/state", {
    token: agentToken,
    body: { state: "ready", campaign_id: campaign.id },
  });
  const start = () =>
    w.request("POST", `/api/v1/campaigns/${campaign.id}/status`, {
      token: adminToken,
      body: { action: "start" },
    });
  const cdrs = async (): Promise<TestResponse["body"][]> =>
    (await w.request("GET", "/api/v1/cdrs?limit=500", { token: adminToken })).body.data.items;
  const inFlight = async () =>
    (await w.request("GET", `/api/v1/campaigns/${campaign.id}`, { token: adminToken })).body.data
      .campaign.stats.calls_in_flight as number;
  return {
    w,
    server,
    baseUrl,
    nodeKey,
    adminToken,
    agentToken,
    agentId: agent.id,
    campaignId: campaign.id,
    start,
    cdrs,
    inFlight,
  };
}

/** The node of `edge/index.ts`, in-process, with SIP on `port` and a trunk on loopback. */
export async function startSipNode(o: {
  baseUrl: string;
  nodeKey: string;
  port: number;
  trunkPort: number;
  trunkTransport?: "udp" | "tcp";
  maxRingSeconds?: number;
  credentials?: { user: string; password: string } | null;
  log?: (line: string) => void;
}) {
  const log = o.log ?? (() => {});
  const adapter = new SipAdapter({
    address: "127.0.0.1",
    port: o.port,
    trunk: { host: "127.0.0.1", port: o.trunkPort, transport: o.trunkTransport ?? "udp" },
    credentials: o.credentials ?? null,
    log,
  });
  adapter.start();
  const [rtpFirst, rtpLast] = portBlock(400);
  const node = new EdgeNode({
    client: new ServiceClient(o.baseUrl, o.nodeKey, {
      firstMs: 50,
      maxMs: 500,
      giveUpAfterMs: 5_000,
    }),
    placer: new SipPlacer(adapter, new RtpPorts("127.0.0.1", rtpFirst, rtpLast)),
    maxRingSeconds: o.maxRingSeconds ?? 3,
    heartbeatMs: 10_000,
    claimWaitMs: 500,
    log,
  });
  await node.start();
  return {
    node,
    adapter,
    async stop(drainMs = 5_000) {
      await node.stop(drainMs);
      adapter.stop();
    },
  };
}
