import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { closeOwnerEnd } from "../../src/cluster/owner.ts";
import { createWorkspace } from "../helpers/app.ts";
import { importFile } from "../helpers/leads.ts";
import { startLeasedProcess } from "../helpers/leased-process.ts";
import { awakeZone } from "../helpers/zones.ts";

/**
 * Two processes' worth of services on one PostgreSQL database, each listening on loopback
 * with its own leases: a campaign's commands sent to either run once, on its owner, and
 * answer the same bytes wherever they were sent.
 */
const enabled = Boolean(process.env.DATABASE_URL);

type Workspace = Awaited<ReturnType<typeof createWorkspace>>;
type Process = Awaited<ReturnType<typeof startLeasedProcess>>;
let w: Workspace;
let token: string;
const processes: Process[] = [];

async function startProcess(): Promise<Process> {
  const process = await startLeasedProcess(w.clock);
  processes.push(process);
  return process;
}

const call = async (
  process: Process,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
) => {
  const response = await fetch(`${process.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
};

beforeEach(async () => {
  if (!enabled) return;
  w = await createWorkspace();
  token = await w.login("admin@acme.test");
});

afterEach(async () => {
  for (const process of processes.splice(0)) await process.stop();
});

describe.skipIf(!enabled)("a campaign's commands reach its owner", () => {
  test("a status change sent to a process that does not own the campaign runs on the owner", async () => {
    const [a, b] = [await startProcess(), await startProcess()] as [Process, Process];
    const created = await call(a, "POST", "/api/v1/campaigns", { name: "spring" });
    const id = JSON.parse(created.text).data.campaign.id as string;
    const started = await call(
      a,
      "POST",
      `/api/v1/campaigns/${id}/status`,
      { action: "start" },
      {
        "idempotency-key": "start-1",
      },
    );
    expect(started.status).toBe(200);
    expect(a.deps.campaigns.leases.holds(id)).toBe(true);
    const paused = await call(
      b,
      "POST",
      `/api/v1/campaigns/${id}/status`,
      { action: "pause" },
      {
        "idempotency-key": "pause-1",
      },
    );
    expect(paused.status).toBe(200);
    expect(JSON.parse(paused.text).data.campaign.status).toBe("paused");
    // B never took the campaign; A's actor holds the change.
    expect(b.deps.campaigns.leases.holds(id)).toBe(false);
    expect(a.deps.campaigns.peek(id)?.campaign.status).toBe("paused");
    // A replay through either process is the first answer, byte for byte.
    for (const process of [a, b]) {
      const replay = await call(
        process,
        "POST",
        `/api/v1/campaigns/${id}/status`,
        { action: "pause" },
        {
          "idempotency-key": "pause-1",
        },
      );
      expect(replay.text).toBe(paused.text);
      expect(replay.headers.get("idempotent-replayed")).toBe("true");
    }
    // Refusals come back as the owner's envelope.
    const refused = await call(b, "POST", `/api/v1/campaigns/${id}/status`, { action: "pause" });
    expect(refused.status).toBe(409);
    expect(JSON.parse(refused.text).code).toBe("invalid_transition");
    // Another tenant's campaign is not found through either process.
    const other = await w.tenant("globex.test");
    await w.user(other.id, "boss@globex.test", "admin");
    const otherToken = await w.login("boss@globex.test");
    const foreign = await fetch(`${b.url}/api/v1/campaigns/${id}/status`, {
      method: "POST",
      headers: { authorization: `Bearer ${otherToken}`, "content-type": "application/json" },
      body: JSON.stringify({ action: "start" }),
    });
    expect(foreign.status).toBe(404);
    const history = await call(b, "GET", `/api/v1/campaigns/${id}/history`);
    expect(
      JSON.parse(history.text).data.items.map((row: { action: string }) => row.action),
    ).toEqual(["pause", "start"]);
  });

  test("an agent's state sent to a process that does not own the campaign is made by the owner, and both boards hold it at the reply", async () => {
    const [a, b] = [await startProcess(), await startProcess()] as [Process, Process];
    const created = await call(a, "POST", "/api/v1/campaigns", { name: "agents" });
    const id = JSON.parse(created.text).data.campaign.id as string;
    await call(a, "POST", `/api/v1/campaigns/${id}/status`, { action: "start" });
    expect(a.deps.campaigns.leases.holds(id)).toBe(true);
    const ready = await call(b, "POST", "/api/v1/agents/me/state", {
      state: "ready",
      campaign_id: id,
    });
    expect(ready.status).toBe(200);
    const admin = w.admin.id;
    // The owner reserves agents for its campaign's calls: it made the change.
    expect(a.deps.dialer.agents.get(admin)).toMatchObject({ state: "ready", campaignId: id });
    expect(b.deps.dialer.agents.get(admin)).toEqual(a.deps.dialer.agents.get(admin));
    const mine = await call(b, "GET", "/api/v1/agents/me");
    expect(JSON.parse(mine.text).data.agent).toEqual(JSON.parse(ready.text).data.agent);
  });

  test("one key sent to two processes at once executes once, with one answer", async () => {
    const [a, b] = [await startProcess(), await startProcess()] as [Process, Process];
    const created = await call(a, "POST", "/api/v1/campaigns", { name: "autumn" });
    const id = JSON.parse(created.text).data.campaign.id as string;
    const replies = await Promise.all(
      [a, b, a, b, a, b].map((process) =>
        call(
          process,
          "POST",
          `/api/v1/campaigns/${id}/status`,
          { action: "start" },
          {
            "idempotency-key": "together",
          },
        ),
      ),
    );
    expect(new Set(replies.map((reply) => reply.status))).toEqual(new Set([200]));
    expect(new Set(replies.map((reply) => reply.text)).size).toBe(1);
    const history = await call(a, "GET", `/api/v1/campaigns/${id}/history`);
    expect(JSON.parse(history.text).data.items).toHaveLength(1);
  });

  test("a draining process takes no campaign again: its commands go to the new owner, and the others' links to it close", async () => {
    const [a, b] = [await startProcess(), await startProcess()] as [Process, Process];
    const created = await call(a, "POST", "/api/v1/campaigns", { name: "autumn" });
    const id = JSON.parse(created.text).data.campaign.id as string;
    const status = async (via: Process, action: string) => {
      const reply = await call(via, "POST", `/api/v1/campaigns/${id}/status`, { action });
      return { status: reply.status, campaign: JSON.parse(reply.text).data?.campaign?.status };
    };
    expect(await status(a, "start")).toEqual({ status: 200, campaign: "running" });
    // B forwards to A, over a link it keeps open.
    expect(await status(b, "pause")).toEqual({ status: 200, campaign: "paused" });
    expect(a.server.pendingWebSockets).toBe(1);

    await a.leases.releaseAll();
    // A request still reaching A waits for another owner: A does not take the campaign back.
    const throughA = status(a, "start");
    await Bun.sleep(150);
    expect(a.leases.holds(id)).toBe(false);
    // B's sweep takes the campaign nobody holds; A's request then runs there.
    expect(await b.deps.campaigns.adoptOrphans()).toEqual([id]);
    expect(await throughA).toEqual({ status: 200, campaign: "running" });
    expect(a.leases.holds(id)).toBe(false);
    expect(b.deps.campaigns.peek(id)?.campaign.status).toBe("running");
    // B's command no longer goes to A: A answers "elsewhere" and B runs it.
    expect(await status(b, "pause")).toEqual({ status: 200, campaign: "paused" });

    // A server stops only once its sockets are closed: the drain closes B's link to A.
    await closeOwnerEnd(a.deps);
    for (let wait = 0; wait < 100 && a.server.pendingWebSockets > 0; wait++) await Bun.sleep(10);
    expect(a.server.pendingWebSockets).toBe(0);
    // A's own requests go to B over a new link.
    expect(await status(a, "start")).toEqual({ status: 200, campaign: "running" });
  });

  test("a node's events sent to a process that does not run the campaign reach its owner; another node's are 404", async () => {
    const [a, b] = [await startProcess(), await startProcess()] as [Process, Process];
    const json = async (reply: Promise<{ status: number; text: string }>) => {
      const { status, text } = await reply;
      return { status, body: JSON.parse(text) };
    };
    const campaign = (
      await json(
        call(a, "POST", "/api/v1/campaigns", {
          name: "events",
          regulatory_profile: "none",
          calling_window: { start: "00:00", end: "23:59" },
        }),
      )
    ).body.data.campaign;
    const list = (
      await json(
        call(a, "POST", `/api/v1/campaigns/${campaign.id}/lead-lists`, {
          name: "L",
          caller_id: "+14155550100",
        }),
      )
    ).body.data.lead_list;
    await importFile(
      w,
      `/api/v1/campaigns/${campaign.id}/lead-lists/${list.id}/import`,
      token,
      `phone,timezone\n+14155552671,${awakeZone()}\n`,
    );
    const nodeKey = async (name: string) =>
      (await json(call(a, "POST", "/api/v1/edge-nodes", { name, max_concurrent_calls: 1 }))).body
        .data.key as string;
    const [mine, theirs] = [await nodeKey("edge"), await nodeKey("edge-2")];
    await call(a, "POST", `/api/v1/campaigns/${campaign.id}/status`, { action: "start" });
    await call(a, "POST", "/api/v1/agents/me/state", { state: "ready", campaign_id: campaign.id });
    expect(a.deps.campaigns.leases.holds(campaign.id)).toBe(true);
    const claimed = await json(
      call(a, "POST", "/api/v1/nodes/jobs/claim", { max: 1 }, { authorization: `Bearer ${mine}` }),
    );
    const callId = claimed.body.data.jobs[0]?.call_id as string;
    expect(callId).toBeDefined();
    const event = (key: string, type: string, extra: Record<string, unknown> = {}) =>
      json(
        call(
          b,
          "POST",
          `/api/v1/nodes/calls/${callId}/events`,
          { type, at: new Date(w.clock.now()).toISOString(), ...extra },
          { authorization: `Bearer ${key}` },
        ),
      );

    expect((await event(theirs, "ringing")).status).toBe(404);
    expect(b.deps.campaigns.leases.holds(campaign.id)).toBe(false);
    const ringing = await event(mine, "ringing");
    expect(ringing.status).toBe(200);
    expect(ringing.body.data.call.status).toBe("ringing");
    const ended = await event(mine, "ended", { hangup_cause: "NO_ANSWER" });
    expect(ended.body.data.call.status).toBe("ended");
    // A repeat is answered from the ended call where it lands, the same as the first.
    const again = await event(mine, "ended", { hangup_cause: "NO_ANSWER" });
    expect(again).toEqual(ended);
    expect((await event(theirs, "ended", { hangup_cause: "NO_ANSWER" })).status).toBe(404);
  });

  test("when the owner is gone, its campaign moves to the next process once its lease lapses", async () => {
    const [a, b] = [await startProcess(), await startProcess()] as [Process, Process];
    const created = await call(a, "POST", "/api/v1/campaigns", { name: "winter" });
    const id = JSON.parse(created.text).data.campaign.id as string;
    expect(
      (await call(a, "POST", `/api/v1/campaigns/${id}/status`, { action: "start" })).status,
    ).toBe(200);
    await a.stop();
    const began = performance.now();
    let paused = await call(b, "POST", `/api/v1/campaigns/${id}/status`, { action: "pause" });
    while (paused.status === 503 && performance.now() - began < 10_000)
      paused = await call(b, "POST", `/api/v1/campaigns/${id}/status`, { action: "pause" });
    expect(paused.status).toBe(200);
    expect(b.deps.campaigns.leases.holds(id)).toBe(true);
    expect(performance.now() - began).toBeLessThan(10_000);
  }, 20_000);
});

describe("the owners' command socket", () => {
  test("opens only with a fresh handshake signed with the shared secret; anything else is a bare 404", async () => {
    const h = await createWorkspace();
    const now = String(Date.now());
    const stale = String(Date.now() - 60_000);
    const signed = (sentAt: string) =>
      new Bun.CryptoHasher("sha256", h.deps.tokens.clusterKey)
        .update(`link:${sentAt}`)
        .digest("hex");
    const attempts: Record<string, string>[] = [
      {},
      { "x-dialer-sent-at": now, "x-dialer-signature": "0".repeat(64) },
      { "x-dialer-sent-at": stale, "x-dialer-signature": signed(stale) },
    ];
    // A good handshake is what the tests above open their links with, over real sockets.
    for (const headers of attempts) {
      const response = await h.app.handle(
        new Request("http://localhost/internal/v1/commands", { headers }),
      );
      expect(response.status).toBe(404);
      expect(await response.text()).toBe("");
    }
  });
});
