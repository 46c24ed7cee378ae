import { afterEach, describe, expect, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import { reconnectDelay } from "../../sdk/src/backoff.ts";
import {
  ApiError,
  connectSupervisor,
  createClient,
  type GenericWebhookEvent,
  type SocketClose,
  unwrap,
  verifyWebhook,
  type WebhookEventOf,
  WebhookVerificationError,
} from "../../sdk/src/index.ts";
import { createWorkspace } from "../helpers/app.ts";
import { listenOnLoopback } from "../helpers/sockets.ts";

/** The SDK (sdk/) against the real app listening on loopback, and its pure parts alone. */

let stops: Array<() => unknown> = [];
afterEach(async () => {
  for (const stop of stops.reverse()) await stop();
  stops = [];
});

async function listening() {
  const w = await createWorkspace();
  const server = listenOnLoopback(w);
  stops.push(() => server.stop());
  const adminToken = await w.login("admin@acme.test");
  return { w, baseUrl: server.baseUrl, adminToken };
}

/** Resolves once `predicate` holds, polling; the socket's events arrive on their own time. */
async function until(predicate: () => boolean, timeoutMs = 5_000) {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await Bun.sleep(5);
  }
}

describe("client", () => {
  test("unwrap gives a success's data and throws a refusal as ApiError", async () => {
    const { baseUrl, adminToken } = await listening();
    const api = createClient({ baseUrl, token: adminToken });
    const { campaign } = await unwrap(api.POST("/api/v1/campaigns", { body: { name: "Spring" } }));
    expect(campaign.name).toBe("Spring");

    const refused = await unwrap(
      api.POST("/api/v1/campaigns", { body: { name: "Spring", caller_id: "0415" } }),
    ).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ApiError);
    const error = refused as ApiError;
    expect(error.status).toBe(400);
    expect(error.code).toBe("invalid_request");
    expect(error.fieldErrors.map((field) => field.field)).toEqual(["caller_id"]);
    expect(error.requestId).toBeString();

    const anonymous = createClient({ baseUrl });
    const unsigned = await unwrap(anonymous.GET("/api/v1/campaigns")).catch((e: unknown) => e);
    expect(unsigned).toBeInstanceOf(ApiError);
    expect([(unsigned as ApiError).status, (unsigned as ApiError).code]).toEqual([
      401,
      "unauthenticated",
    ]);
  });
});

describe("sockets", () => {
  test("a supervisor's socket comes back with a new token after its role changed, and follows the same campaigns", async () => {
    const { w, baseUrl, adminToken } = await listening();
    const api = createClient({ baseUrl, token: adminToken });
    const lead = await w.user(w.acme.id, "lead@acme.test", "supervisor");
    const { campaign } = await unwrap(api.POST("/api/v1/campaigns", { body: { name: "Spring" } }));
    let signIns = 0;
    const socket = connectSupervisor({
      baseUrl,
      token: () => {
        signIns++;
        return w.login("lead@acme.test");
      },
      reconnect: { initialMs: 10, maxMs: 20 },
    });
    stops.push(() => socket.close());
    const closes: SocketClose[] = [];
    socket.onClose((close) => closes.push(close));
    const followed: Array<string[] | null> = [];
    socket.on("subscribed", (message) => followed.push(message.campaign_ids));

    const snapshot = await socket.once("snapshot");
    expect(snapshot.campaigns.map((c) => c.id)).toEqual([campaign.id]);
    socket.subscribe([campaign.id]);
    await until(() => followed.length === 1);

    const path = { id: lead.id };
    await unwrap(api.PATCH("/api/v1/users/{id}", { params: { path }, body: { role: "admin" } }));
    await until(() => followed.length === 2);
    expect(closes).toEqual([{ code: 4004, reason: "role changed", reconnecting: true }]);
    expect(signIns).toBe(2);
    expect(followed).toEqual([[campaign.id], [campaign.id]]);

    // Caught before the change: the close can come before the PATCH's answer.
    const ended = socket.once("campaign.status").then(
      () => "no close",
      (error: Error) => error.message,
    );
    await unwrap(
      api.PATCH("/api/v1/users/{id}", { params: { path }, body: { status: "disabled" } }),
    );
    expect(await ended).toContain("4003 account disabled");
    await until(() => closes.length === 2);
    expect(closes[1]).toEqual({ code: 4003, reason: "account disabled", reconnecting: false });
  });

  test("a plain token the server stops taking ends the socket", async () => {
    const { w, baseUrl, adminToken } = await listening();
    const lead = await w.user(w.acme.id, "lead@acme.test", "supervisor");
    const socket = connectSupervisor({ baseUrl, token: await w.login("lead@acme.test") });
    stops.push(() => socket.close());
    const closes: SocketClose[] = [];
    socket.onClose((close) => closes.push(close));
    await socket.once("snapshot");
    const api = createClient({ baseUrl, token: adminToken });
    await unwrap(
      api.PATCH("/api/v1/users/{id}", {
        params: { path: { id: lead.id } },
        body: { role: "agent" },
      }),
    );
    await until(() => closes.length === 1);
    expect(closes[0]).toMatchObject({ code: 4004, reconnecting: false });
  });

  test("reconnections wait longer each time, spread out, up to the ceiling", () => {
    const backoff = { initialMs: 1_000, maxMs: 30_000 };
    expect([0, 1, 2, 5, 10].map((n) => reconnectDelay(n, backoff, () => 1))).toEqual([
      1_000, 2_000, 4_000, 30_000, 30_000,
    ]);
    expect(reconnectDelay(0, backoff, () => 0)).toBe(500);
    expect(reconnectDelay(1_000, backoff, () => 0)).toBe(15_000);
  });
});

describe("webhooks", () => {
  const secret = `whsec_${Buffer.from("a secret of thirty-two bytes!!!!").toString("base64")}`;
  const event = {
    type: "dnc.added" as const,
    timestamp: "2026-03-02T17:00:00.000Z",
    data: { phone: "+14155550199", source: "user", added_by: null },
  };
  const payload = JSON.stringify(event);
  const signed = (body: string, key = secret, at = new Date()) => ({
    "webhook-id": "msg_1",
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": new Webhook(key).sign("msg_1", at, body),
  });

  test("a signed event is returned, from fetch Headers or Node's header object", () => {
    expect(verifyWebhook(secret, payload, new Headers(signed(payload)))).toEqual(event);
    const nodeHeaders = { ...signed(payload), "content-type": "application/json" };
    expect(verifyWebhook(secret, new TextEncoder().encode(payload), nodeHeaders)).toEqual(event);
  });

  test("during a rotation one matching signature of several is enough", () => {
    const other = `whsec_${Buffer.from("another secret, also 32 bytes!!!").toString("base64")}`;
    const headers = signed(payload);
    headers["webhook-signature"] =
      `${signed(payload, other)["webhook-signature"]} ${headers["webhook-signature"]}`;
    expect(verifyWebhook(secret, payload, headers)).toEqual(event);
  });

  test("a forged, altered, replayed or unsigned webhook, or one that is no event, is refused", () => {
    const other = `whsec_${Buffer.from("another secret, also 32 bytes!!!").toString("base64")}`;
    const refusals = [
      () => verifyWebhook(secret, payload, signed(payload, other)),
      () => verifyWebhook(secret, payload.replace("dnc.added", "dnc.addeD"), signed(payload)),
      () => verifyWebhook(secret, payload, signed(payload, secret, new Date(Date.now() - 600_000))),
      () => verifyWebhook(secret, payload, { "webhook-id": "msg_1" }),
      () => verifyWebhook(secret, '{"hello":1}', signed('{"hello":1}')),
    ];
    for (const refusal of refusals) expect(refusal).toThrow(WebhookVerificationError);
  });

  test("event types come from the document's webhooks section, or are generic without one", () => {
    /** The shape openapi-typescript emits for a `webhooks` section. */
    interface Webhooks {
      "call.ended": {
        post: {
          requestBody?: {
            content: {
              "application/json": {
                type: "call.ended";
                timestamp: string;
                data: { call_id: string };
              };
            };
          };
        };
      };
      "dnc.added": {
        post: { requestBody?: { content: { "application/json": { phone: string } } } };
      };
    }
    type Events = WebhookEventOf<Webhooks>;
    const described: Events[] = [
      { type: "call.ended", timestamp: "t", data: { call_id: "c" } },
      { type: "dnc.added", timestamp: "t", data: { phone: "+14155550123" } },
    ];
    // @ts-expect-error: a call.ended event carries its call's id
    const wrong: Events = { type: "call.ended", timestamp: "t", data: { phone: "+1" } };
    const generic: WebhookEventOf<Record<string, never>> = event satisfies GenericWebhookEvent;
    expect([described.length, wrong.type, generic.type]).toEqual([2, "call.ended", "dnc.added"]);
  });
});
