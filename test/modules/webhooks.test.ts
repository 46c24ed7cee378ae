import { afterEach, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { Webhook } from "standardwebhooks";
import type { Database, Executor } from "../../db/client.ts";
import { claimCursors, enqueueEvents } from "../../db/queries/webhooks.ts";
import { rowsOf } from "../../db/rows.ts";
import { webhookEvents } from "../../db/schema/index.ts";
import { DISPATCH_LIMITS, fairShares, WebhookDispatcher } from "../../src/webhooks/dispatcher.ts";
import { createWorkspace } from "../helpers/app.ts";
import { ManualClock } from "../helpers/clock.ts";
import { runningCampaign } from "../helpers/leads.ts";
import { awakeZone } from "../helpers/zones.ts";

/**
 * The leads' zone: one where the campaign's 00:00–23:59 window stays open while the tests run
 * (New York's shuts for its last minute, and these tests run on the real clock).
 */
const ZONE = awakeZone(["America/New_York"]);

/** A receiver on loopback that answers as told and keeps what it got. */
function receiver(
  answer: (index: number) => Response | Promise<Response> = () => new Response("ok"),
) {
  const received: { headers: Headers; body: string }[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const body = await request.text();
      received.push({ headers: request.headers, body });
      return answer(received.length - 1);
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}/hooks`,
    received,
    events: () => received.map((r) => JSON.parse(r.body) as { type: string; data: never }),
    stop: () => server.stop(true),
  };
}

type Receiver = ReturnType<typeof receiver>;
const receivers: Receiver[] = [];
const dispatchers: WebhookDispatcher[] = [];
afterEach(async () => {
  // Receivers first: their closed connections end the attempts a dispatcher waits for.
  for (const r of receivers.splice(0)) r.stop();
  for (const dispatcher of dispatchers.splice(0)) await dispatcher.stop();
});

const until = async (check: () => boolean | Promise<boolean>, what: string, ms = 5_000) => {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(20);
  }
};

/** A workspace whose webhooks may reach loopback over http, on a clock that starts now. */
async function setUp(options: { env?: Record<string, string>; dns?: Map<string, string[]> } = {}) {
  const clock = new ManualClock(Date.now());
  const dns = options.dns;
  const w = await createWorkspace({
    clock,
    env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true", ...options.env },
    ...(dns
      ? {
          resolve: async (host: string) => {
            const found = dns.get(host);
            if (!found) throw new Error(`unknown host ${host}`);
            return found;
          },
        }
      : {}),
  });
  const admin = await w.login("admin@acme.test");
  const start = () => {
    w.deps.webhooks.dispatcher.start();
    dispatchers.push(w.deps.webhooks.dispatcher);
  };
  const register = async (url: string, eventTypes: string[]) => {
    const created = await w.request("POST", "/api/v1/webhooks", {
      token: admin,
      body: { url, event_types: eventTypes },
    });
    expect(created.status).toBe(201);
    return created.body.data as { webhook: { id: string }; secret: string };
  };
  const addDnc = (phone: string) =>
    w.request("POST", "/api/v1/dnc", { token: admin, body: { phone } });
  /** An endpoint's logged attempts, newest first, once there are `count` of them. */
  const loggedAttempts = async (webhookId: string, count: number) => {
    // biome-ignore lint/suspicious/noExplicitAny: test assertions read arbitrary JSON.
    let items: any[] = [];
    await until(async () => {
      items = (await w.request("GET", `/api/v1/webhooks/${webhookId}/deliveries`, { token: admin }))
        .body.data.items;
      return items.length === count;
    }, `${count} attempts logged`);
    return items;
  };
  return { w, clock, admin, start, register, addDnc, loggedAttempts };
}

/** The events written to the outbox, oldest first. */
const outboxEvents = (w: Awaited<ReturnType<typeof setUp>>["w"]) =>
  w.deps.db.select().from(webhookEvents).orderBy(webhookEvents.seq);

/** A dispatcher of the workspace's app with limits of a test's own, stopped after the test. */
function dispatcherOf(
  w: Awaited<ReturnType<typeof setUp>>["w"],
  limits: ConstructorParameters<typeof WebhookDispatcher>[1],
  db: Database = w.deps.db,
) {
  const dispatcher = new WebhookDispatcher(
    {
      db,
      clock: w.clock,
      logger: w.deps.logger,
      realtime: w.deps.realtime,
      resolve: w.deps.webhooks.resolve,
      allowPrivateNetworks: true,
      retryWindowMs: 3_600_000,
      disableAfterMs: 3_600_000,
    },
    limits,
  );
  dispatchers.push(dispatcher);
  return dispatcher;
}

describe("webhook endpoints", () => {
  test("an admin registers one and sees its secret once; the list and the endpoint never show it", async () => {
    const { w, admin } = await setUp();
    const created = await w.request("POST", "/api/v1/webhooks", {
      token: admin,
      body: {
        url: "http://127.0.0.1:9/hooks",
        event_types: ["call.ended", "dnc.added", "call.ended"],
        description: "CRM",
      },
    });
    expect(created.status).toBe(201);
    expect(created.body.data.secret).toMatch(/^whsec_[A-Za-z0-9+/=]{32}$/);
    expect(created.body.data.webhook).toMatchObject({
      url: "http://127.0.0.1:9/hooks",
      event_types: ["call.ended", "dnc.added"],
      description: "CRM",
      status: "enabled",
    });
    const id = created.body.data.webhook.id;
    const secret = created.body.data.secret;
    const one = await w.request("GET", `/api/v1/webhooks/${id}`, { token: admin });
    const list = await w.request("GET", "/api/v1/webhooks", { token: admin });
    expect(one.status).toBe(200);
    expect(list.body.data.items.map((item: { id: string }) => item.id)).toEqual([id]);
    expect(JSON.stringify([one.body, list.body])).not.toContain(secret);
    const audit = await w.request("GET", "/api/v1/audit-events", { token: admin });
    expect(audit.body.data.items.map((event: { action: string }) => event.action)).toContain(
      "webhook.created",
    );
    expect(JSON.stringify(audit.body)).not.toContain(secret);

    const rotated = await w.request("POST", `/api/v1/webhooks/${id}/rotate-secret`, {
      token: admin,
      body: { overlap_seconds: 60 },
    });
    expect(rotated.status).toBe(200);
    expect(rotated.body.data.secret).not.toBe(secret);
    expect(rotated.body.data.webhook.previous_secret_expires_at).not.toBeNull();
    // Its one field is optional: no body at all, or JSON declared and nothing sent, will do.
    for (const headers of [{}, { "content-type": "application/json" }] as Record<
      string,
      string
    >[]) {
      const response = await w.app.handle(
        new Request(`http://localhost/api/v1/webhooks/${id}/rotate-secret`, {
          method: "POST",
          headers: { authorization: `Bearer ${admin}`, ...headers },
        }),
      );
      expect(response.status).toBe(200);
      expect(((await response.json()) as { data: { secret: string } }).data.secret).toMatch(
        /^whsec_/,
      );
    }

    const patched = await w.request("PATCH", `/api/v1/webhooks/${id}`, {
      token: admin,
      body: { enabled: false, event_types: ["lead.exhausted"] },
    });
    expect(patched.body.data.webhook).toMatchObject({
      status: "disabled",
      disabled_reason: "disabled by an admin",
      event_types: ["lead.exhausted"],
    });
    // The view's own field switches it too; given with `enabled`, the two must agree.
    const contradictory = await w.request("PATCH", `/api/v1/webhooks/${id}`, {
      token: admin,
      body: { enabled: false, status: "enabled" },
    });
    expect(contradictory.status).toBe(422);
    expect(contradictory.body.field_errors?.[0]?.field).toBe("status");
    const resumed = await w.request("PATCH", `/api/v1/webhooks/${id}`, {
      token: admin,
      body: { status: "enabled" },
    });
    expect(resumed.body.data.webhook).toMatchObject({ status: "enabled", disabled_reason: null });
    const removed = await w.request("DELETE", `/api/v1/webhooks/${id}`, { token: admin });
    expect(removed.status).toBe(200);
    expect((await w.request("GET", `/api/v1/webhooks/${id}`, { token: admin })).status).toBe(404);
  });

  test("bad input is 422 naming the field: plain http, a private address, an unknown event type", async () => {
    const dns = new Map([
      ["hooks.example", ["93.184.216.34"]],
      ["inside.example", ["10.1.2.3"]],
    ]);
    const { w, admin } = await setUp({ env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: "false" }, dns });
    const create = (url: string, eventTypes = ["call.ended"]) =>
      w.request("POST", "/api/v1/webhooks", {
        token: admin,
        body: { url, event_types: eventTypes },
      });
    const fieldOf = (reply: { body: { field_errors?: { field: string; message: string }[] } }) =>
      reply.body.field_errors?.[0];
    for (const [url, message] of [
      ["http://hooks.example/x", "must use https"],
      ["https://inside.example/x", "resolves to 10.1.2.3"],
      ["https://127.0.0.1/x", "resolves to 127.0.0.1"],
      ["https://169.254.169.254/latest/meta-data", "resolves to 169.254.169.254"],
      ["https://[::1]/x", "resolves to ::1"],
      ["https://nowhere.example/x", "does not resolve"],
      ["not a url", "must be an absolute URL"],
      ["https://user:pass@hooks.example/x", "must not carry a user name or password"],
      ["https://hooks.example:0/x", "port 0"],
      // IPv6 forms a router may unwrap into an IPv4 address inside.
      ["https://[::127.0.0.1]/x", "resolves to ::7f00:1"],
      ["https://[2002:7f00:1::]/x", "resolves to 2002:7f00:1::"],
      ["https://[2002:a01:203::1]/x", "resolves to 2002:a01:203::1"],
      ["https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/x", "resolves to 2001:0:4136"],
    ] as const) {
      const reply = await create(url);
      expect({ url, status: reply.status }).toEqual({ url, status: 422 });
      expect(fieldOf(reply)?.field).toBe("url");
      expect(fieldOf(reply)?.message).toContain(message);
    }
    const unknown = await create("https://hooks.example/x", ["call.ended", "call.exploded"]);
    expect(unknown.status).toBe(422);
    expect(fieldOf(unknown)).toEqual({
      field: "event_types",
      message: expect.stringContaining('unknown event type "call.exploded"'),
    });
    expect((await create("https://hooks.example/x")).status).toBe(201);
    // 6to4 of a public address is public.
    expect((await create("https://[2002:5db8:d822::1]/x")).status).toBe(201);
  });

  test("a workspace has at most 20, however many creates arrive at once", async () => {
    const { w, admin } = await setUp();
    const replies = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        w.request("POST", "/api/v1/webhooks", {
          token: admin,
          body: { url: `https://hooks.example/${i}`, event_types: ["call.ended"] },
        }),
      ),
    );
    const statuses = replies.map((reply) => reply.status).sort();
    expect(statuses).toEqual([...Array(20).fill(201), ...Array(4).fill(409)]);
    const listed = await w.request("GET", "/api/v1/webhooks", { token: admin });
    expect(listed.body.total).toBe(20);
  });

  test("only admins and keys with the webhooks scope manage them, within their own workspace", async () => {
    const { w, admin } = await setUp();
    const globex = await w.tenant("globex.test");
    await w.user(globex.id, "admin@globex.test", "admin");
    await w.user(w.acme.id, "super@acme.test", "supervisor");
    const supervisor = await w.login("super@acme.test");
    const other = await w.login("admin@globex.test");
    const { webhook } = (
      await w.request("POST", "/api/v1/webhooks", {
        token: admin,
        body: { url: "http://127.0.0.1:9/h", event_types: ["dnc.added"] },
      })
    ).body.data;
    expect((await w.request("GET", "/api/v1/webhooks", { token: supervisor })).status).toBe(403);
    for (const [method, path] of [
      ["GET", `/api/v1/webhooks/${webhook.id}`],
      ["PATCH", `/api/v1/webhooks/${webhook.id}`],
      ["DELETE", `/api/v1/webhooks/${webhook.id}`],
      ["GET", `/api/v1/webhooks/${webhook.id}/deliveries`],
      ["POST", `/api/v1/webhooks/${webhook.id}/rotate-secret`],
    ] as const) {
      const reply = await w.request(method, path, { token: other, body: {} });
      expect({ method, path, status: reply.status }).toEqual({ method, path, status: 404 });
    }
    const keyOf = async (scopes: Record<string, string>) =>
      (
        await w.request("POST", "/api/v1/api-keys", {
          token: admin,
          body: { name: JSON.stringify(scopes), scopes },
        })
      ).body.data.key as string;
    const reader = await keyOf({ webhooks: "read" });
    const writer = await keyOf({ webhooks: "write" });
    const none = await keyOf({ campaigns: "write" });
    expect((await w.request("GET", "/api/v1/webhooks", { token: reader })).status).toBe(200);
    expect((await w.request("GET", "/api/v1/webhooks", { token: none })).status).toBe(403);
    const byReader = await w.request("POST", "/api/v1/webhooks", {
      token: reader,
      body: { url: "http://127.0.0.1:9/h", event_types: ["dnc.added"] },
    });
    expect(byReader.status).toBe(403);
    const byWriter = await w.request("POST", "/api/v1/webhooks", {
      token: writer,
      body: { url: "http://127.0.0.1:9/h", event_types: ["dnc.added"] },
    });
    expect(byWriter.status).toBe(201);
    const keys = await w.request("GET", "/api/v1/api-keys", { token: admin });
    const scopesOf = (name: string) =>
      keys.body.data.items.find((key: { name: string }) => key.name === name)?.scopes;
    expect(scopesOf(JSON.stringify({ webhooks: "write" }))).toEqual({
      campaigns: "none",
      leads: "none",
      cdrs: "none",
      users: "none",
      webhooks: "write",
    });
    expect(scopesOf(JSON.stringify({ campaigns: "write" }))).toEqual({
      campaigns: "write",
      leads: "none",
      cdrs: "none",
      users: "none",
    });
  });
});

describe("delivery", () => {
  test("signed as Standard Webhooks; a 500 then a 200 gets the event again under the same id; every attempt is logged", async () => {
    const { w, clock, admin, start, register, addDnc } = await setUp();
    const r = receiver((index) =>
      index === 0 ? new Response("busy", { status: 500 }) : new Response("thanks"),
    );
    receivers.push(r);
    const { webhook, secret } = await register(r.url, ["dnc.added"]);
    expect((await addDnc("+14155550199")).status).toBe(201);
    start();
    await until(() => r.received.length === 1, "the first attempt");
    const first = r.received[0];
    if (!first) throw new Error("no first attempt");
    const event = new Webhook(secret).verify(first.body, Object.fromEntries(first.headers)) as {
      type: string;
      timestamp: string;
      data: unknown;
    };
    expect(event).toEqual({
      type: "dnc.added",
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      data: { phone: "+14155550199", source: "user", added_by: expect.any(String) },
    });
    expect(first.headers.get("webhook-id")).toMatch(/^msg_[0-9a-f]{32}$/);
    const logged = async () =>
      (await w.request("GET", `/api/v1/webhooks/${webhook.id}/deliveries`, { token: admin })).body
        .data.items.length as number;
    for (let tries = 0; tries < 100 && (await logged()) === 0; tries++) await Bun.sleep(20);
    // The first retry comes within 30 s.
    clock.advance(30_000);
    w.deps.webhooks.dispatcher.wake();
    await until(() => r.received.length === 2, "the retry");
    const second = r.received[1];
    expect(second?.headers.get("webhook-id")).toBe(first.headers.get("webhook-id"));
    expect(second?.body).toBe(first.body);
    new Webhook(secret).verify(second?.body ?? "", Object.fromEntries(second?.headers ?? []));

    await Bun.sleep(300);
    expect(r.received.length).toBe(2);
    const log = await w.request("GET", `/api/v1/webhooks/${webhook.id}/deliveries`, {
      token: admin,
    });
    expect(log.status).toBe(200);
    expect(
      log.body.data.items.map((item: Record<string, unknown>) => [
        item.attempt,
        item.response_status,
        item.response_body,
        item.event_type,
      ]),
    ).toEqual([
      [2, 200, "thanks", "dnc.added"],
      [1, 500, "busy", "dnc.added"],
    ]);
    // Any delivery can be sent again, under its id.
    const resent = await w.request(
      "POST",
      `/api/v1/webhooks/${webhook.id}/deliveries/${log.body.data.items[1].id}/resend`,
      { token: admin },
    );
    expect(resent.status).toBe(202);
    await until(() => r.received.length === 3, "the resent event");
    expect(r.received[2]?.headers.get("webhook-id")).toBe(first.headers.get("webhook-id"));
    expect(r.received[2]?.body).toBe(first.body);
    // The command takes no field.
    const unknown = await w.request(
      "POST",
      `/api/v1/webhooks/${webhook.id}/deliveries/${log.body.data.items[1].id}/resend`,
      { token: admin, body: { x: 1 } },
    );
    expect(unknown.status).toBe(400);
  });

  test("an event delivered at once and sent again comes with the bytes first sent", async () => {
    const { w, admin, start, register, addDnc, loggedAttempts } = await setUp();
    const r = receiver();
    receivers.push(r);
    const { webhook } = await register(r.url, ["dnc.added"]);
    await addDnc("+14155550198");
    start();
    await until(() => r.received.length === 1, "the event");
    const items = await loggedAttempts(webhook.id, 1);
    const resent = await w.request(
      "POST",
      `/api/v1/webhooks/${webhook.id}/deliveries/${items[0]?.id}/resend`,
      { token: admin },
    );
    expect(resent.status).toBe(202);
    await until(() => r.received.length === 2, "the event sent again");
    expect(r.received[1]?.headers.get("webhook-id")).toBe(r.received[0]?.headers.get("webhook-id"));
    expect(r.received[1]?.body).toBe(r.received[0]?.body as string);
  });

  test("events about one campaign arrive in order, a retry holding back those after it", async () => {
    const { w, clock, admin, start, register } = await setUp();
    let failFirst = true;
    const r = receiver(() => {
      if (failFirst) {
        failFirst = false;
        return new Response("down", { status: 503 });
      }
      return new Response("ok");
    });
    receivers.push(r);
    await register(r.url, ["campaign.status_changed"]);
    const campaign = await w.request("POST", "/api/v1/campaigns", {
      token: admin,
      body: { name: "Ordered", regulatory_profile: "none" },
    });
    const id = campaign.body.data.campaign.id;
    for (const action of ["start", "pause", "start", "stop"]) {
      const changed = await w.request("POST", `/api/v1/campaigns/${id}/status`, {
        token: admin,
        body: { action },
      });
      expect(changed.status).toBe(200);
    }
    start();
    await until(() => r.received.length === 1, "the first attempt");
    await Bun.sleep(300);
    // Held back behind the failed one.
    expect(r.received.length).toBe(1);
    clock.advance(30_000);
    w.deps.webhooks.dispatcher.wake();
    await until(() => r.received.length === 5, "every event");
    const delivered = r.events().slice(1) as { data: { action: string; to: string } }[];
    expect(delivered.map((event) => `${event.data.action}→${event.data.to}`)).toEqual([
      "start→running",
      "pause→paused",
      "start→running",
      "stop→stopped",
    ]);
    expect(r.received[0]?.headers.get("webhook-id")).toBe(r.received[1]?.headers.get("webhook-id"));
  });

  test("a private address is refused at delivery time when the name resolves elsewhere after it was registered", async () => {
    const dns = new Map([["crm.example", ["93.184.216.34"]]]);
    const { w, admin, start, register, addDnc } = await setUp({
      env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: "false" },
      dns,
    });
    const { webhook } = await register("https://crm.example/hooks", ["dnc.added"]);
    dns.set("crm.example", ["127.0.0.1"]);
    await addDnc("+14155550123");
    start();
    let items: Record<string, unknown>[] = [];
    for (let tries = 0; tries < 100 && items.length === 0; tries++) {
      await Bun.sleep(30);
      items = (
        await w.request("GET", `/api/v1/webhooks/${webhook.id}/deliveries`, { token: admin })
      ).body.data.items;
    }
    expect(items[0]).toMatchObject({
      attempt: 1,
      response_status: null,
      error: expect.stringContaining("resolves to 127.0.0.1"),
    });
  });

  test("a receiver's 410 disables the endpoint and alerts the workspace", async () => {
    const { w, admin, start, register, addDnc } = await setUp();
    const r = receiver(() => new Response("gone", { status: 410 }));
    receivers.push(r);
    const { webhook } = await register(r.url, ["dnc.added"]);
    // What supervisors are told of the endpoint's alert: opened, then closed.
    const told: { id: string; cleared_at: string | null }[] = [];
    const hub = w.deps.realtime;
    const toSupervisors = hub.toSupervisors.bind(hub);
    hub.toSupervisors = (tenantId, message) => {
      const { type, alert } = message as { type: string; alert?: (typeof told)[number] };
      if (type === "alert" && alert) told.push(alert);
      toSupervisors(tenantId, message);
    };
    await addDnc("+14155550124");
    start();
    await until(() => r.received.length === 1, "the attempt");
    let shown: { status: string; disabled_reason: string | null } = {
      status: "enabled",
      disabled_reason: null,
    };
    for (let tries = 0; tries < 100 && shown.status === "enabled"; tries++) {
      await Bun.sleep(30);
      shown = (await w.request("GET", `/api/v1/webhooks/${webhook.id}`, { token: admin })).body.data
        .webhook;
    }
    expect(shown).toMatchObject({
      status: "disabled",
      disabled_reason: "the receiver answered 410 Gone",
    });
    const alerts = await w.request("GET", "/api/v1/alerts?open=true", { token: admin });
    expect(
      alerts.body.data.items.some(
        (alert: { kind: string; subject_id: string }) =>
          alert.kind === "webhook_disabled" && alert.subject_id === webhook.id,
      ),
    ).toBe(true);
    // A disabled endpoint gets nothing more; enabled again, its alert is closed.
    await addDnc("+14155550125");
    await Bun.sleep(300);
    expect(r.received.length).toBe(1);
    await w.request("PATCH", `/api/v1/webhooks/${webhook.id}`, {
      token: admin,
      body: { enabled: true },
    });
    const after = await w.request("GET", "/api/v1/alerts?open=true", { token: admin });
    expect(
      after.body.data.items.some((alert: { kind: string }) => alert.kind === "webhook_disabled"),
    ).toBe(false);
    expect(told.map((alert) => alert.cleared_at === null)).toEqual([true, false]);
    expect(told[1]?.id).toBe(told[0]?.id as string);

    // Disabled again, then deleted: nothing can enable it, so its alert closes with it.
    await addDnc("+14155550126");
    await until(() => told.length === 3, "the second alert");
    expect(
      (await w.request("DELETE", `/api/v1/webhooks/${webhook.id}`, { token: admin })).status,
    ).toBe(200);
    const afterDelete = await w.request("GET", "/api/v1/alerts?open=true", { token: admin });
    expect(afterDelete.body.data.items).toEqual([]);
    expect(told.map((alert) => alert.cleared_at === null)).toEqual([true, false, true, false]);
  });

  test("an endpoint failing for days is disabled", async () => {
    const { w, clock, admin, start, register, addDnc } = await setUp({
      env: { WEBHOOK_DISABLE_AFTER_HOURS: "1", WEBHOOK_RETRY_HOURS: "48" },
    });
    const r = receiver(() => new Response("down", { status: 503 }));
    receivers.push(r);
    const { webhook } = await register(r.url, ["dnc.added"]);
    await addDnc("+14155550126");
    start();
    await until(() => r.received.length === 1, "the first attempt");
    for (let step = 0; step < 20 && r.received.length < 4; step++) {
      clock.advance(1_200_000);
      w.deps.webhooks.dispatcher.wake();
      await Bun.sleep(100);
    }
    let status = "enabled";
    for (let tries = 0; tries < 50 && status === "enabled"; tries++) {
      await Bun.sleep(30);
      status = (await w.request("GET", `/api/v1/webhooks/${webhook.id}`, { token: admin })).body
        .data.webhook.status;
    }
    expect(status).toBe("disabled");
  });

  test("during a secret's rotation both secrets sign, so a receiver still on the old one accepts", async () => {
    const { w, admin, start, register, addDnc } = await setUp();
    const r = receiver();
    receivers.push(r);
    const { webhook, secret: old } = await register(r.url, ["dnc.added"]);
    const rotated = await w.request("POST", `/api/v1/webhooks/${webhook.id}/rotate-secret`, {
      token: admin,
      body: {},
    });
    const fresh = rotated.body.data.secret as string;
    await addDnc("+14155550127");
    start();
    await until(() => r.received.length === 1, "the event");
    const got = r.received[0];
    if (!got) throw new Error("nothing received");
    const headers = Object.fromEntries(got.headers);
    expect(headers["webhook-signature"]?.split(" ").length).toBe(2);
    expect(() => new Webhook(old).verify(got.body, headers)).not.toThrow();
    expect(() => new Webhook(fresh).verify(got.body, headers)).not.toThrow();
  });

  test("a slow receiver or an endless answer holds only its own endpoint's share, and costs a bounded read", async () => {
    const { w, register, addDnc } = await setUp();
    const hanging = receiver(() => new Promise<Response>(() => {}));
    const endless = receiver(
      () =>
        new Response(
          new ReadableStream({
            pull(controller) {
              controller.enqueue(new Uint8Array(64 * 1024).fill(120));
            },
          }),
        ),
    );
    const quick = receiver();
    receivers.push(hanging, endless, quick);
    await register(hanging.url, ["dnc.added"]);
    const { webhook: big } = await register(endless.url, ["dnc.added"]);
    await register(quick.url, ["dnc.added"]);
    for (let n = 0; n < 6; n++) await addDnc(`+1415555020${n}`);
    const dispatcher = dispatcherOf(w, {
      ...DISPATCH_LIMITS,
      inFlight: 8,
      perEndpoint: 2,
      pollMs: 20,
      leaseGapMs: 20,
      settleEveryMs: 20,
      timeoutMs: 5_000,
    });
    dispatcher.start();
    await until(() => quick.received.length === 6, "every event at the quick receiver");
    expect(hanging.received.length).toBe(2);
    const admin = await w.login("admin@acme.test");
    let items: { response_body: string | null }[] = [];
    for (let tries = 0; tries < 100 && items.length === 0; tries++) {
      await Bun.sleep(30);
      items = (await w.request("GET", `/api/v1/webhooks/${big.id}/deliveries`, { token: admin }))
        .body.data.items;
    }
    expect(items[0]?.response_body?.length).toBe(1024);
  });

  test("an answer the database cannot store as it is (a NUL) is logged mended, and the log goes on", async () => {
    const { register, addDnc, start, loggedAttempts } = await setUp();
    const r = receiver(() => new Response("ok\u0000nul"));
    receivers.push(r);
    const { webhook } = await register(r.url, ["dnc.added"]);
    await addDnc("+14155550310");
    start();
    await until(() => r.received.length === 1, "the first event");
    await addDnc("+14155550311");
    const items = await loggedAttempts(webhook.id, 2);
    expect(items.map((item) => [item.response_status, item.response_body])).toEqual([
      [200, "ok\uFFFDnul"],
      [200, "ok\uFFFDnul"],
    ]);
  });

  test("every endpoint is read, however many are registered beside it", async () => {
    const { register, addDnc, start } = await setUp();
    const r = receiver();
    receivers.push(r);
    // More endpoints than the process's room holds at each one's own share.
    const endpoints = 9;
    for (let n = 0; n < endpoints; n++) await register(`${r.url}?endpoint=${n}`, ["dnc.added"]);
    await addDnc("+14155550300");
    start();
    await until(() => r.received.length === endpoints, "the event at every endpoint", 10_000);
    expect(new Set(r.received.map(({ headers }) => headers.get("webhook-id"))).size).toBe(1);
  });

  test("with less room than endpoints, each is read in its turn", async () => {
    const { w, register, addDnc } = await setUp();
    const r = receiver();
    receivers.push(r);
    for (let n = 0; n < 7; n++) await register(`${r.url}?endpoint=${n}`, ["dnc.added"]);
    for (let n = 0; n < 3; n++) await addDnc(`+1415555032${n}`);
    const limits = { ...DISPATCH_LIMITS, inFlight: 2, perEndpoint: 1, pollMs: 10, leaseGapMs: 10 };
    dispatcherOf(w, limits).start();
    await until(() => r.received.length === 21, "every event at every endpoint", 10_000);
    const perEndpoint = Map.groupBy(r.received, ({ headers }) => headers.get("webhook-id"));
    expect([...perEndpoint.values()].map((copies) => copies.length)).toEqual([7, 7, 7]);
  });

  test("the room in flight is shared fairly: a quiet endpoint's unused share goes to the busy", () => {
    expect(fairShares([128, 128, 128, 128, 128], 512)).toEqual([102, 102, 102, 103, 103]);
    expect(fairShares([32, 128, 32, 0], 512)).toEqual([32, 128, 32, 0]);
    expect(fairShares([32, 128, 128], 100)).toEqual([32, 34, 34]);
    // Shorter than the wants are many: the first in order get one each, whatever they want.
    expect(fairShares([8, 128, 8, 8, 8], 3)).toEqual([1, 1, 1, 0, 0]);
    expect(fairShares([0, 8, 0, 8], 1)).toEqual([0, 1, 0, 0]);
    expect(fairShares([8, 8], 0)).toEqual([0, 0]);
  });

  /** Sixty-four events of one endpoint, none waiting for another (no order key). */
  async function manyEvents(w: Awaited<ReturnType<typeof setUp>>["w"], at: Date) {
    await enqueueEvents(
      w.deps.db,
      Array.from({ length: 64 }, (_, n) => ({
        type: "dnc.added" as const,
        tenantId: w.acme.id,
        orderKey: null,
        data: { phone: `+1415555${String(3000 + n)}`, source: "user", added_by: null },
        at,
      })),
    );
  }

  /**
   * Runs `work` and returns how many posts began between two turns of the event loop, as a
   * request's handler would see them, at each turn.
   */
  async function postsPerTurn(work: () => Promise<void>): Promise<number[]> {
    const original = globalThis.fetch;
    let posted = 0;
    globalThis.fetch = Object.assign(
      (...args: Parameters<typeof fetch>) => {
        posted++;
        return original(...args);
      },
      { preconnect: original.preconnect },
    );
    const seen: number[] = [];
    let watching = true;
    const watch = () => {
      seen.push(posted);
      if (watching) setImmediate(watch);
    };
    try {
      watch();
      await work();
    } finally {
      watching = false;
      globalThis.fetch = original;
    }
    return seen.slice(1).map((count, turn) => count - (seen[turn] ?? 0));
  }

  test("a large read is sent a slice at a time, other work running between the slices", async () => {
    const { w, clock, register } = await setUp();
    const r = receiver();
    receivers.push(r);
    await register(r.url, ["dnc.added"]);
    await manyEvents(w, new Date(clock.now()));
    const steps = await postsPerTurn(async () => {
      dispatcherOf(w, DISPATCH_LIMITS).start();
      await until(() => r.received.length === 64, "every event");
    });
    expect(Math.max(...steps)).toBeGreaterThan(0);
    expect(Math.max(...steps)).toBeLessThanOrEqual(16);
  });

  test("so are the retries due at once", async () => {
    const { w, clock, register } = await setUp();
    const r = receiver((index) =>
      index < 64 ? new Response("busy", { status: 500 }) : new Response("thanks"),
    );
    receivers.push(r);
    await register(r.url, ["dnc.added"]);
    await manyEvents(w, new Date(clock.now()));
    const dispatcher = dispatcherOf(w, DISPATCH_LIMITS);
    dispatcher.start();
    await until(() => r.received.length === 64, "every first attempt");
    const queued = async () =>
      rowsOf<{ count: number }>(
        await w.deps.db.execute(
          sql`select count(*)::int as count from webhook_deliveries where status = 'pending'`,
        ),
      )[0]?.count;
    await until(async () => (await queued()) === 64, "every event in the retry queue");
    // All 64 come due together, and one lease takes them.
    const steps = await postsPerTurn(async () => {
      clock.advance(30_000);
      dispatcher.wake();
      await until(() => r.received.length === 128, "every retry");
    });
    expect(Math.max(...steps)).toBeGreaterThan(0);
    expect(Math.max(...steps)).toBeLessThanOrEqual(16);
  });
});

describe("a process killed mid-delivery", () => {
  test("its lease runs out and another dispatcher delivers the event under the same id", async () => {
    const { w, clock, register, addDnc } = await setUp();
    const r = receiver();
    receivers.push(r);
    await register(r.url, ["dnc.added"]);
    await addDnc("+14155550140");
    // A process took the endpoint's cursor and died before sending its event: nothing renews
    // its lease.
    const held = await claimCursors(w.deps.db, {
      holder: "a process killed since",
      now: new Date(clock.now()),
      leaseMs: 30_000,
      positions: new Map(),
    });
    expect(held.size).toBe(1);
    const [event] = await outboxEvents(w);
    w.deps.webhooks.dispatcher.start();
    dispatchers.push(w.deps.webhooks.dispatcher);
    await Bun.sleep(300);
    expect(r.received.length).toBe(0);
    clock.advance(30_000);
    w.deps.webhooks.dispatcher.wake();
    await until(() => r.received.length === 1, "the event taken over");
    expect(r.received[0]?.headers.get("webhook-id")).toBe(event?.eventId);
  });
});

describe("a process that stops", () => {
  test("hands its endpoints over at once", async () => {
    const { w, register, addDnc } = await setUp();
    const r = receiver();
    receivers.push(r);
    await register(r.url, ["dnc.added"]);
    const first = dispatcherOf(w, DISPATCH_LIMITS);
    first.start();
    await addDnc("+14155550170");
    await until(() => r.received.length === 1, "the first event");
    await first.stop();
    // No lease to wait out: the clock does not move, and the next process takes over.
    const second = dispatcherOf(w, DISPATCH_LIMITS);
    second.start();
    await addDnc("+14155550171");
    await until(() => r.received.length === 2, "the event after the handover");
    expect(r.events().map((event) => (event.data as { phone: string }).phone)).toEqual([
      "+14155550170",
      "+14155550171",
    ]);
  });
});

describe("an endpoint disabled and enabled again", () => {
  test("gets nothing of what happened while it was off", async () => {
    const { w, admin, start, register, addDnc } = await setUp();
    const a = receiver();
    const b = receiver();
    receivers.push(a, b);
    const { webhook } = await register(a.url, ["dnc.added"]);
    await register(b.url, ["dnc.added"]);
    const patch = (enabled: boolean) =>
      w.request("PATCH", `/api/v1/webhooks/${webhook.id}`, { token: admin, body: { enabled } });
    expect((await patch(false)).status).toBe(200);
    await addDnc("+14155550180");
    expect((await patch(true)).status).toBe(200);
    await addDnc("+14155550181");
    start();
    await until(() => b.received.length === 2 && a.received.length >= 1, "the events");
    await Bun.sleep(300);
    const phones = (r: Receiver) =>
      r.events().map((event) => (event.data as { phone: string }).phone);
    expect(phones(a)).toEqual(["+14155550181"]);
    expect(phones(b)).toEqual(["+14155550180", "+14155550181"]);
  });
});

describe("the outbox", () => {
  test("an event is written with the change it reports, and nothing for a workspace without endpoints", async () => {
    const { w, admin, register, addDnc } = await setUp();
    // Added before any endpoint: no event for it.
    await addDnc("+14155550130");
    const { webhook } = await register("http://127.0.0.1:9/h", ["dnc.added"]);
    await addDnc("+14155550131");
    const log = await w.request("GET", `/api/v1/webhooks/${webhook.id}/deliveries`, {
      token: admin,
    });
    // Not sent yet (no dispatcher runs), so nothing logged; but in the outbox.
    expect(log.body.data.items).toEqual([]);
    expect((await outboxEvents(w)).map((event) => event.data)).toEqual([
      { phone: "+14155550131", source: "user", added_by: expect.any(String) },
    ]);
  });
  test.skipIf(!process.env.DATABASE_URL)(
    "an event committed after later ones is still sent: a cursor never passes a transaction still running",
    async () => {
      const { w, clock, start, register, addDnc } = await setUp();
      const r = receiver();
      receivers.push(r);
      await register(r.url, ["dnc.added"]);
      // A transaction writes its event first and commits last.
      const commit = Promise.withResolvers<void>();
      const written = Promise.withResolvers<void>();
      const slow = w.deps.db.transaction(async (tx) => {
        await enqueueEvents(tx, [
          {
            type: "dnc.added",
            tenantId: w.acme.id,
            orderKey: null,
            data: { phone: "+14155550160", source: "user", added_by: null },
            at: new Date(clock.now()),
          },
        ]);
        written.resolve();
        await commit.promise;
      });
      await written.promise;
      expect((await addDnc("+14155550161")).status).toBe(201);
      start();
      // Held back while the first transaction runs, whose event comes before in the outbox.
      await Bun.sleep(400);
      expect(r.received.length).toBe(0);
      commit.resolve();
      await slow;
      await until(() => r.received.length === 2, "both events");
      expect(r.events().map((event) => (event.data as { phone: string }).phone)).toEqual([
        "+14155550160",
        "+14155550161",
      ]);
    },
  );

  test("the outbox's pages keep room for a lease to update its row in place", async () => {
    const { w } = await setUp();
    const options = rowsOf<{ reloptions: string[] | string | null }>(
      await w.deps.db.execute(
        sql`select reloptions from pg_class where relname = 'webhook_deliveries'`,
      ),
    )[0]?.reloptions;
    expect(String(options)).toContain("fillfactor=50");
  });

  test("a settle commits without waiting for the disk unless it queues a retry, and the setting ends with it", async () => {
    const { w, register, addDnc } = await setUp();
    const r = receiver((index) =>
      index === 0 ? new Response("ok") : new Response("down", { status: 503 }),
    );
    receivers.push(r);
    await register(r.url, ["dnc.added"]);
    const settingOf = async (db: Executor) =>
      rowsOf<{ setting: string }>(
        await db.execute(sql`select current_setting('synchronous_commit') as setting`),
      )[0]?.setting;
    const db = w.deps.longWorkDb;
    const before = await settingOf(db);
    // The same database, noting the setting each transaction commits with.
    const atCommit: (string | undefined)[] = [];
    const watched: Database = Object.create(db, {
      transaction: {
        value: (run: Parameters<Database["transaction"]>[0]) =>
          db.transaction(async (tx) => {
            const result = await run(tx);
            atCommit.push(await settingOf(tx));
            return result;
          }),
      },
    });
    dispatcherOf(w, DISPATCH_LIMITS, watched).start();
    await addDnc("+14155550160");
    await until(() => r.received.length === 1 && atCommit.length > 0, "the event settled");
    expect(atCommit.every((setting) => setting === "off")).toBe(true);
    // The next one fails: the settle queues it for retry, and waits for the disk.
    const settled = atCommit.length;
    await addDnc("+14155550161");
    await until(() => r.received.length === 2 && atCommit.length > settled, "the event queued");
    expect(atCommit.slice(settled)).toEqual([before]);
    // Each of the pool's connections, the settle's among them, commits as before.
    const after = await Promise.all([0, 1, 2, 3].map(() => settingOf(db)));
    expect(after).toEqual([before, before, before, before]);
  });

  test("the dispatcher vacuums the dead rows the retry queue's settles leave, once enough are settled", async () => {
    const { w, register, addDnc } = await setUp();
    // Every event's first attempt fails, so that each goes through the retry queue.
    const r = receiver((index) =>
      index < 3 ? new Response("down", { status: 503 }) : new Response("ok"),
    );
    receivers.push(r);
    await register(r.url, ["dnc.added"]);
    const vacuums = async () =>
      Number(
        rowsOf<{ count: string }>(
          await w.deps.db.execute(
            sql`select vacuum_count as count from pg_stat_user_tables where relname = 'webhook_deliveries'`,
          ),
        )[0]?.count,
      );
    const before = await vacuums();
    const dispatcher = dispatcherOf(w, {
      ...DISPATCH_LIMITS,
      pollMs: 20,
      vacuumEveryMs: 1,
      vacuumAfterSettled: 2,
    });
    dispatcher.start();
    for (const phone of ["+14155550150", "+14155550151", "+14155550152"]) await addDnc(phone);
    await until(() => r.received.length === 3, "three first attempts");
    // Queued, not yet settled from the queue: nothing to vacuum.
    for (let tries = 0; tries < 5; tries++) {
      w.clock.advance(10);
      await Bun.sleep(40);
    }
    expect(await vacuums()).toBe(before);
    w.clock.advance(30_000);
    dispatcher.wake();
    await until(() => r.received.length === 6, "the three retries");
    let after = before;
    for (let tries = 0; tries < 150 && after === before; tries++) {
      w.clock.advance(10);
      await Bun.sleep(20);
      after = await vacuums();
    }
    expect(after).toBe(before + 1);
  });
});

/** A running campaign of `csv`'s leads, on every hour, with an agent ready on it. */
async function readyAgentOn(
  w: Awaited<ReturnType<typeof setUp>>["w"],
  admin: string,
  settings: Record<string, unknown>,
  csv: string,
) {
  await w.user(w.acme.id, "agent@acme.test", "agent", { phoneUri: "sip:1001@127.0.0.1:5091" });
  const agent = await w.login("agent@acme.test");
  const { campaignId, nodeKey } = await runningCampaign(
    w,
    admin,
    { regulatory_profile: "none", calling_window: { start: "00:00", end: "23:59" }, ...settings },
    csv,
  );
  await w.request("POST", "/api/v1/agents/me/state", {
    token: agent,
    body: { state: "ready", campaign_id: campaignId },
  });
  return { agent, campaignId, nodeKey };
}

describe("the dialer's events", () => {
  test("an import, an agent's states, a call that ends and is dispositioned, leads completed and exhausted", async () => {
    const { w, admin, start, register } = await setUp();
    const r = receiver();
    receivers.push(r);
    const { secret } = await register(r.url, [
      "import.finished",
      "agent.state_changed",
      "call.ended",
      "call.dispositioned",
      "lead.completed",
      "lead.exhausted",
      "campaign.status_changed",
    ]);
    const { agent, campaignId, nodeKey } = await readyAgentOn(
      w,
      admin,
      { name: "Hooks", max_attempts: 1 },
      `phone,timezone\n+14155552671,${ZONE}\n+14155552672,${ZONE}\n`,
    );
    const event = (callId: string, type: string, extra: Record<string, unknown> = {}) =>
      w.request("POST", `/api/v1/nodes/calls/${callId}/events`, {
        token: nodeKey,
        body: { type, at: new Date(w.clock.now()).toISOString(), ...extra },
      });
    const claimOne = async () => {
      const claimed = await w.request("POST", "/api/v1/nodes/jobs/claim", {
        token: nodeKey,
        body: { max: 1 },
      });
      const callId = claimed.body.data.jobs[0]?.call_id as string;
      expect(callId).toBeString();
      return callId;
    };
    const answered = await claimOne();
    await event(answered, "answered");
    await event(answered, "ended", { hangup_cause: "NORMAL_CLEARING" });
    expect(
      (
        await w.request("POST", `/api/v1/calls/${answered}/disposition`, {
          token: agent,
          body: { disposition: "completed" },
        })
      ).status,
    ).toBe(200);
    const unanswered = await claimOne();
    await event(unanswered, "ended", { hangup_cause: "NO_ANSWER" });

    start();
    const expected = ["lead.exhausted", "lead.completed", "call.dispositioned", "import.finished"];
    await until(
      () =>
        expected.every((type) => r.events().some((e) => e.type === type)) &&
        r.events().filter((e) => e.type === "call.ended").length === 2,
      "every event",
    );
    const events = r.events();
    const ofType = (type: string) => events.filter((e) => e.type === type);
    const imported = ofType("import.finished")[0] as unknown as {
      data: { campaign_id: string; import: { imported: number } };
    };
    expect(imported.data).toMatchObject({ campaign_id: campaignId, import: { imported: 2 } });
    const ended = ofType("call.ended") as unknown as {
      data: { cdr: { call_id: string; campaign_name: string; outcome: string } };
    }[];
    // Two calls: each in order with its own events, in no order between them.
    expect(Object.fromEntries(ended.map((e) => [e.data.cdr.call_id, e.data.cdr.outcome]))).toEqual({
      [answered]: "answered",
      [unanswered]: "no_answer",
    });
    expect(ended[0]?.data.cdr.campaign_name).toBe("Hooks");
    const dispositioned = ofType("call.dispositioned") as unknown as {
      data: { cdr: { call_id: string; disposition: string; agent_email: string } };
    }[];
    expect(dispositioned.map((e) => e.data.cdr)).toEqual([
      expect.objectContaining({
        call_id: answered,
        disposition: "completed",
        agent_email: "agent@acme.test",
      }),
    ]);
    expect(
      ofType("lead.completed").map((e) => (e.data as { lead: { phone: string } }).lead.phone),
    ).toEqual(["+14155552671"]);
    expect(
      ofType("lead.exhausted").map(
        (e) => (e.data as { lead: { phone: string; state: string } }).lead,
      ),
    ).toEqual([expect.objectContaining({ phone: "+14155552672", state: "Exhausted" })]);
    const states = ofType("agent.state_changed").map(
      (e) => (e.data as { agent: { state: string; email: string } }).agent,
    );
    expect(states[0]).toMatchObject({ state: "ready", email: "agent@acme.test" });
    expect(states.map((s) => s.state)).toContain("on_call");
    // In order per call: the end before the disposition.
    const order = events
      .filter((e) => e.type.startsWith("call."))
      .map((e) => `${e.type}:${(e.data as { cdr: { call_id: string } }).cdr.call_id}`);
    expect(order.indexOf(`call.ended:${answered}`)).toBeLessThan(
      order.indexOf(`call.dispositioned:${answered}`),
    );
    for (const got of r.received)
      expect(() =>
        new Webhook(secret).verify(got.body, Object.fromEntries(got.headers)),
      ).not.toThrow();
  });

  test("leads ended outside their calls: a number listed, even mid-call, and a lower max_attempts", async () => {
    const { w, admin, register } = await setUp();
    await register("http://127.0.0.1:9/hooks", ["lead.completed", "lead.exhausted"]);
    const [inFlight, fresh, retried] = ["+14155552671", "+14155552672", "+14155552673"];
    const { campaignId, nodeKey } = await readyAgentOn(
      w,
      admin,
      { name: "Listed", max_attempts: 3 },
      `phone,timezone\n${inFlight},${ZONE}\n${fresh},${ZONE}\n${retried},${ZONE}\n`,
    );
    const claimAndEnd = async (end: () => Promise<void> = async () => {}) => {
      const claimed = await w.request("POST", "/api/v1/nodes/jobs/claim", {
        token: nodeKey,
        body: { max: 1 },
      });
      const job = claimed.body.data.jobs[0] as { call_id: string; phone: string };
      await end();
      await w.request("POST", `/api/v1/nodes/calls/${job.call_id}/events`, {
        token: nodeKey,
        body: {
          type: "ended",
          at: new Date(w.clock.now()).toISOString(),
          hangup_cause: "NO_ANSWER",
        },
      });
      return job.phone;
    };
    const campaign = async () =>
      (await w.request("GET", `/api/v1/campaigns/${campaignId}`, { token: admin })).body.data
        .campaign;
    const leadIds = new Map<string, string>();
    const lists = await w.request("GET", `/api/v1/campaigns/${campaignId}/lead-lists`, {
      token: admin,
    });
    const leads = await w.request(
      "GET",
      `/api/v1/campaigns/${campaignId}/lead-lists/${lists.body.data.items[0].id}/leads`,
      { token: admin },
    );
    for (const lead of leads.body.data.items) leadIds.set(lead.phone, lead.id);

    // Listed while its call rings, the lead ends DoNotCall with the call, not waiting to retry.
    expect(
      await claimAndEnd(async () => {
        for (const phone of [inFlight, fresh])
          await w.request("POST", "/api/v1/dnc", { token: admin, body: { phone } });
      }),
    ).toBe(inFlight);
    expect(await claimAndEnd()).toBe(retried);
    expect((await campaign()).stats.leads_by_state).toMatchObject({ DoNotCall: 2, Retry: 1 });
    // Lowering max_attempts to the attempts made exhausts the lead waiting for a retry.
    const { version } = await campaign();
    await w.request("PATCH", `/api/v1/campaigns/${campaignId}`, {
      token: admin,
      body: { version, max_attempts: 1 },
    });
    const after = await campaign();
    expect(after.stats.leads_by_state).toMatchObject({ DoNotCall: 2, Retry: 0, Exhausted: 1 });
    expect(after.status).toBe("completed");
    const events = (await outboxEvents(w)).map((event) => `${event.type} ${event.orderKey}`);
    expect(events).toEqual([
      `lead.completed ${leadIds.get(fresh)}`,
      `lead.completed ${leadIds.get(inFlight)}`,
      `lead.exhausted ${leadIds.get(retried)}`,
    ]);

    // The number leaving the list gives the lead listed mid-call the retry it was waiting for.
    await w.request("DELETE", `/api/v1/dnc/${encodeURIComponent(inFlight)}`, { token: admin });
    expect((await campaign()).stats.leads_by_state).toMatchObject({ DoNotCall: 1, Retry: 1 });
  });

  test("a call's disposition waits behind its end while the end is retried", async () => {
    const { w, admin, clock, start, register } = await setUp();
    let failed = false;
    const r = receiver(async () => {
      if (failed) return new Response("ok");
      failed = true;
      return new Response("down", { status: 503 });
    });
    receivers.push(r);
    await register(r.url, ["call.ended", "call.dispositioned"]);
    const { agent, nodeKey } = await readyAgentOn(
      w,
      admin,
      { name: "Retried" },
      `phone,timezone\n+14155552681,${ZONE}\n`,
    );
    const claimed = await w.request("POST", "/api/v1/nodes/jobs/claim", {
      token: nodeKey,
      body: { max: 1 },
    });
    const callId = claimed.body.data.jobs[0]?.call_id as string;
    for (const body of [{ type: "answered" }, { type: "ended", hangup_cause: "NORMAL_CLEARING" }])
      await w.request("POST", `/api/v1/nodes/calls/${callId}/events`, {
        token: nodeKey,
        body: { ...body, at: new Date(clock.now()).toISOString() },
      });
    expect(
      (
        await w.request("POST", `/api/v1/calls/${callId}/disposition`, {
          token: agent,
          body: { disposition: "completed" },
        })
      ).status,
    ).toBe(200);
    start();
    await until(() => r.received.length === 1, "the end's first attempt");
    await Bun.sleep(300);
    // The disposition is held back behind the end that failed.
    expect(r.events().map((e) => e.type)).toEqual(["call.ended"]);
    clock.advance(30_000);
    w.deps.webhooks.dispatcher.wake();
    await until(() => r.received.length === 3, "the end again, then the disposition");
    expect(r.events().map((e) => e.type)).toEqual([
      "call.ended",
      "call.ended",
      "call.dispositioned",
    ]);
    expect(r.received[1]?.headers.get("webhook-id")).toBe(r.received[0]?.headers.get("webhook-id"));
    expect(r.received[1]?.body).toBe(r.received[0]?.body);
  });
});
