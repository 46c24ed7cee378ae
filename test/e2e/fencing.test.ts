import { afterAll, describe, expect, test } from "bun:test";
import { type Cluster, type Json, type Reply, startCluster } from "../helpers/cluster.ts";
import {
  changeStatus,
  createCampaign,
  createWorkspace,
  importLeads,
  type Workspace,
} from "../helpers/cluster-sim.ts";

/**
 * The process that owns a campaign is frozen (SIGSTOP) with a command of that campaign in
 * flight, longer than its lease lasts. Another process takes the lease and serves the
 * campaign. When the first wakes up, nothing it does may commit: every write of a campaign
 * is fenced by the lease token its writer holds.
 *
 * Who wrote what is told by the database itself: each process names its connections
 * (`dialer-<index>`, see the cluster helper), and a trigger added by this test records the
 * writer and the database's clock for every row of the campaign written.
 */
const url = process.env.DATABASE_URL;

/** The owner to be frozen (A) and the other process (B), known once the campaign has an owner. */
let A = 0;
let B = 1;
/** Longer than the lease (5 s), so that B may take it while A is frozen. */
const FROZEN_MS = 8_000;

const AUDIT = `
create table fence_audit (
  id bigserial primary key,
  tbl text not null,
  op text not null,
  app text not null,
  campaign_id text,
  row_id text,
  at timestamptz not null
);
create function fence_audit_row() returns trigger language plpgsql as $$
begin
  insert into fence_audit (tbl, op, app, campaign_id, row_id, at)
  values (TG_TABLE_NAME, TG_OP, current_setting('application_name'),
    coalesce(to_jsonb(NEW) ->> 'campaign_id', to_jsonb(NEW) ->> 'id'), to_jsonb(NEW) ->> 'id',
    clock_timestamp());
  return NEW;
end $$;
create trigger fence_audit after insert or update on campaigns
  for each row execute function fence_audit_row();
create trigger fence_audit after insert or update on campaign_status_changes
  for each row execute function fence_audit_row();
create trigger fence_audit after insert or update on calls
  for each row execute function fence_audit_row();
create trigger fence_audit after insert or update on leads
  for each row execute function fence_audit_row();
create trigger fence_audit after insert or update on campaign_leases
  for each row execute function fence_audit_row();
`;

interface Outcome {
  workspace: Workspace;
  campaign: Json;
  leaseOfA?: { owner_url: string; token: bigint };
  ownerBefore?: number;
  frozenAt: Date;
  /** A's replies to the commands in flight when it froze (or what went wrong). */
  inFlight: { status?: Reply; claim?: Reply; errors: string[] };
  /** B's replies while A was frozen. */
  atB: { pause?: Reply; start?: Reply; ready?: Reply; pausedAfterMs?: number };
  answeredAtB: Date;
}

let cluster: Cluster | undefined;
let outcome: Outcome | undefined;

afterAll(async () => {
  await cluster?.close();
});

const ran = (): Outcome => {
  if (!outcome) throw new Error("the fencing run did not complete");
  return outcome;
};

/** The database's clock, to compare with the audit's. */
const databaseNow = async (c: Cluster) =>
  ((await c.sql<{ now: Date }[]>`select clock_timestamp() as now`)[0] as { now: Date }).now;

async function runScenario(c: Cluster): Promise<Outcome> {
  const workspace = await createWorkspace(c, { domain: "fencing.test", agents: 1 });
  const admin = workspace.admin.token;
  const supervisor = workspace.supervisor.token;
  const agent = workspace.agents[0]?.token as string;
  const campaign = await createCampaign(c, { token: admin, name: "Fenced" });
  await importLeads(c, { token: admin, campaignId: campaign.id, count: 20 });
  await c.sql.unsafe(AUDIT);

  // A command gives the campaign an owner (the set-up may have already): that one is A.
  const started = await changeStatus(c, {
    token: supervisor,
    campaignId: campaign.id,
    action: "start",
    via: 0,
  });
  expect(started?.status).toBe(200);
  const lease = await c.lease(campaign.id);
  const ownerBefore = await c.ownerOf(campaign.id);
  A = ownerBefore ?? 0;
  B = A === 0 ? 1 : 0;

  // Commands in flight at A as it freezes: a pause, and a claim waiting for an agent.
  const inFlight: Outcome["inFlight"] = { errors: [] };
  const statusAtA = c
    .request("POST", `/api/v1/campaigns/${campaign.id}/status`, {
      token: supervisor,
      body: { action: "pause" },
      headers: { "idempotency-key": "fence-a", "x-request-id": "fence-a-pause" },
      via: A,
      timeoutMs: 40_000,
    })
    .then((reply) => {
      inFlight.status = reply;
    })
    .catch((error) => {
      inFlight.errors.push(`status: ${String(error)}`);
    });
  const claimAtA = c
    .request("POST", "/api/v1/nodes/jobs/claim", {
      token: workspace.nodeKey,
      body: { max: 5, wait_ms: 20_000 },
      headers: { "idempotency-key": "fence-a-claim" },
      via: A,
      timeoutMs: 40_000,
    })
    .then((reply) => {
      inFlight.claim = reply;
    })
    .catch((error) => {
      inFlight.errors.push(`claim: ${String(error)}`);
    });
  // Long enough for the requests to leave; A may or may not have read them when it freezes.
  await Bun.sleep(2);
  c.pause(A);
  const frozenAtMs = Date.now();
  const frozenAt = await databaseNow(c);
  const thawAt = frozenAtMs + FROZEN_MS;

  // Through B meanwhile: the campaign is paused, an agent goes ready, the campaign resumes.
  // B can serve once A's lease has lapsed; a command it forwarded to the silent A first is
  // answered outcome_unknown after the forwarding timeout and repeated with its key. A thaws
  // on time whatever B has answered by then.
  await Bun.sleep(500);
  const atB: Outcome["atB"] = {};
  const throughB = (async () => {
    const deadline = Date.now() + 25_000;
    atB.pause = await changeStatus(c, {
      token: supervisor,
      campaignId: campaign.id,
      action: "pause",
      key: "fence-b-pause",
      via: B,
      deadline,
    });
    atB.pausedAfterMs = Date.now() - frozenAtMs;
    atB.ready = await c.request("POST", "/api/v1/agents/me/state", {
      token: agent,
      body: { state: "ready", campaign_id: campaign.id },
      via: B,
      timeoutMs: Math.max(1_000, deadline - Date.now()),
    });
    atB.start = await changeStatus(c, {
      token: supervisor,
      campaignId: campaign.id,
      action: "start",
      key: "fence-b-start",
      via: B,
      deadline,
    });
  })();
  await Bun.sleep(Math.max(0, thawAt - Date.now()));
  c.resume(A);
  await throughB;
  const answeredAtB = await databaseNow(c);
  await Promise.all([statusAtA, claimAtA]);
  // Whatever A still had queued gets its chance to (fail to) commit.
  await Bun.sleep(2_000);
  return {
    workspace,
    campaign,
    leaseOfA: lease,
    ownerBefore,
    frozenAt,
    inFlight,
    atB,
    answeredAtB,
  };
}

/** When B took the campaign's lease over: its first lease write after A froze, else its answer. */
async function takeoverTime(c: Cluster, run: Outcome): Promise<Date> {
  const rows = await c.sql<{ at: Date }[]>`
    select min(at) as at from fence_audit
    where tbl = 'campaign_leases' and app = ${`dialer-${B}`}
      and campaign_id = ${run.campaign.id} and at > ${run.frozenAt}`;
  return rows[0]?.at ?? run.answeredAtB;
}

describe.skipIf(!url)("a frozen owner cannot write after its lease was taken over", () => {
  test("freeze the owner with commands in flight, serve the campaign through another, thaw it", async () => {
    cluster = await startCluster({ size: 2, databasePrefix: "dialer_fencing" });
    outcome = await runScenario(cluster);
    console.log(
      JSON.stringify({
        owner_before: outcome.ownerBefore,
        lease_token_of_a: outcome.leaseOfA?.token.toString(),
        in_flight_at_a: {
          status: outcome.inFlight.status?.status,
          claim: outcome.inFlight.claim?.status,
          claim_jobs: outcome.inFlight.claim?.body.data?.jobs?.length,
          errors: outcome.inFlight.errors,
        },
        at_b: {
          pause: outcome.atB.pause?.status,
          ready: outcome.atB.ready?.status,
          start: outcome.atB.start?.status,
        },
      }),
    );
  }, 120_000);

  test("the campaign had an owner by its lease after a command", () => {
    const run = ran();
    expect(run.leaseOfA).toBeDefined();
    expect(run.ownerBefore).toBeDefined();
  });

  test("B served the campaign once A's lease lapsed", () => {
    const { atB } = ran();
    // The pause may find the campaign paused already (A's pause committed before it froze).
    expect([200, 409]).toContain(atB.pause?.status ?? 0);
    expect(atB.ready?.status).toBe(200);
    expect(atB.start?.status).toBe(200);
  });

  test("the lease is B's, with a larger token than A's", async () => {
    const c = cluster as Cluster;
    const run = ran();
    const lease = await c.lease(run.campaign.id);
    expect(await c.ownerOf(run.campaign.id)).toBe(B);
    expect(lease).toBeDefined();
    expect(run.leaseOfA).toBeDefined();
    expect((lease?.token ?? 0n) > (run.leaseOfA?.token ?? 0n)).toBe(true);
  });

  test("the database refuses A's token: dialer_fence raises DL001", async () => {
    const c = cluster as Cluster;
    const run = ran();
    const held = run.leaseOfA?.token;
    expect(held).toBeDefined();
    let code: string | undefined;
    try {
      await c.sql`select dialer_fence(${run.campaign.id}::uuid, ${String(held)}::bigint)`;
    } catch (error) {
      code = (error as { code?: string }).code;
    }
    expect(code).toBe("DL001");
    const current = (await c.lease(run.campaign.id))?.token;
    const fenced = await c.sql<{ ok: boolean }[]>`
      select dialer_fence(${run.campaign.id}::uuid, ${String(current)}::bigint) as ok`;
    expect(fenced[0]?.ok).toBe(true);
  });

  test("each process's writes are told apart in the database", async () => {
    const c = cluster as Cluster;
    const run = ran();
    const writers = await c.sql<{ app: string }[]>`
      select distinct app from fence_audit where campaign_id = ${run.campaign.id}`;
    expect(writers.map((row) => row.app)).toContain(`dialer-${A}`);
  });

  test("nothing A did committed after B took the campaign over", async () => {
    const c = cluster as Cluster;
    const run = ran();
    const takeover = await takeoverTime(c, run);
    const late = await c.sql<{ tbl: string; op: string; at: Date }[]>`
      select tbl, op, at from fence_audit
      where app = ${`dialer-${A}`} and campaign_id = ${run.campaign.id} and at >= ${takeover}
      order by at`;
    expect([...late]).toEqual([]);
    // No call was placed by A after it woke (its waiting claim included).
    const calls = await c.sql<{ id: string }[]>`
      select c.id from calls c join fence_audit f on f.tbl = 'calls' and f.row_id = c.id::text
      where f.op = 'INSERT' and f.app = ${`dialer-${A}`} and f.at >= ${takeover}
        and c.campaign_id = ${run.campaign.id}`;
    expect([...calls]).toEqual([]);
  });

  test("the campaign's history is one unbroken chain", async () => {
    const c = cluster as Cluster;
    const run = ran();
    const rows = await c.sql<{ from_status: string; to_status: string }[]>`
      select from_status, to_status from campaign_status_changes
      where campaign_id = ${run.campaign.id} order by created_at, id`;
    const breaks = rows.filter(
      (row, index) => index > 0 && row.from_status !== rows[index - 1]?.to_status,
    );
    expect(breaks).toEqual([]);
  });
});
