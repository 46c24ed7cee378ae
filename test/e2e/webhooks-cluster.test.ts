import { afterAll, describe, expect, test } from "bun:test";
import { type Cluster, startCluster } from "../helpers/cluster.ts";
import { createWorkspace, must } from "../helpers/cluster-sim.ts";

/**
 * Webhooks with two processes on PostgreSQL: an event committed by a process killed before
 * any delivery succeeded still reaches the receiver, under its id, delivered by the other;
 * and every event goes out once, whichever process leases it.
 */
const url = process.env.DATABASE_URL;

const clusters: Cluster[] = [];
const receivers: { stop(force?: boolean): void }[] = [];
afterAll(async () => {
  for (const receiver of receivers) receiver.stop(true);
  for (const cluster of clusters) await cluster.close();
});

describe.skipIf(!url)("webhooks on several processes", () => {
  test("kill -9 of the process between the commit and the delivery loses nothing; each event is delivered once", async () => {
    // Down at first: requests are held unanswered, as a receiver in trouble would.
    let healthy = false;
    const received: { id: string; phone: string; answered: boolean }[] = [];
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      idleTimeout: 0,
      async fetch(request) {
        const event = (await request.json()) as { data: { phone: string } };
        const entry = {
          id: request.headers.get("webhook-id") ?? "",
          phone: event.data.phone,
          answered: healthy,
        };
        received.push(entry);
        if (healthy) return new Response("ok");
        return new Promise<Response>(() => {});
      },
    });
    receivers.push(server);

    const c = await startCluster({
      size: 2,
      databasePrefix: "dialer_webhooks",
      env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true" },
    });
    clusters.push(c);
    const workspace = await createWorkspace(c, { domain: "hooks.test", agents: 0 });
    const admin = workspace.admin.token;
    await must(c, "POST", "/api/v1/webhooks", {
      token: admin,
      via: 0,
      body: { url: `http://127.0.0.1:${server.port}/hooks`, event_types: ["dnc.added"] },
    });
    await must(c, "POST", "/api/v1/dnc", {
      token: admin,
      via: 0,
      body: { phone: "+14155550901" },
    });
    // Committed on process 0, which dies before any attempt can have succeeded.
    await c.kill(0);
    healthy = true;

    // More events through the survivor, while the first is taken over.
    for (const phone of ["+14155550902", "+14155550903"])
      await must(c, "POST", "/api/v1/dnc", { token: admin, via: 1, body: { phone } });

    const delivered = () => new Set(received.filter((r) => r.answered).map((r) => r.phone));
    const deadline = Date.now() + 60_000;
    while (delivered().size < 3 && Date.now() < deadline) await Bun.sleep(100);
    expect([...delivered()].sort()).toEqual(["+14155550901", "+14155550902", "+14155550903"]);

    // The first event kept its id through the takeover; the others went out once each.
    const first = received.filter((r) => r.phone === "+14155550901");
    expect(new Set(first.map((r) => r.id)).size).toBe(1);
    for (const phone of ["+14155550902", "+14155550903"])
      expect(received.filter((r) => r.phone === phone && r.answered).length).toBe(1);
  }, 120_000);
});
