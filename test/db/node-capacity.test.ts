import { beforeEach, describe, expect, test } from "bun:test";
import { claimLeads } from "../../db/queries/dialer.ts";
import { runStatement } from "../../db/statement.ts";
import { createWorkspace } from "../helpers/app.ts";
import { importFile } from "../helpers/leads.ts";

/**
 * A claim that checks the node's capacity against the database, as processes sharing it do:
 * at most the capacity less the node's calls in flight, the first candidates first, and
 * only once another process's claim on the node has committed.
 */
type Workspace = Awaited<ReturnType<typeof createWorkspace>>;
let w: Workspace;
let campaignId: string;
let nodeId: string;
let leads: { id: string; lead_list_id: string; phone: string }[];

beforeEach(async () => {
  w = await createWorkspace();
  const token = await w.login("admin@acme.test");
  campaignId = (await w.request("POST", "/api/v1/campaigns", { token, body: { name: "Capacity" } }))
    .body.data.campaign.id;
  const list = await w.request("POST", `/api/v1/campaigns/${campaignId}/lead-lists`, {
    token,
    body: { name: "L", caller_id: "+14155550100" },
  });
  const listPath = `/api/v1/campaigns/${campaignId}/lead-lists/${list.body.data.lead_list.id}`;
  const phones = ["+14155552671", "+14155552672", "+14155552673", "+14155552674"];
  await importFile(
    w,
    `${listPath}/import`,
    token,
    `phone,timezone\n${phones.map((phone) => `${phone},America/New_York`).join("\n")}\n`,
  );
  nodeId = (
    await w.request("POST", "/api/v1/edge-nodes", {
      token,
      body: { name: "edge", max_concurrent_calls: 2 },
    })
  ).body.data.edge_node.id;
  leads = await runStatement(
    w.deps.rawDb,
    "select id, lead_list_id, phone from leads where campaign_id = $1::uuid order by phone",
    [campaignId],
  );
});

const claim = (of: typeof leads, nodeCapacity: number | null) =>
  claimLeads(w.deps.rawDb, {
    claim: {
      tenantId: w.acme.id,
      campaignId,
      edgeNodeId: nodeId,
      candidates: of.map((lead) => ({
        leadId: lead.id,
        callId: Bun.randomUUIDv7(),
        agentId: null,
        leadListId: lead.lead_list_id,
        phone: lead.phone,
        callerId: "+14155550100",
        zone: "America/Los_Angeles",
        zoneSource: "number" as const,
        limits: { cap: null, afterAbandoned: null, afterMachine: null, afterDncRequest: null },
      })),
      deferrals: [],
      profile: { name: "none", version: "1970-01-01" },
      governorHeld: false,
      maxAttempts: 3,
      timeoutSeconds: 30,
      now: new Date(),
      leaseExpiresAt: new Date(Date.now() + 60_000),
      claimKey: null,
      nodeCapacity,
    },
    fence: { campaignId, token: null },
  });

describe("a claim capped by the node's calls in the database", () => {
  test("places at most the capacity less the calls in flight, the first candidates first", async () => {
    const first = await claim(leads.slice(0, 3), 2);
    expect(first.marked.map((mark) => mark.id).sort()).toEqual(
      leads
        .slice(0, 2)
        .map((lead) => lead.id)
        .sort(),
    );
    // The third was still dialable: it waits for its turn rather than being passed over.
    expect([...first.unplaced]).toEqual([leads[2]?.id as string]);
    const full = await claim(leads.slice(3), 2);
    expect(full.marked).toEqual([]);
    expect([...full.unplaced].sort()).toEqual(
      leads
        .slice(3)
        .map((lead) => lead.id)
        .sort(),
    );
  });

  test.skipIf(!process.env.DATABASE_URL)(
    "a claim waits for another process's claim on the node, then counts its call",
    async () => {
      const raw = w.deps.rawDb;
      if (raw.kind !== "postgres") return;
      const [placed] = (await claim(leads.slice(0, 1), 2)).marked;
      // Another process's claim, under the node's lock, places a call and commits later.
      let committed = 0;
      const other = raw.client.begin(async (tx) => {
        await tx.unsafe("select pg_advisory_xact_lock(1145652813, hashtext($1::text))", [nodeId]);
        await tx.unsafe(
          `insert into calls select * from json_populate_record(null::calls, (
             select to_jsonb(c) || jsonb_build_object('id', $2::text, 'lead_id', $3::text,
               'phone', $4::text)
             from calls c where c.lead_id = $1::uuid)::json)`,
          [
            placed?.id as string,
            Bun.randomUUIDv7(),
            leads[1]?.id as string,
            leads[1]?.phone as string,
          ],
        );
        await Bun.sleep(200);
        committed = Date.now();
      });
      await Bun.sleep(50);
      const mine = await claim(leads.slice(2), 2);
      const returnedAt = Date.now();
      await other;
      expect(returnedAt).toBeGreaterThanOrEqual(committed);
      // The node had two calls by then: nothing more.
      expect(mine.marked).toEqual([]);
    },
  );

  test.skipIf(!process.env.DATABASE_URL)(
    "claims keep one generic plan on their pool, never planned again for their values",
    async () => {
      const raw = w.deps.rawDb;
      if (raw.kind !== "postgres") return;
      // Left to choose, PostgreSQL plans a prepared statement's first five runs for their values.
      for (const lead of leads) await claim([lead], null);
      const sessions = await Promise.all(
        [0, 1, 2, 3].map(() =>
          raw.genericPlans.unsafe(
            `select generic_plans::int, custom_plans::int from pg_prepared_statements
             where statement like '%with candidate as%'
               and statement not like '%pg_prepared_statements%'`,
          ),
        ),
      );
      const plans = sessions.flat() as unknown as { generic_plans: number; custom_plans: number }[];
      expect(plans.length).toBeGreaterThan(0);
      expect(plans.every((row) => row.custom_plans === 0 && row.generic_plans > 0)).toBe(true);
    },
  );
});
