import { afterEach, expect, test } from "bun:test";
import { agentsTopic } from "../../src/realtime/hub.ts";
import { SOCKET_LIMITS } from "../../src/realtime/routes.ts";
import { createWorkspace } from "../helpers/app.ts";
import { listenOnLoopback, openSocket, openStalledSocket } from "../helpers/sockets.ts";

let stop: (() => Promise<void>) | undefined;
afterEach(async () => {
  await stop?.();
  stop = undefined;
});

const IDS_PER_SUBSCRIBE = 500;

test("a supervisor that stops reading is closed at its backpressure limit; another keeps every message", async () => {
  const w = await createWorkspace();
  const token = await w.login("admin@acme.test");
  const listening = listenOnLoopback(w);
  stop = listening.stop;
  const { server, baseUrl } = listening;
  const campaignIds: string[] = [];
  for (const name of ["North", "South", "East"]) {
    const created = await w.request("POST", "/api/v1/campaigns", { token, body: { name } });
    campaignIds.push(created.body.data.campaign.id);
  }

  const reader = await openSocket(listening.wsUrl("/ws/supervisor", token));
  await reader.next("snapshot");
  const stalled = await openStalledSocket(baseUrl, "/ws/supervisor", token);
  const listeners = () => server.subscriberCount(agentsTopic(w.acme.id));
  expect(listeners()).toBe(2);

  // Loopback TCP buffers hold a few MiB before Bun's own send buffer fills, far more than
  // status messages of ~150 bytes reach quickly. The stalled client gets there by asking for
  // large answers: a `subscribe` of 500 ids is answered with those ids (~19 KiB). Its ids
  // include the tenant's campaigns, so the status pushes below go to it as well.
  const subscribe = JSON.stringify({
    type: "subscribe",
    campaign_ids: [
      ...campaignIds,
      ...Array.from({ length: IDS_PER_SUBSCRIBE - campaignIds.length }, () => crypto.randomUUID()),
    ],
  });
  // Answers enough to fill the kernel's buffers (about 4 MiB on this loopback) and then the
  // backpressure limit, with room to spare.
  const flood = Math.ceil(
    (6 * 1024 * 1024 + 3 * SOCKET_LIMITS.backpressureLimit) / subscribe.length,
  );
  for (let i = 0; i < flood; i++) stalled.send(subscribe);

  const statuses = new Map(campaignIds.map((id) => [id, "draft"]));
  const expected: { campaign_id: string; status: string }[] = [];
  const changeStatuses = async (count: number) => {
    for (let i = 0; i < count; i++) {
      const id = campaignIds[expected.length % campaignIds.length] as string;
      const action = statuses.get(id) === "running" ? "pause" : "start";
      const response = await fetch(`${baseUrl}/api/v1/campaigns/${id}/status`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
        body: JSON.stringify({ action }),
      });
      expect(response.status).toBe(200);
      const status = action === "start" ? "running" : "paused";
      statuses.set(id, status);
      expected.push({ campaign_id: id, status });
    }
  };

  await changeStatuses(30);
  // The server answers the flood one subscribe at a time, each with a query: on PostgreSQL on
  // a slow machine the answers take tens of seconds to reach the limit.
  const deadline = Date.now() + 45_000;
  while (listeners() > 1 && Date.now() < deadline) await Bun.sleep(20);
  // The server let go of the stalled socket: its subscriptions are gone and its TCP
  // connection ends.
  expect(listeners()).toBe(1);
  expect(await stalled.closed(5000)).toBe(true);
  await changeStatuses(30);

  const received = () =>
    reader.messages
      .filter((message) => message.type === "campaign.status")
      .map(({ campaign_id, status }) => ({ campaign_id, status }));
  const until = Date.now() + 5000;
  while (received().length < expected.length && Date.now() < until) await Bun.sleep(20);
  expect(received()).toEqual(expected);
  expect(reader.socket.readyState).toBe(WebSocket.OPEN);
  reader.socket.close();
}, 90_000);
