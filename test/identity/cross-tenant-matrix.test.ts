import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { settleAttempts } from "../../db/queries/webhooks.ts";
import { webhookEvents } from "../../db/schema/index.ts";
import { encodeWav } from "../../src/media/wav.ts";
import { createWorkspace, type RequestOptions } from "../helpers/app.ts";
import { importFile } from "../helpers/leads.ts";
import { listenOnLoopback, openSocket } from "../helpers/sockets.ts";

/**
 * Every route and socket message that takes an id, called by every principal of tenant A
 * (each role, a key with write on each resource, a node key) with the ids of tenant B's
 * objects: each answer is 403 or 404, and B's objects read the same before and after. The
 * routes come from the app, so a new route with an id is covered without a line here.
 */
type Workspace = Awaited<ReturnType<typeof createWorkspace>>;
let w: Workspace;
let listening: ReturnType<typeof listenOnLoopback>;

/** 2026-03-02T17:00Z is noon in New York: inside the default calling window. */
const NOON_NEW_YORK = Date.parse("2026-03-02T17:00:00Z");
const B_PHONE = "+12125550123";
/** A tenth of a second of silence: a recording that would be accepted. */
const MESSAGE = encodeWav(new Int16Array(800), 8000);

/** B's objects, by the name of the path parameter that takes them. */
const b: Record<string, string> = {};
let bAdmin: string;
let bAgent: string;
let bNodeKey: string;
const attackers = new Map<string, string>();
let aNodeKey: string;
let aCampaign: string;

const at = () => new Date(w.clock.now()).toISOString();

beforeAll(async () => {
  w = await createWorkspace();
  w.clock.advance(NOON_NEW_YORK - w.clock.now());

  const beta = await w.tenant("beta.test", "Beta");
  b.tenant = beta.id;
  await w.user(beta.id, "admin@beta.test", "admin");
  bAdmin = await w.login("admin@beta.test", undefined, "beta.test");
  b.user = (await w.user(beta.id, "agent@beta.test", "agent", { mustChangePassword: false })).id;
  bAgent = await w.login("agent@beta.test", undefined, "beta.test");
  const as =
    (token: string) =>
    (method: string, path: string, options: RequestOptions = {}) =>
      w.request(method, path, { token, ...options });
  const asB = as(bAdmin);

  b.campaign = (
    await asB("POST", "/api/v1/campaigns", { body: { name: "Beta's" } })
  ).body.data.campaign.id;
  const list = await asB("POST", `/api/v1/campaigns/${b.campaign}/lead-lists`, {
    body: { name: "Beta list", caller_id: "+14155550100" },
  });
  b.list = list.body.data.lead_list.id;
  const imported = await importFile(
    w,
    `/api/v1/campaigns/${b.campaign}/lead-lists/${b.list}/import`,
    bAdmin,
    `phone,timezone\n${B_PHONE},America/New_York\n+12125550124,America/New_York\nbad,Nowhere\n`,
  );
  b.import = imported.body.data.import.id;
  const leads = await asB("GET", `/api/v1/campaigns/${b.campaign}/lead-lists/${b.list}/leads`);
  b.lead = leads.body.data.items[0].id;
  b.apiKey = (
    await asB("POST", "/api/v1/api-keys", { body: { name: "beta key", scopes: { cdrs: "read" } } })
  ).body.data.api_key.id;
  const node = await asB("POST", "/api/v1/edge-nodes", {
    body: { name: "beta edge", max_concurrent_calls: 5 },
  });
  b.node = node.body.data.edge_node.id;
  bNodeKey = node.body.data.key;
  await asB("PUT", `/api/v1/campaigns/${b.campaign}/messages/abandon`, {
    headers: { "content-type": "audio/wav" },
    rawBody: MESSAGE,
  });
  b.kind = "abandon";
  const hook = await asB("POST", "/api/v1/webhooks", {
    body: { url: "https://93.184.216.34/hooks", event_types: ["dnc.added"] },
  });
  b.webhook = hook.body.data.webhook.id;
  await asB("POST", "/api/v1/dnc", { body: { phone: "+12125550199" } });
  b.phone = encodeURIComponent("+12125550199");
  // An attempt in B's delivery log, as the dispatcher would have written it.
  const [event] = await w.deps.db
    .select()
    .from(webhookEvents)
    .where(eq(webhookEvents.tenantId, beta.id));
  const webhookId = b.webhook;
  if (!event || !webhookId) throw new Error("B's event is not in the outbox");
  b.webhookAttempt = Bun.randomUUIDv7();
  await settleAttempts(w.deps.db, {
    settled: [
      {
        delivery: {
          id: Bun.randomUUIDv7(),
          event_id: event.eventId,
          tenant_id: beta.id,
          endpoint_id: webhookId,
          type: event.type,
          order_key: event.eventId,
          payload: { type: event.type, timestamp: event.createdAt.toISOString(), data: {} },
          attempts: 1,
          created_at: event.createdAt.toISOString(),
          event_seq: event.seq,
          body: null,
        },
        outcome: { kind: "delivered" },
        fresh: true,
        attempt: {
          id: b.webhookAttempt,
          tenantId: beta.id,
          endpointId: webhookId,
          attempt: 1,
          attemptedAt: new Date(w.clock.now()),
          durationMs: 5,
          responseStatus: 200,
          responseBody: "ok",
          error: null,
        },
      },
    ],
  });

  // A live call of B: connected to B's agent, so that dispositions and events have a target.
  await asB("POST", `/api/v1/campaigns/${b.campaign}/status`, { body: { action: "start" } });
  await w.request("POST", "/api/v1/agents/me/state", {
    token: bAgent,
    body: { state: "ready", campaign_id: b.campaign },
  });
  const claim = await w.request("POST", "/api/v1/nodes/jobs/claim", {
    token: bNodeKey,
    body: { max: 1 },
  });
  b.call = claim.body.data.jobs[0].call_id;
  for (const type of ["ringing", "answered"]) {
    await w.request("POST", `/api/v1/nodes/calls/${b.call}/events`, {
      token: bNodeKey,
      body: { type, at: at() },
    });
  }

  // Tenant A's principals.
  const adminA = await w.login("admin@acme.test");
  attackers.set("admin", adminA);
  for (const role of ["agent", "supervisor"] as const) {
    await w.user(w.acme.id, `${role}@acme.test`, role);
    attackers.set(role, await w.login(`${role}@acme.test`));
  }
  const allWrite = {
    campaigns: "write",
    leads: "write",
    cdrs: "write",
    users: "write",
    webhooks: "write",
  };
  for (const [name, scopes] of [
    ...Object.keys(allWrite).map((resource) => [resource, { [resource]: "write" }] as const),
    ["all", allWrite] as const,
  ]) {
    const key = await w.request("POST", "/api/v1/api-keys", {
      token: adminA,
      body: { name: `key ${name}`, scopes, rate_limit_per_minute: 10_000 },
    });
    attackers.set(`key:${name}`, key.body.data.key);
  }
  aNodeKey = (
    await w.request("POST", "/api/v1/edge-nodes", {
      token: adminA,
      body: { name: "acme edge", max_concurrent_calls: 5 },
    })
  ).body.data.key;
  aCampaign = (
    await w.request("POST", "/api/v1/campaigns", { token: adminA, body: { name: "Acme's" } })
  ).body.data.campaign.id;
  listening = listenOnLoopback(w);
});

afterAll(() => listening?.stop());

/** What B can see of its own objects: must not change whatever A does. */
async function bState() {
  const get = async (path: string) => {
    const response = await w.request("GET", path, { token: bAdmin });
    return { path, status: response.status, data: response.body.data };
  };
  const lists = `/api/v1/campaigns/${b.campaign}/lead-lists`;
  return Promise.all([
    get(`/api/v1/campaigns/${b.campaign}`),
    get(`/api/v1/campaigns/${b.campaign}/history`),
    get(`/api/v1/campaigns/${b.campaign}/messages`),
    get(lists),
    get(`${lists}/${b.list}/leads`),
    get(`${lists}/${b.list}/imports`),
    get("/api/v1/users"),
    get("/api/v1/api-keys"),
    get("/api/v1/edge-nodes"),
    get("/api/v1/cdrs"),
    get("/api/v1/dnc"),
    get(`/api/v1/webhooks/${b.webhook}`),
    get(`/api/v1/webhooks/${b.webhook}/deliveries`),
    get("/api/v1/agents"),
  ]);
}

/** A body that would pass validation, so that the answer is about the id, not the body. */
function bodyFor(method: string, path: string): RequestOptions {
  if (path.endsWith("/import")) {
    const form = new FormData();
    form.append("phone_column", "phone");
    form.append("timezone_column", "timezone");
    form.append("file", new Blob(["phone,timezone\n+12125550177,America/New_York\n"]), "a.csv");
    return { rawBody: form };
  }
  const bodies: Record<string, unknown> = {
    "PATCH /api/v1/tenants/:id": { rate_limit_per_minute: 5 },
    "PATCH /api/v1/users/:id": { status: "disabled" },
    "PATCH /api/v1/campaigns/:id": { name: "taken over", version: 1 },
    "POST /api/v1/campaigns/:id/status": { action: "stop" },
    "POST /api/v1/campaigns/:id/lead-lists": { name: "planted", caller_id: "+14155550100" },
    "POST /api/v1/nodes/calls/:call_id/events": { type: "ended", at: at(), hangup_cause: "X" },
    "POST /api/v1/calls/:call_id/disposition": { disposition: "do_not_call" },
    "POST /api/v1/calls/:call_id/transfer": { phone: "+14155550199" },
    "POST /api/v1/agents/:user_id/state": { state: "paused" },
    "PATCH /api/v1/webhooks/:id": { url: "https://93.184.216.34/planted", enabled: true },
    "POST /api/v1/webhooks/:id/rotate-secret": { overlap_seconds: 0 },
  };
  if (method === "PUT" && path.endsWith("/messages/:kind"))
    return { headers: { "content-type": "audio/wav" }, rawBody: MESSAGE };
  const body = bodies[`${method} ${path}`];
  return body === undefined ? {} : { body };
}

const PARAM_OBJECT: Record<string, string> = {
  id: "",
  list_id: "list",
  lead_id: "lead",
  import_id: "import",
  call_id: "call",
  phone: "phone",
  campaign_id: "campaign",
  kind: "kind",
  user_id: "user",
  delivery_id: "webhookAttempt",
};

/** The route's path with B's objects in it; `:id` is the object the route's family names. */
function pathWithBsIds(path: string) {
  const idObject = path.startsWith("/api/v1/tenants")
    ? "tenant"
    : path.startsWith("/api/v1/users")
      ? "user"
      : path.startsWith("/api/v1/api-keys")
        ? "apiKey"
        : path.startsWith("/api/v1/edge-nodes")
          ? "node"
          : path.startsWith("/api/v1/webhooks")
            ? "webhook"
            : "campaign";
  return path.replace(/:([a-z_]+)/g, (_, name: string) => {
    const object = name === "id" ? idObject : PARAM_OBJECT[name];
    const value = object === undefined ? undefined : b[object];
    if (value === undefined) throw new Error(`no object of B for ${name} in ${path}`);
    return value;
  });
}

const routesWithIds = () =>
  w.app.routes
    .filter((route) => route.path.includes("/:"))
    .map((route) => ({
      method: route.method,
      path: route.path,
      permission: String(
        (route.hooks as { detail?: Record<string, unknown> }).detail?.["x-permission"],
      ),
    }));

describe("cross-tenant matrix", () => {
  test("every route that takes an id refuses B's objects to every principal of A", async () => {
    const before = await bState();
    const routes = routesWithIds();
    expect(routes.length).toBeGreaterThan(15);
    for (const route of routes) {
      const path = pathWithBsIds(route.path);
      const principals =
        route.permission === "node" ? [["node", aNodeKey] as const] : [...attackers.entries()];
      for (const [who, token] of principals) {
        const response = await w.request(route.method, path, {
          token,
          ...bodyFor(route.method, route.path),
        });
        const label = `${who} ${route.method} ${route.path}`;
        expect([label, [403, 404].includes(response.status)]).toEqual([label, true]);
      }
    }
    expect(await bState()).toEqual(before);
  });

  test("ids in bodies and queries: agent state, CDR filters and the platform's tenant_id", async () => {
    const before = await bState();
    for (const state of ["ready", "paused", "offline"]) {
      const response = await w.request("POST", "/api/v1/agents/me/state", {
        token: attackers.get("agent"),
        body: { state, campaign_id: b.campaign },
      });
      expect([state, response.status]).toEqual([state, 404]);
    }
    for (const [who, token] of attackers) {
      if (
        who === "agent" ||
        who === "key:campaigns" ||
        who === "key:leads" ||
        who === "key:users" ||
        who === "key:webhooks"
      )
        continue;
      for (const filter of [`campaign_id=${b.campaign}`, `lead_id=${b.lead}`]) {
        const cdrs = await w.request("GET", `/api/v1/cdrs?${filter}`, { token });
        expect([who, filter, cdrs.status, cdrs.body.data?.items]).toEqual([who, filter, 200, []]);
      }
      const foreign = await w.request("GET", `/api/v1/campaigns?tenant_id=${b.tenant}`, { token });
      expect([who, foreign.status]).toEqual([who, 403]);
    }
    expect(await bState()).toEqual(before);
  });

  test("socket messages naming B's campaign or call reach nothing of B", async () => {
    const before = await bState();
    const supervisor = await openSocket(
      listening.wsUrl("/ws/supervisor", attackers.get("admin") as string),
    );
    await supervisor.next("snapshot");
    supervisor.send(JSON.stringify({ type: "subscribe", campaign_ids: [b.campaign] }));
    expect((await supervisor.next("error")).campaign_ids).toEqual([b.campaign]);
    expect((await supervisor.next("subscribed")).campaign_ids).toEqual([]);

    const agent = await openSocket(listening.wsUrl("/ws/agent", attackers.get("agent") as string));
    await agent.next("agent.state");
    for (const message of [
      { type: "ready", campaign_id: b.campaign },
      { type: "pause", campaign_id: b.campaign },
      { type: "disposition", call_id: b.call, disposition: "completed" },
    ]) {
      agent.send(JSON.stringify(message));
      const error = await agent.next("error");
      expect([message.type, ["not_found", "forbidden"].includes(error.code)]).toEqual([
        message.type,
        true,
      ]);
    }
    // B's call goes on: its events reach B's supervisors, never A's socket.
    await w.request("POST", `/api/v1/campaigns/${aCampaign}/status`, {
      token: attackers.get("admin"),
      body: { action: "start" },
    });
    await Bun.sleep(300);
    const leaked = [...supervisor.messages, ...agent.messages].filter((message) =>
      JSON.stringify(message).includes(b.campaign as string),
    );
    expect(leaked).toEqual([]);
    supervisor.socket.close();
    agent.socket.close();
    expect(await bState()).toEqual(before);
  });
});
