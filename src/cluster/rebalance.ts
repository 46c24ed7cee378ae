import type { ServiceDeps } from "../deps.ts";
import type { OwnerShare } from "./leases.ts";
import { askHandOver, MAX_HAND_OVER } from "./owner.ts";

export { MAX_HAND_OVER };

export interface HandOverPlan {
  from: OwnerShare;
  count: number;
}

/**
 * Whether this process (`me`) should ask another for campaigns, and how many: when it runs
 * fewer than its share (the running and paused campaigns over the live processes, rounded
 * down), it asks the busiest for the difference, but never so many that the busiest drops
 * below its share. Only the process short of campaigns asks, so a process that holds none,
 * and that the others cannot see, takes its share too.
 */
export function handOverPlan(shares: readonly OwnerShare[], me: string): HandOverPlan | undefined {
  const mine = shares.find((share) => share.owner === me)?.held ?? 0;
  const processes = shares.length + (shares.some((share) => share.owner === me) ? 0 : 1);
  const fair = Math.floor(shares.reduce((sum, share) => sum + share.held, 0) / processes);
  let busiest: OwnerShare | undefined;
  for (const share of shares)
    if (share.owner !== me && share.held > (busiest?.held ?? 0)) busiest = share;
  if (!busiest) return undefined;
  const count = Math.min(fair - mine, busiest.held - fair, MAX_HAND_OVER);
  return count >= 1 ? { from: busiest, count } : undefined;
}

/**
 * One look at how campaigns spread over the processes: when this one runs fewer than its
 * share, the busiest hands it some, which it takes and restores at once. The busiest is asked
 * at the address its live leases name, read with the spread: where this process last saw
 * one of those campaigns may be stale, and the process there would answer with nothing, at
 * every look. Returns the campaigns taken.
 */
export async function rebalance(deps: ServiceDeps): Promise<string[]> {
  const leases = deps.campaigns.leases;
  const plan = handOverPlan(await leases.spread(), leases.instanceId);
  // A lease of a previous run at this process's own address is not asked of itself.
  if (!plan || plan.from.url === leases.ownerUrl) return [];
  const given = await askHandOver(deps, plan.from.url, {
    type: "cluster.handOver",
    count: plan.count,
    from: plan.from.owner,
    to: leases.instanceId,
  });
  if (given.length === 0) return [];
  return deps.campaigns.adoptOrphans(given);
}
