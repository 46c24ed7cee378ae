import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { createWorkspace } from "../helpers/app.ts";
import { listenOnLoopback, type Message, openSocket } from "../helpers/sockets.ts";

type Workspace = Awaited<ReturnType<typeof createWorkspace>>;
let w: Workspace;
let listening: ReturnType<typeof listenOnLoopback>;
let acmeAdmin: string;
let otherAdmin: string;
let otherTenantId: string;
let acmeCampaign: string;
let otherCampaign: string;

const createCampaign = async (token: string, name: string) =>
  (await w.request("POST", "/api/v1/campaigns", { token, body: { name } })).body.data.campaign
    .id as string;

const changeStatus = (token: string, campaignId: string, action: string) =>
  w.request("POST", `/api/v1/campaigns/${campaignId}/status`, { token, body: { action } });

/** Resolves with the close event's code and reason, or undefined if the socket stays open. */
const closedWithin = (socket: WebSocket, ms: number) =>
  new Promise<{ code: number; reason: string } | undefined>((resolve) => {
    if (socket.readyState === WebSocket.CLOSED) return resolve({ code: -1, reason: "" });
    socket.addEventListener("close", (event) =>
      resolve({ code: event.code, reason: event.reason }),
    );
    setTimeout(() => resolve(undefined), ms);
  });

const ofCampaign = (messages: Message[], campaignId: string) =>
  messages.filter(
    (message) =>
      message.campaign_id === campaignId ||
      message.call?.campaign_id === campaignId ||
      message.agent?.campaign_id === campaignId,
  );

beforeEach(async () => {
  w = await createWorkspace();
  acmeAdmin = await w.login("admin@acme.test");
  const other = await w.tenant("other.test", "Other");
  otherTenantId = other.id;
  await w.user(other.id, "admin@other.test", "admin");
  otherAdmin = await w.login("admin@other.test");
  acmeCampaign = await createCampaign(acmeAdmin, "Acme's");
  otherCampaign = await createCampaign(otherAdmin, "Other's");
  listening = listenOnLoopback(w);
});

afterEach(() => listening.stop());

describe("a supervisor's subscribe stays in its tenant", () => {
  test("another tenant's and unknown campaign ids are left out and answered with an error; nothing of theirs arrives", async () => {
    const socket = await openSocket(listening.wsUrl("/ws/supervisor", otherAdmin));
    await socket.next("snapshot");
    const unknown = crypto.randomUUID();
    socket.send(
      JSON.stringify({ type: "subscribe", campaign_ids: [acmeCampaign, unknown, otherCampaign] }),
    );
    const error = await socket.next("error");
    expect(error).toMatchObject({ code: "not_found" });
    expect([...error.campaign_ids].sort()).toEqual([acmeCampaign, unknown].sort());
    expect(await socket.next("subscribed")).toEqual({
      type: "subscribed",
      campaign_ids: [otherCampaign],
    });

    expect((await changeStatus(acmeAdmin, acmeCampaign, "start")).status).toBe(200);
    expect((await changeStatus(otherAdmin, otherCampaign, "start")).status).toBe(200);
    const own = await socket.next("campaign.status");
    expect(own.campaign_id).toBe(otherCampaign);
    await Bun.sleep(400);
    expect(ofCampaign(socket.messages, acmeCampaign)).toEqual([]);
    socket.socket.close();
  });

  test("a platform admin watching a tenant follows only that tenant's campaigns", async () => {
    const rootToken = await w.login("root@platform.test");
    const url = `${listening.wsUrl("/ws/supervisor", rootToken)}&tenant_id=${otherTenantId}`;
    const socket = await openSocket(url);
    await socket.next("snapshot");
    socket.send(JSON.stringify({ type: "subscribe", campaign_ids: [acmeCampaign] }));
    expect((await socket.next("error")).campaign_ids).toEqual([acmeCampaign]);
    expect((await socket.next("subscribed")).campaign_ids).toEqual([]);
    await changeStatus(acmeAdmin, acmeCampaign, "start");
    await Bun.sleep(300);
    expect(ofCampaign(socket.messages, acmeCampaign)).toEqual([]);
    socket.socket.close();
  });

  test("a subscribe replaces the campaigns followed before, so a socket follows at most one list", async () => {
    const second = await createCampaign(acmeAdmin, "Second");
    const socket = await openSocket(listening.wsUrl("/ws/supervisor", acmeAdmin));
    await socket.next("snapshot");
    socket.send(JSON.stringify({ type: "subscribe", campaign_ids: [acmeCampaign] }));
    expect((await socket.next("subscribed")).campaign_ids).toEqual([acmeCampaign]);
    socket.send(JSON.stringify({ type: "subscribe", campaign_ids: [second] }));
    expect((await socket.next("subscribed")).campaign_ids).toEqual([second]);
    await changeStatus(acmeAdmin, acmeCampaign, "start");
    await changeStatus(acmeAdmin, second, "start");
    expect((await socket.next("campaign.status")).campaign_id).toBe(second);
    await Bun.sleep(300);
    expect(socket.messages.filter((m) => m.type === "campaign.status")).toEqual([]);
    socket.socket.close();
  });

  test("more campaign ids than a socket may follow are refused", async () => {
    const socket = await openSocket(listening.wsUrl("/ws/supervisor", acmeAdmin));
    await socket.next("snapshot");
    const ids = Array.from({ length: 501 }, () => crypto.randomUUID());
    socket.send(JSON.stringify({ type: "subscribe", campaign_ids: ids }));
    expect((await socket.next("error")).code).toBe("invalid_request");
    socket.socket.close();
  });
});

describe("agents name only their own tenant's campaigns", () => {
  test("every state refuses another tenant's campaign over HTTP, and the board stays clean", async () => {
    await w.user(otherTenantId, "agent@other.test", "agent");
    const agent = await w.login("agent@other.test");
    for (const state of ["ready", "paused", "offline"]) {
      for (const campaignId of [acmeCampaign, crypto.randomUUID(), "not-a-uuid"]) {
        const response = await w.request("POST", "/api/v1/agents/me/state", {
          token: agent,
          body: { state, campaign_id: campaignId },
        });
        expect([400, 404]).toContain(response.status);
      }
    }
    const paused = await w.request("POST", "/api/v1/agents/me/state", {
      token: agent,
      body: { state: "paused" },
    });
    expect(paused.body.data.agent.campaign_id).toBeNull();
    const acmeBoard = await w.request("GET", "/api/v1/agents", { token: acmeAdmin });
    expect(acmeBoard.body.data.items).toEqual([]);
    expect(w.deps.dialer.agents.inCampaign(acmeCampaign)).toEqual([]);
    const stats = await w.request("GET", `/api/v1/campaigns/${acmeCampaign}`, {
      token: acmeAdmin,
    });
    expect(Object.values(stats.body.data.campaign.stats.agents ?? {}).every((n) => n === 0)).toBe(
      true,
    );
  });

  test("the socket's ready and pause refuse another tenant's campaign", async () => {
    await w.user(otherTenantId, "agent@other.test", "agent");
    const token = await w.login("agent@other.test");
    const socket = await openSocket(listening.wsUrl("/ws/agent", token));
    await socket.next("agent.state");
    socket.send(JSON.stringify({ type: "ready", campaign_id: acmeCampaign }));
    expect((await socket.next("error")).code).toBe("not_found");
    socket.send(JSON.stringify({ type: "pause", campaign_id: acmeCampaign }));
    expect((await socket.next("error")).code).toBe("not_found");
    socket.send(JSON.stringify({ type: "ready", campaign_id: otherCampaign }));
    expect((await socket.next("ack")).for).toBe("ready");
    expect(w.deps.dialer.agents.inCampaign(acmeCampaign)).toEqual([]);
    socket.socket.close();
  });
});

describe("a change to a user reaches its open sockets", () => {
  const patchUser = (userId: string, body: Record<string, unknown>) =>
    w.request("PATCH", `/api/v1/users/${userId}`, { token: acmeAdmin, body });

  test("disabling an agent closes its socket with 4003", async () => {
    const user = await w.user(w.acme.id, "agent@acme.test", "agent");
    const socket = await openSocket(listening.wsUrl("/ws/agent", await w.login("agent@acme.test")));
    await socket.next("agent.state");
    const closed = closedWithin(socket.socket, 2000);
    expect((await patchUser(user.id, { status: "disabled" })).status).toBe(200);
    expect(await closed).toEqual({ code: 4003, reason: "account disabled" });
  });

  test("changing a supervisor's role closes its socket with 4004", async () => {
    const user = await w.user(w.acme.id, "lead@acme.test", "supervisor");
    const token = await w.login("lead@acme.test");
    const socket = await openSocket(listening.wsUrl("/ws/supervisor", token));
    await socket.next("snapshot");
    const closed = closedWithin(socket.socket, 2000);
    expect((await patchUser(user.id, { role: "agent" })).status).toBe(200);
    expect(await closed).toEqual({ code: 4004, reason: "role changed" });
  });

  test("a message that arrives after the user was disabled is refused", async () => {
    const user = await w.user(w.acme.id, "agent@acme.test", "agent");
    const socket = await openSocket(listening.wsUrl("/ws/agent", await w.login("agent@acme.test")));
    await socket.next("agent.state");
    await w.request("POST", `/api/v1/campaigns/${acmeCampaign}/status`, {
      token: acmeAdmin,
      body: { action: "start" },
    });
    const closed = closedWithin(socket.socket, 2000);
    // The change reaches the tenant's memory first; the socket's own close follows it.
    await patchUser(user.id, { status: "disabled" });
    socket.send(JSON.stringify({ type: "ready", campaign_id: acmeCampaign }));
    expect((await closed)?.code).toBe(4003);
    expect(socket.messages.filter((m) => m.type === "ack")).toEqual([]);
    expect(w.deps.dialer.agents.get(user.id)?.state ?? "offline").toBe("offline");
  });
});
