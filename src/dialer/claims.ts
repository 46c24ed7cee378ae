import { findCampaign } from "../../db/queries/campaigns.ts";
import {
  countLiveCallsOnNode,
  deleteStaleClaimKeys,
  findClaimedCalls,
  releaseClaimKey,
  runningCampaignIds,
  takeClaimKey,
} from "../../db/queries/dialer.ts";
import type { ServiceDeps } from "../deps.ts";
import type { NodePrincipal } from "../identity/principal.ts";
import { assertIdempotencyKey } from "../lib/idempotency-key.ts";
import { CLAIM_REPLAY_MS, type DialJob, jobOf } from "./claim-replies.ts";
import { paceCampaign } from "./pacing.ts";

/**
 * A node's claim: its capacity spread over its tenant's running campaigns, each campaign's
 * share placed by the campaign itself (`claim`, decided in `claim-decide.ts`) within its
 * pacing. Nothing here locks the node: its slots are set aside in memory before the
 * campaigns are asked (so that two claims of one node never count the same free slot), and a
 * repeated claim key joins the claim under way instead of placing calls of its own; with
 * other processes on the database, the key is taken there first (`claimUnderKey`).
 */

const CLAIM_POLL_MS = 200;
/** A repeat of a keyed claim under way in another process looks again this often. */
const CLAIM_KEY_POLL_MS = 20;
/**
 * A claim key held longer was left by a process that stopped mid-claim: it is taken over, and
 * a repeat waits no longer for it. A claim asks each campaign's owner for 10 s at most.
 */
const STALE_CLAIM_KEY_MS = 30_000;

/** Slots set aside per node for the claims under way in this process. */
const reserved = new WeakMap<ServiceDeps, Map<string, number>>();
/** Keyed claims under way, by node and key: a repeat joins the first. */
const underWay = new WeakMap<ServiceDeps, Map<string, Promise<DialJob[]>>>();

const perDeps = <T>(table: WeakMap<ServiceDeps, Map<string, T>>, deps: ServiceDeps) => {
  let map = table.get(deps);
  if (!map) {
    map = new Map();
    table.set(deps, map);
  }
  return map;
};

/**
 * Hands a node up to `max` dial jobs from its tenant's running campaigns, within the node's
 * capacity and each campaign's pacing, spread fairly; waits up to `waitMs` for some. With a
 * `claimKey`, a claim repeated within a minute gets the jobs the first one placed.
 */
export async function claimJobs(
  deps: ServiceDeps,
  node: NodePrincipal,
  input: { max: number; waitMs: number; claimKey?: string | undefined },
): Promise<{ jobs: DialJob[] }> {
  const { claimKey } = input;
  assertIdempotencyKey(claimKey);
  const deadline = performance.now() + input.waitMs;
  for (;;) {
    const jobs = claimKey
      ? await keyedClaim(deps, node, input.max, claimKey)
      : await claimOnce(deps, node, input.max, null);
    const left = deadline - performance.now();
    if (jobs.length > 0 || left <= 0) return { jobs };
    await Bun.sleep(Math.min(CLAIM_POLL_MS, left));
  }
}

/** A keyed claim: the jobs an earlier one with its key placed, else a claim of its own. */
function keyedClaim(deps: ServiceDeps, node: NodePrincipal, max: number, claimKey: string) {
  const pending = perDeps(underWay, deps);
  const entry = `${node.nodeId}\n${claimKey}`;
  const joined = pending.get(entry);
  if (joined) return joined;
  const claim = claimUnderKey(deps, node, max, claimKey).finally(() => pending.delete(entry));
  pending.set(entry, claim);
  return claim;
}

/**
 * The jobs an earlier claim with the key placed, else a claim of its own. With other
 * processes on the database, the key is taken there for the claim's time: a repeat that
 * reached another process meanwhile waits for it, then hands out the calls it placed.
 */
async function claimUnderKey(
  deps: ServiceDeps,
  node: NodePrincipal,
  max: number,
  claimKey: string,
): Promise<DialJob[]> {
  // Even a process that holds no campaign yet sends claims to their owners: the key is taken
  // whenever others may share the database.
  const shared = deps.campaigns.leases.shared;
  const giveUpAt = performance.now() + STALE_CLAIM_KEY_MS;
  for (;;) {
    const replayed = await replayedClaim(deps, node, claimKey);
    if (replayed) return replayed;
    const key = { nodeId: node.nodeId, claimKey, at: new Date(deps.clock.now()) };
    const staleBefore = new Date(key.at.getTime() - STALE_CLAIM_KEY_MS);
    if (!shared || (await takeClaimKey(deps.db, { ...key, staleBefore }))) {
      try {
        const placed = await claimOnce(deps, node, max, claimKey);
        deps.dialer.claimReplies.remember(node.nodeId, claimKey, placed, deps.clock.now());
        return placed;
      } finally {
        if (shared) await releaseClaimKey(deps.db, key).catch(() => undefined);
      }
    }
    if (performance.now() >= giveUpAt) return [];
    await Bun.sleep(CLAIM_KEY_POLL_MS);
  }
}

/** Forgets the claim keys of processes that stopped mid-claim. */
export const forgetStaleClaimKeys = (deps: ServiceDeps) =>
  deleteStaleClaimKeys(deps.db, new Date(deps.clock.now() - STALE_CLAIM_KEY_MS));

/** The jobs of an earlier claim with this key: from memory, or from the calls it placed. */
async function replayedClaim(deps: ServiceDeps, node: NodePrincipal, claimKey: string) {
  const now = deps.clock.now();
  const remembered = deps.dialer.claimReplies.get(node.nodeId, claimKey, now);
  if (remembered) return remembered;
  // Another process may have served the first claim; alone, only one from before a restart.
  if (!deps.campaigns.leases.shared && !deps.dialer.claimReplies.mayPredate(now)) return undefined;
  const rows = await findClaimedCalls(deps.db, {
    nodeId: node.nodeId,
    claimKey,
    since: new Date(now - CLAIM_REPLAY_MS),
  });
  if (rows.length === 0) return undefined;
  const campaigns = new Map(
    await Promise.all(
      [...new Set(rows.map((row) => row.campaignId))].map(
        async (id) => [id, await findCampaign(deps.db, id)] as const,
      ),
    ),
  );
  const jobs = rows.map((row) => jobOf(row, campaigns.get(row.campaignId)));
  deps.dialer.claimReplies.remember(node.nodeId, claimKey, jobs, now);
  return jobs;
}

/**
 * One round of a claim. Alone on its database (at the last look, a second ago at most), this
 * process runs every campaign: its own count of the node's calls and its running campaigns
 * are whole. With others, the node's load and the running campaigns come from the database,
 * and each campaign's owner caps what it places by the database's count of the node's calls.
 */
async function claimOnce(
  deps: ServiceDeps,
  node: NodePrincipal,
  max: number,
  claimKey: string | null,
): Promise<DialJob[]> {
  const leases = deps.campaigns.leases;
  const shared = leases.shared && !leases.alone();
  const slots = perDeps(reserved, deps);
  const load = shared
    ? await countLiveCallsOnNode(deps.db, node.nodeId)
    : deps.campaigns.callsOnNode(node.nodeId);
  const capacity = Math.min(max, node.maxConcurrentCalls - load - (slots.get(node.nodeId) ?? 0));
  if (capacity <= 0) return [];
  const campaigns = shared
    ? await runningCampaignIds(deps.db, node.tenantId)
    : deps.campaigns.runningCampaigns(node.tenantId);
  const shares = sharesOf(deps, node, wantsOf(deps, campaigns, capacity), capacity);
  const taken = shares.reduce((sum, { share }) => sum + share, 0);
  slots.set(node.nodeId, (slots.get(node.nodeId) ?? 0) + taken);
  // With another process, or one just started whose relay has said hello, only the database
  // knows every call on the node: the placement checks the node's capacity there.
  const counted =
    leases.shared && (!leases.alone() || deps.realtime.othersHeard())
      ? node.maxConcurrentCalls
      : null;
  try {
    // Campaigns place their calls side by side, each in its own queue.
    const placed = await Promise.all(
      shares.map(({ campaignId, share }) =>
        deps.campaigns
          .run(
            { tenantId: node.tenantId, campaignId },
            { type: "claim", nodeId: node.nodeId, capacity: counted, count: share, claimKey },
          )
          .catch((error: unknown) => {
            // Alone, a failure is the database's: the claim fails. With others, one campaign's
            // trouble (its owner unreachable) leaves the others' calls placed.
            if (!shared) throw error;
            deps.logger.warn("a campaign's share of a claim was not placed", {
              campaign_id: campaignId,
              error,
            });
            return [] as DialJob[];
          }),
      ),
    );
    return placed.flat();
  } finally {
    const left = (slots.get(node.nodeId) ?? taken) - taken;
    if (left > 0) slots.set(node.nodeId, left);
    else slots.delete(node.nodeId);
  }
}

/**
 * What each campaign may take: its pacing now, read from its live state here (the campaign
 * checks again when it places), or the whole capacity for a campaign run elsewhere. Pacing
 * decides who may dial; campaigns nobody works on (no agent, or all paused) are skipped.
 */
function wantsOf(deps: ServiceDeps, campaignIds: string[], capacity: number) {
  const wants: { campaignId: string; allowed: number }[] = [];
  const now = deps.clock.now();
  for (const campaignId of campaignIds) {
    const agents = deps.dialer.agents.inCampaign(campaignId);
    if (!agents.some((agent) => agent.state !== "paused")) continue;
    const live = deps.campaigns.peek(campaignId);
    const allowed =
      live?.dialing && live.campaign.status === "running"
        ? paceCampaign(live.campaign, live.dialing, agents, now, deps.dialer.pacer).calls
        : capacity;
    if (allowed > 0) wants.push({ campaignId, allowed });
  }
  return wants;
}

/** The node's capacity spread over the campaigns that want calls, starting after the last one served. */
function sharesOf(
  deps: ServiceDeps,
  node: NodePrincipal,
  wants: { campaignId: string; allowed: number }[],
  capacity: number,
) {
  if (wants.length === 0) return [];
  const cursor = deps.dialer.cursors.get(node.tenantId) ?? 0;
  deps.dialer.cursors.set(node.tenantId, cursor + 1);
  const shares = shareFairly(wants, capacity, cursor % wants.length);
  return wants
    .map(({ campaignId }) => ({ campaignId, share: shares.get(campaignId) ?? 0 }))
    .filter(({ share }) => share > 0);
}

/** Spreads `slots` over campaigns one at a time, starting after the last one served. */
function shareFairly(
  wants: { campaignId: string; allowed: number }[],
  slots: number,
  start: number,
) {
  const shares = new Map<string, number>();
  let remaining = slots;
  let progress = true;
  while (remaining > 0 && progress) {
    progress = false;
    for (let i = 0; i < wants.length && remaining > 0; i++) {
      const want = wants[(start + i) % wants.length] as { campaignId: string; allowed: number };
      const given = shares.get(want.campaignId) ?? 0;
      if (given < want.allowed) {
        shares.set(want.campaignId, given + 1);
        remaining--;
        progress = true;
      }
    }
  }
  return shares;
}
