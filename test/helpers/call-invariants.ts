import type { Cluster } from "./cluster.ts";

/**
 * What a dialing run on several processes must leave in the database, read from it: checks
 * shared by the runs that kill, stop, restart or hand campaigns over mid-dial.
 */

/** The ended calls that have no CDR or more than one, with how many they have. */
export async function callsWithoutOneCdr(c: Cluster, callIds: string[]) {
  const rows = await c.sql<{ call_id: string; count: number }[]>`
    select call_id::text, count(*)::int as count from cdrs
    where call_id = any(${callIds}::uuid[]) group by call_id`;
  const counts = new Map(rows.map((row) => [row.call_id, row.count]));
  return callIds
    .filter((id) => counts.get(id) !== 1)
    .map((id) => ({ id, cdrs: counts.get(id) ?? 0 }));
}

/** The campaigns' calls, and the pairs of them that had one lead in flight at the same time. */
export async function overlappingCalls(c: Cluster, campaignIds: string[]) {
  const [{ calls } = { calls: 0 }] = await c.sql<{ calls: number }[]>`
    select count(*)::int as calls from calls where campaign_id = any(${campaignIds}::uuid[])`;
  const overlaps = await c.sql<{ lead: string; first: string; second: string }[]>`
    select a.lead_id::text as lead, a.id::text as first, b.id::text as second
    from calls a join calls b
      on a.lead_id = b.lead_id and a.id < b.id
      and b.claimed_at < coalesce(a.ended_at, 'infinity')
      and a.claimed_at < coalesce(b.ended_at, 'infinity')
    where a.campaign_id = any(${campaignIds}::uuid[])`;
  return { calls, overlaps: [...overlaps] };
}
