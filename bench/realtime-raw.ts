/**
 * The reference of bench/realtime.ts: Bun's own WebSocket pub/sub with nothing around it, in
 * its own process, with the app's socket limits.
 *
 *   PORT=<port> bun bench/realtime-raw.ts
 *
 * Every socket of `/ws` subscribes to one topic and gets a small snapshot when it opens.
 * `POST /publish` with `{campaign_id, status, from}` publishes a `campaign.status` message
 * built like the app's (same fields, same size) to all of them, and answers once published,
 * as the app answers a status change after its push.
 */
import { SOCKET_LIMITS } from "../src/realtime/routes.ts";

const TOPIC = "campaigns";

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: Number(process.env.PORT ?? 0),
  async fetch(request, server) {
    const url = new URL(request.url);
    if (url.pathname === "/ws") {
      return server.upgrade(request) ? undefined : new Response("upgrade failed", { status: 400 });
    }
    if (url.pathname === "/publish" && request.method === "POST") {
      const { campaign_id, status, from } = (await request.json()) as Record<string, string>;
      server.publish(TOPIC, JSON.stringify({ type: "campaign.status", campaign_id, status, from }));
      return Response.json({ status: "success", data: { campaign: { id: campaign_id, status } } });
    }
    return new Response("not found", { status: 404 });
  },
  websocket: {
    ...SOCKET_LIMITS,
    open(ws) {
      ws.subscribe(TOPIC);
      ws.send(JSON.stringify({ type: "snapshot", campaigns: [], agents: [] }));
    },
    message() {},
  },
});
console.log(`listening on http://127.0.0.1:${server.port}`);
process.on("SIGTERM", () => {
  server.stop(true);
  process.exit(0);
});
