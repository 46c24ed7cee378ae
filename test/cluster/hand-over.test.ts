import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { runStatement } from "../../db/statement.ts";
import { rebalance } from "../../src/cluster/rebalance.ts";
import { createWorkspace } from "../helpers/app.ts";
import { startLeasedProcess } from "../helpers/leased-process.ts";

/**
 * Three processes' worth of services on one PostgreSQL database, listening on loopback: a
 * process short of campaigns asks the busiest for some at the address its live lease names,
 * whatever it last heard of where those campaigns were.
 */
const enabled = Boolean(process.env.DATABASE_URL);

type Workspace = Awaited<ReturnType<typeof createWorkspace>>;
type Process = Awaited<ReturnType<typeof startLeasedProcess>>;
let w: Workspace;
const processes: Process[] = [];

beforeEach(async () => {
  if (!enabled) return;
  w = await createWorkspace();
});

afterEach(async () => {
  for (const process of processes.splice(0)) await process.stop();
});

async function runningCampaigns(count: number): Promise<string[]> {
  const token = await w.login("admin@acme.test");
  const ids: string[] = [];
  for (let index = 0; index < count; index++) {
    const created = await w.request("POST", "/api/v1/campaigns", {
      token,
      body: { name: `spread-${index}-${crypto.randomUUID()}` },
    });
    ids.push(created.body.data.campaign.id as string);
  }
  await runStatement(
    w.deps.rawDb,
    "update campaigns set status = 'running' where id = any($1::uuid[])",
    [ids],
  );
  return ids;
}

describe.skipIf(!enabled)("a process short of campaigns", () => {
  test("asks the busiest at its live address, even when it last saw those campaigns elsewhere", async () => {
    for (let index = 0; index < 3; index++) processes.push(await startLeasedProcess(w.clock));
    const [a, b, c] = processes as [Process, Process, Process];
    const ids = await runningCampaigns(6);
    expect((await a.deps.campaigns.adoptOrphans(ids)).sort()).toEqual([...ids].sort());
    // C hears that A runs them all, then A gives four to B: C's view is now stale.
    for (const id of ids)
      expect(await c.leases.resolve(w.acme.id, id)).toMatchObject({ url: a.url });
    const given = await a.leases.handOver(4, b.leases.instanceId);
    expect(await b.deps.campaigns.adoptOrphans(given)).toHaveLength(4);

    const taken = await rebalance(c.deps);
    expect(taken).toHaveLength(2);
    expect(taken.every((id) => given.includes(id))).toBe(true);
    expect(c.leases.held().sort()).toEqual([...taken].sort());
    const counts = (await c.leases.spread()).map((share) => share.held).sort();
    expect(counts).toEqual([2, 2, 2]);
  });
});
