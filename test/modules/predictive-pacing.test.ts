import { describe, expect, test } from "bun:test";
import { calls, cdrs } from "../../db/schema/calls.ts";
import { createWorkspace } from "../helpers/app.ts";
import { importFile } from "../helpers/leads.ts";

/** 2026-03-02T17:00Z is noon in New York: inside the default 08:00–21:00 window. */
const NOON_NEW_YORK = Date.parse("2026-03-02T17:00:00Z");

type Workspace = Awaited<ReturnType<typeof createWorkspace>>;
type Job = { call_id: string };

interface History {
  /** Finished calls before the test's own. */
  calls: number;
  /** Every `1 / answerRate`-th call a person answers. */
  answerRate: number;
  /** How many of the answered calls nobody was free for. */
  abandons?: number;
}

/**
 * A running campaign with `agents` agents and a node, and, when given, calls it finished
 * after it started (calls and CDRs as the service writes them), read when its dialing state
 * loads on the first claim.
 */
async function campaignWith(dialMode: string, agents: number, history?: History) {
  const w = await createWorkspace();
  w.clock.advance(NOON_NEW_YORK - w.clock.now());
  const admin = await w.login("admin@acme.test");
  const campaignId = (
    await w.request("POST", "/api/v1/campaigns", {
      token: admin,
      body: {
        name: "Paced",
        dial_mode: dialMode,
        dial_ratio: 3,
        max_abandon_rate: 0.03,
        // The pacer's own behaviour; the governor over it is tested on its own.
        regulatory_profile: "none",
      },
    })
  ).body.data.campaign.id as string;
  const list = (
    await w.request("POST", `/api/v1/campaigns/${campaignId}/lead-lists`, {
      token: admin,
      body: { name: "L", caller_id: "+14155550100" },
    })
  ).body.data.lead_list.id as string;
  const csv = `phone,timezone\n${Array.from({ length: 200 }, (_, i) => `+1212${2_000_000 + i},America/New_York`).join("\n")}\n`;
  await importFile(w, `/api/v1/campaigns/${campaignId}/lead-lists/${list}/import`, admin, csv);
  const nodeKey = (
    await w.request("POST", "/api/v1/edge-nodes", {
      token: admin,
      body: { name: "edge", max_concurrent_calls: 500 },
    })
  ).body.data.key as string;
  // The history is there before the start, which reads it with the campaign's leads.
  if (history) await seedHistory(w, campaignId, list, history);
  await w.request("POST", `/api/v1/campaigns/${campaignId}/status`, {
    token: admin,
    body: { action: "start" },
  });
  w.clock.advance(640_000);
  const tokens: string[] = [];
  for (let i = 0; i < agents; i++) {
    await w.user(w.acme.id, `agent${i}@acme.test`, "agent");
    const token = await w.login(`agent${i}@acme.test`);
    await w.request("POST", "/api/v1/agents/me/state", {
      token,
      body: { state: "ready", campaign_id: campaignId },
    });
    tokens.push(token);
  }
  const claim = async (max: number) =>
    (await w.request("POST", "/api/v1/nodes/jobs/claim", { token: nodeKey, body: { max } })).body
      .data.jobs as Job[];
  const event = (callId: string, type: string) =>
    w.request("POST", `/api/v1/nodes/calls/${callId}/events`, {
      token: nodeKey,
      body: { type, at: new Date(w.clock.now()).toISOString(), hangup_cause: "NORMAL_CLEARING" },
    });
  const stats = async () =>
    (await w.request("GET", `/api/v1/campaigns/${campaignId}`, { token: admin })).body.data.campaign
      .stats;
  /** Answers and hangs up `count` calls: their agents are left in wrap-up. */
  const wrapUp = async (count: number) => {
    const jobs = await claim(count);
    expect(jobs).toHaveLength(count);
    w.clock.advance(8_000);
    for (const job of jobs) await event(job.call_id, "answered");
    w.clock.advance(60_000);
    for (const job of jobs) await event(job.call_id, "ended");
    w.clock.advance(5_000);
  };
  return { w, claim, stats, wrapUp };
}

/** Calls spread over the ten minutes after the start: rings of 8–12 s, talks of 40–80 s, wrap-ups of 8–12 s. */
async function seedHistory(w: Workspace, campaignId: string, leadListId: string, h: History) {
  const start = w.clock.now();
  const every = Math.round(1 / h.answerRate);
  const callRows: (typeof calls.$inferInsert)[] = [];
  const cdrRows: (typeof cdrs.$inferInsert)[] = [];
  let answered = 0;
  for (let i = 0; i < h.calls; i++) {
    const startedAt = start + 1_000 + i * 2_000;
    const person = i % every === 0;
    const abandoned = person && answered++ < (h.abandons ?? 0);
    const answeredAt = person ? startedAt + 8_000 + (i % 5) * 1_000 : null;
    const endedAt =
      answeredAt === null
        ? startedAt + 30_000
        : answeredAt + (abandoned ? 1_000 : 40_000 + (i % 41) * 1_000);
    const outcome = abandoned ? "abandoned" : person ? "answered" : "no_answer";
    const callId = crypto.randomUUID();
    const common = {
      tenantId: w.acme.id,
      campaignId,
      leadListId,
      leadId: crypto.randomUUID(),
      phone: "+12125550000",
      callerId: "+14155550100",
      attempt: 1,
      outcome,
      disposition: outcome === "answered" ? "completed" : null,
      answeredAt: answeredAt === null ? null : new Date(answeredAt),
      endedAt: new Date(endedAt),
      bridgeMs: outcome === "answered" ? 300 : null,
    } as const;
    callRows.push({
      ...common,
      id: callId,
      edgeNodeId: crypto.randomUUID(),
      timeoutSeconds: 30,
      status: "ended",
      bridged: outcome === "answered",
      machine: false,
      leaseExpiresAt: new Date(endedAt),
      claimedAt: new Date(startedAt),
      updatedAt: new Date(endedAt + (outcome === "answered" ? 8_000 + (i % 5) * 1_000 : 0)),
    });
    cdrRows.push({
      ...common,
      id: crypto.randomUUID(),
      callId,
      startedAt: new Date(startedAt),
      ringSeconds: Math.round(((answeredAt ?? endedAt) - startedAt) / 1000),
      talkSeconds: answeredAt === null ? 0 : Math.round((endedAt - answeredAt) / 1000),
      createdAt: new Date(endedAt),
    });
  }
  await w.deps.db.insert(calls).values(callRows);
  await w.deps.db.insert(cdrs).values(cdrRows);
}

const GOOD_HISTORY: History = { calls: 300, answerRate: 1 / 3 };

describe("predictive pacing in the dialer service", () => {
  test("with busy agents and a good history it places more calls than there are ready agents", async () => {
    const { claim, stats, wrapUp } = await campaignWith("predictive", 12, GOOD_HISTORY);
    await wrapUp(10);
    const before = await stats();
    expect(before.agents_by_state).toMatchObject({ ready: 2, wrap_up: 10 });
    const jobs = await claim(100);
    expect(jobs.length).toBeGreaterThan(2);
    const after = await stats();
    expect(after.calls_in_flight).toBe(jobs.length);
    expect(after.dial_ratio).toBeGreaterThan(1);
    expect(after.dial_ratio).toBeLessThanOrEqual(3);
    expect(after.dial_ratio_reason).toStartWith("predictive: ");
    // 110 answers in the legal window, none abandoned.
    expect(after.abandon_rate).toBe(0);
  });

  test("with no agent ready it still dials for agents about to finish their wrap-up", async () => {
    const { claim, wrapUp } = await campaignWith("predictive", 12, GOOD_HISTORY);
    await wrapUp(12);
    expect((await claim(100)).length).toBeGreaterThan(0);
  });

  test("progressive pacing does not dial for busy agents", async () => {
    const { claim, wrapUp } = await campaignWith("progressive", 12, GOOD_HISTORY);
    await wrapUp(12);
    expect(await claim(100)).toEqual([]);
  });

  test("fewer than 10 agents: one call per ready agent", async () => {
    const { claim, stats } = await campaignWith("predictive", 3, GOOD_HISTORY);
    expect(await claim(100)).toHaveLength(3);
    expect((await stats()).dial_ratio_reason).toBe(
      "progressive: 3 agents, fewer than 10 to predict for",
    );
  });

  test("too little history: one call per ready agent", async () => {
    const { claim, stats } = await campaignWith("predictive", 12);
    expect(await claim(100)).toHaveLength(12);
    const { dial_ratio, dial_ratio_reason } = await stats();
    expect(dial_ratio).toBe(1);
    expect(dial_ratio_reason).toBe("progressive: no answers measured yet");
  });

  test("with the ledger over the limit it dials only for agents all but sure to be free", async () => {
    // 4 abandons in 100 live answers: over 3%, whatever comes next.
    const { claim, stats, wrapUp } = await campaignWith("predictive", 12, {
      ...GOOD_HISTORY,
      abandons: 4,
    });
    await wrapUp(12);
    // Every agent is wrapping up: no call is placed for more of them than the model gives a
    // 99% chance of taking every answer.
    const jobs = await claim(100);
    const { abandon_rate, dial_ratio_reason } = await stats();
    expect(jobs.length).toBeLessThan(12);
    expect(abandon_rate).toBeCloseTo(4 / 112, 6);
    expect(dial_ratio_reason).toContain("held by the abandon budget (0 left)");
  });
});
