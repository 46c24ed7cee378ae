import {
  and,
  asc,
  count,
  desc,
  eq,
  gte,
  inArray,
  isNotNull,
  isNull,
  lt,
  min,
  ne,
  or,
  sql,
} from "drizzle-orm";
import type { ChangeActor, ClaimWrite, NumberLimits } from "../../actors/commands.ts";
import type { HopperLead, LeadState } from "../../actors/dialing.ts";
import type { Executor, RawClient } from "../client.ts";
import { type Fence, fenceCondition } from "../fence.ts";
import { fieldNamesOf, fieldRecord } from "../field-names.ts";
import { jsonOf, rowsOf } from "../rows.ts";
import {
  calls,
  campaignStatusChanges,
  campaigns,
  cdrs,
  dncNumbers,
  leadImports,
  leads,
  nodeClaimKeys,
  nodes,
} from "../schema/index.ts";
import { arrayLiteral, isAnyUuid, namedStatement, runStatement } from "../statement.ts";
import { outboxStatement } from "./webhooks.ts";

export type CallRow = typeof calls.$inferSelect;

export interface HopperParams {
  campaignId: string;
  now: Date;
  windowStart: string;
  windowEnd: string;
  maxAttempts: number;
  limit: number;
  /** Fresh leads too, or only the callbacks and retries due. */
  fresh: boolean;
}

/**
 * Up to `limit` leads a campaign may dial now, in dialing order: due callbacks, then due
 * retries, then fresh leads in import order; only with attempts left (a callback, which the
 * lead agreed to, is made whatever it has used), off the do-not-call list, and inside the
 * calling window in the lead's own time zone (DST-aware, by the database's zone rules). Each
 * state is read in order by its own index and stops at `limit`.
 *
 * The window test is wrapped in a CASE on purpose: as two range comparisons the planner
 * guesses that 1 lead in 200 passes it, and rather than walk the index to the first `limit`
 * leads it reads and sorts every fresh lead of the campaign (100 ms at 50,000 leads, against
 * 2 ms). A CASE it takes for a coin toss.
 */
export function hopperQuery(params: HopperParams) {
  const now = params.now.toISOString();
  // States, ranks and the limit are written into the text: as parameters, the planner would
  // not trust a plan made without their values, and would plan again on every run.
  const limit = sql.raw(String(Math.trunc(params.limit)));
  const pick = (state: "Callback" | "Retry" | "Fresh", rank: number) => sql`
    (select l.id, l.lead_list_id, l.phone, l.timezone, l.zone_source, l.state, l.attempts,
        l.fields, l.import_id, ${sql.raw(String(rank))} as rank, l.next_attempt_at, l.seq
      from leads l
      where l.campaign_id = ${params.campaignId}::uuid and l.state = ${sql.raw(`'${state}'`)}
        ${state === "Callback" ? sql`` : sql`and l.attempts < ${params.maxAttempts}`}
        ${
          state === "Fresh"
            ? sql`and (l.next_attempt_at is null or l.next_attempt_at <= ${now}::timestamptz)`
            : sql`and l.next_attempt_at <= ${now}::timestamptz`
        }
        and not exists (select 1 from dnc_numbers d where d.tenant_id = l.tenant_id and d.phone = l.phone)
        and case when (timezone(l.timezone, ${now}::timestamptz))::time >= ${params.windowStart}::time
          and (timezone(l.timezone, ${now}::timestamptz))::time < ${params.windowEnd}::time
          then true else false end
      order by ${state === "Fresh" ? sql`l.seq` : sql`l.next_attempt_at, l.seq`}
      limit ${limit})`;
  return sql`
    select p.id, p.lead_list_id, p.phone, p.timezone, p.zone_source, p.state, p.attempts,
      p.fields, ll.caller_id, li.header
    from (${pick("Callback", 0)} union all ${pick("Retry", 1)}
      ${params.fresh ? sql`union all ${pick("Fresh", 2)}` : sql``}) p
    join lead_lists ll on ll.id = p.lead_list_id
    left join lead_imports li on li.id = p.import_id
    order by p.rank, p.next_attempt_at, p.seq
    limit ${limit}`;
}

/** The hopper's leads (see `hopperQuery`). Nothing is marked: a claim re-checks each lead. */
export async function readHopper(db: Executor, params: HopperParams): Promise<HopperLead[]> {
  const result = await db.execute(hopperQuery(params));
  return rowsOf<{
    id: string;
    lead_list_id: string;
    phone: string;
    timezone: string;
    zone_source: HopperLead["zoneSource"];
    state: HopperLead["state"];
    attempts: number;
    fields: Record<string, string> | string;
    caller_id: string;
    header: string[] | string | null;
  }>(result).map((row) => ({
    id: row.id,
    leadListId: row.lead_list_id,
    phone: row.phone,
    timezone: row.timezone,
    zoneSource: row.zone_source,
    state: row.state,
    attempts: row.attempts,
    callerId: row.caller_id,
    fields: inFileOrder(jsonOf(row.fields), jsonOf(row.header)),
  }));
}

/**
 * Claims leads for calls in one statement: each candidate's lead is marked `Dialing` (one
 * more attempt) if it is still dialable now (state unchanged, attempts left, due, not on the
 * do-not-call list, not locked elsewhere) and the node is not revoked, and its call is
 * inserted as claimed. Returns the leads taken (`marked`), in no particular order, with the
 * state each had and their attempt count after this one; the other candidates place nothing.
 * Of those, `unplaced` were still dialable but the node could not take them (revoked, or full):
 * they are still to be dialled in their turn. One statement, where a transaction of two took
 * four round trips. With `nodeCapacity` (other processes may place calls on the node), at most
 * that many calls less the node's calls in flight, under a lock of the node.
 *
 * On PostgreSQL it runs on the pool of generic plans. Left to choose, PostgreSQL planned it at
 * every run, which cost more than running it: a generic plan counts 10 rows for an array
 * parameter, a plan for the values at hand the claim's candidates (one or two under a steady
 * load), so the generic one looked dearer. PostgreSQL plans it again when the tables'
 * statistics change (an import analyses its leads).
 */
export async function claimLeads(
  raw: RawClient,
  params: { claim: ClaimWrite; fence: Fence },
): Promise<{ marked: MarkedLead[]; unplaced: Set<string> }> {
  const rows = await runClaim(raw, params);
  const marked: MarkedLead[] = [];
  const unplaced = new Set<string>();
  for (const { unplaced: waiting, ...lead } of rows) {
    if (waiting) unplaced.add(lead.id);
    else marked.push(lead);
  }
  return { marked, unplaced };
}

/** A lead a claim marked: the state it had and its attempt count after this one. */
export type MarkedLead = { id: string; prior: HopperLead["state"]; attempts: number };

type ClaimRow = MarkedLead & { unplaced: boolean };

async function runClaim(
  raw: RawClient,
  params: { claim: ClaimWrite; fence: Fence },
): Promise<ClaimRow[]> {
  const { claim, fence } = params;
  const { candidates, deferrals } = claim;
  if (candidates.length === 0 && deferrals.length === 0) return [];
  const column = (value: (candidate: ClaimWrite["candidates"][number]) => string | number | null) =>
    arrayLiteral(
      candidates.map((candidate) => {
        const found = value(candidate);
        return found === null ? null : String(found);
      }),
    );
  const values = {
    lead_ids: column((candidate) => candidate.leadId),
    call_ids: column((candidate) => candidate.callId),
    agent_ids: column((candidate) => candidate.agentId),
    lead_list_ids: column((candidate) => candidate.leadListId),
    phones: column((candidate) => candidate.phone),
    caller_ids: column((candidate) => candidate.callerId),
    zones: column((candidate) => candidate.zone),
    zone_sources: column((candidate) => candidate.zoneSource),
    cap_max: column((candidate) => candidate.limits.cap?.max ?? null),
    cap_hours: column((candidate) => candidate.limits.cap?.hours ?? null),
    after_abandoned: column((candidate) => candidate.limits.afterAbandoned),
    after_machine: column((candidate) => candidate.limits.afterMachine),
    after_dnc_days: column((candidate) => candidate.limits.afterDncRequest),
    deferred_ids: arrayLiteral(deferrals.map((deferral) => deferral.leadId)),
    deferred_until: arrayLiteral(deferrals.map((deferral) => deferral.until.toISOString())),
    profile: claim.profile.name,
    profile_version: claim.profile.version,
    governor_held: claim.governorHeld,
    campaign_id: claim.campaignId,
    tenant_id: claim.tenantId,
    edge_node_id: claim.edgeNodeId,
    max_attempts: claim.maxAttempts,
    timeout_seconds: claim.timeoutSeconds,
    now: claim.now.toISOString(),
    lease_expires_at: claim.leaseExpiresAt.toISOString(),
    claim_key: claim.claimKey,
    lease_token: fence.token,
  };
  const capacity = claim.nodeCapacity;
  // Numbers with limits counted across the workspace, in one order so that claims never wait
  // on each other in a circle.
  const limited = [...new Set(candidates.filter(hasLimits).map((c) => c.phone))].sort();
  const statement = claimStatement({
    capped: capacity !== null,
    limited: limited.length > 0,
    deferring: deferrals.length > 0,
  });
  const named = capacity === null ? values : { ...values, capacity };
  if (raw.kind === "pglite") return statement.run<ClaimRow>(raw, named);
  const claims = raw.genericPlans;
  if (capacity === null && limited.length === 0) {
    return statement.run<ClaimRow>({ ...raw, client: claims }, named);
  }
  // The locks make claims on one node, and claims of one limited number, take turns; the
  // claim's own statement then reads the calls that the one before it committed.
  return claims.begin(async (tx) => {
    if (capacity !== null) {
      await tx.unsafe("select pg_advisory_xact_lock($1::int, hashtext($2::text))", [
        NODE_CLAIMS_LOCK,
        claim.edgeNodeId,
      ]);
    }
    if (limited.length > 0) {
      await tx.unsafe(
        `select pg_advisory_xact_lock($1::int, hashtext($2::text || phone))
         from unnest($3::text[]) with ordinality as p(phone, ord) order by ord`,
        [NUMBER_CLAIMS_LOCK, claim.tenantId, arrayLiteral(limited)],
      );
    }
    return tx.unsafe(statement.text, [...statement.values(named)] as never[]);
  }) as unknown as Promise<ClaimRow[]>;
}

const hasLimits = ({ limits }: ClaimWrite["candidates"][number]) =>
  limits.cap !== null ||
  limits.afterAbandoned !== null ||
  limits.afterMachine !== null ||
  limits.afterDncRequest !== null;

/** The advisory lock classes of a node's claims and of a number's (a campaign's lease has its own). */
const NODE_CLAIMS_LOCK = 1145652813;
const NUMBER_CLAIMS_LOCK = 1314212178;

/** Which parts a claim's statement needs; each shape is planned apart. */
interface ClaimShape {
  /** At most `:capacity` minus the node's calls in flight, the first candidates first. */
  capped: boolean;
  /** Some candidate's number has limits counted across the workspace. */
  limited: boolean;
  /** Some leads the rules closed wait (`deferred_*`). */
  deferring: boolean;
}

/**
 * Marks the candidates' leads as dialing and places their calls. A candidate whose number is
 * over a limit (its attempts in the last hours across the workspace, a recent abandoned or
 * machine call, a recent do-not-call request) is not dialled: its lead waits until the limit
 * lifts. The leads the rules closed wait likewise. A number already on a call anywhere in the
 * workspace is not dialled again: one person is never called twice at once. A claim placing a
 * call to a number at the same instant as another is held to it by the unique index of live
 * calls: its insert waits for the other and places nothing if that one commits, and the lead
 * is then left as it was (still dialable, in its turn). Inserts go in the numbers' order, so
 * that claims never wait on each other in a circle. The parts a claim does not need are left
 * out, because PostgreSQL plans the statement at every run: the limits' part alone made a
 * claim's planning several times dearer.
 */
const claimLeadsStatement = ({ capped, limited, deferring }: ClaimShape) => `
  with candidate as (
    select * from unnest(:lead_ids::uuid[], :call_ids::uuid[], :agent_ids::uuid[],
        :lead_list_ids::uuid[], :phones::text[], :caller_ids::text[], :zones::text[],
        :zone_sources::text[]${
          limited
            ? `, :cap_max::int[], :cap_hours::int[], :after_abandoned::int[],
        :after_machine::int[], :after_dnc_days::int[]`
            : ""
        })
      with ordinality as k(lead_id, call_id, agent_id, lead_list_id, phone, caller_id, zone,
        zone_source, ${limited ? "cap_max, cap_hours, after_abandoned, after_machine, after_dnc_days, " : ""}ord)),${
          limited
            ? `
  blocked as (
    select k.lead_id, max(n.until) as until
    from candidate k
    cross join lateral number_limits(:tenant_id::uuid, k.phone, :now::timestamptz, k.cap_max,
      k.cap_hours, k.after_abandoned, k.after_machine, k.after_dnc_days) n
    where k.cap_max is not null or k.after_abandoned is not null or k.after_machine is not null
      or k.after_dnc_days is not null
    group by k.lead_id),`
            : ""
        }
  eligible as (
    select c.id, c.state as prior, c.attempts, k.ord from leads c join candidate k on k.lead_id = c.id
    where c.campaign_id = :campaign_id::uuid
      and (c.attempts < :max_attempts::int or c.state = 'Callback')
      and (c.state = 'Fresh' or c.state in ('Retry', 'Callback'))
      and (c.next_attempt_at is null or c.next_attempt_at <= :now::timestamptz)
      and not exists (select 1 from dnc_numbers d where d.tenant_id = c.tenant_id and d.phone = c.phone)
      and not exists (select 1 from calls x
        where x.tenant_id = c.tenant_id and x.phone = c.phone and x.status <> 'ended')
      ${limited ? "and not exists (select 1 from blocked b where b.lead_id = c.id)" : ""}
      and ${fenceCondition(":campaign_id", ":lease_token")}
    for update of c skip locked),
  taken as (
    select id, prior, attempts from eligible
    where exists (select 1 from nodes n where n.id = :edge_node_id::uuid and n.revoked_at is null)
    ${
      capped
        ? `order by ord limit greatest(0, :capacity::int - (select count(*) from calls
             where edge_node_id = :edge_node_id::uuid and status <> 'ended'))`
        : ""
    }),
  placed as (
    insert into calls (id, tenant_id, campaign_id, lead_list_id, lead_id, edge_node_id, agent_id,
      phone, caller_id, attempt, timeout_seconds, status, bridged, machine, lease_expires_at,
      claimed_at, updated_at, claim_key, profile, profile_version, zone, zone_source,
      governor_held)
    select k.call_id, :tenant_id::uuid, :campaign_id::uuid, k.lead_list_id, k.lead_id,
      :edge_node_id::uuid, k.agent_id, k.phone, k.caller_id, t.attempts + 1, :timeout_seconds::int,
      'claimed', false, false, :lease_expires_at::timestamptz, :now::timestamptz,
      :now::timestamptz, :claim_key::text, :profile::text, :profile_version::text, k.zone,
      k.zone_source, :governor_held::boolean
    from candidate k join taken t on t.id = k.lead_id
    order by k.phone
    on conflict do nothing
    returning lead_id),
  marked as (
    update leads l set state = 'Dialing', attempts = l.attempts + 1, updated_at = :now::timestamptz
    from taken p join placed x on x.lead_id = p.id where l.id = p.id
    returning l.id, p.prior, l.attempts)${
      limited || deferring
        ? `,
  waiting as (
    ${[
      limited ? "select lead_id, until from blocked" : "",
      deferring
        ? "select * from unnest(:deferred_ids::uuid[], :deferred_until::timestamptz[]) as d(lead_id, until)"
        : "",
    ]
      .filter((part) => part !== "")
      .join("\n    union all\n    ")}),
  deferred as (
    update leads l set next_attempt_at = w.until, updated_at = :now::timestamptz
    from waiting w
    where l.id = w.lead_id and l.campaign_id = :campaign_id::uuid
      and l.state in ('Fresh', 'Retry', 'Callback')
      and ${fenceCondition(":campaign_id", ":lease_token")})`
        : ""
    }
  select id, prior, attempts, false as unplaced from marked
  union all
  select id, prior, 0, true from eligible e where not exists (select 1 from marked m where m.id = e.id)`;

const claimStatements = new Map<string, ReturnType<typeof namedStatement<ClaimStatementParams>>>();

/** The claim's statement of a shape, written once. */
function claimStatement(shape: ClaimShape) {
  const key = `${shape.capped}/${shape.limited}/${shape.deferring}`;
  let statement = claimStatements.get(key);
  if (!statement) {
    statement = namedStatement<ClaimStatementParams>(claimLeadsStatement(shape));
    claimStatements.set(key, statement);
  }
  return statement;
}

type ClaimStatementParams = ClaimParams & { capacity?: number };

type ClaimParams = {
  lead_ids: string;
  call_ids: string;
  agent_ids: string;
  lead_list_ids: string;
  phones: string;
  caller_ids: string;
  zones: string;
  zone_sources: string;
  cap_max: string;
  cap_hours: string;
  after_abandoned: string;
  after_machine: string;
  after_dnc_days: string;
  deferred_ids: string;
  deferred_until: string;
  profile: string;
  profile_version: string;
  governor_held: boolean;
  campaign_id: string;
  tenant_id: string;
  edge_node_id: string;
  max_attempts: number;
  timeout_seconds: number;
  now: string;
  lease_expires_at: string;
  claim_key: string | null;
  lease_token: number | null;
};

/** The calls a node's claim with this key placed since `since`, in the order they were placed. */
export const findClaimedCalls = (
  db: Executor,
  params: { nodeId: string; claimKey: string; since: Date },
) =>
  db
    .select()
    .from(calls)
    .where(
      and(
        eq(calls.edgeNodeId, params.nodeId),
        eq(calls.claimKey, params.claimKey),
        gte(calls.claimedAt, params.since),
      ),
    )
    .orderBy(asc(calls.id));

/** A node's claim key: its claim under way. */
type ClaimKey = { nodeId: string; claimKey: string };

/**
 * Takes a node's claim key for a claim about to run, unless a claim under it is under way
 * elsewhere; a key taken before `staleBefore` was left by a process that stopped mid-claim,
 * and is taken over. Whether it was taken.
 */
export async function takeClaimKey(
  db: Executor,
  params: ClaimKey & { at: Date; staleBefore: Date },
): Promise<boolean> {
  const taken = await db
    .insert(nodeClaimKeys)
    .values({ edgeNodeId: params.nodeId, claimKey: params.claimKey, takenAt: params.at })
    .onConflictDoUpdate({
      target: [nodeClaimKeys.edgeNodeId, nodeClaimKeys.claimKey],
      set: { takenAt: params.at },
      setWhere: lt(nodeClaimKeys.takenAt, params.staleBefore),
    })
    .returning({ takenAt: nodeClaimKeys.takenAt });
  return taken.length > 0;
}

/** The claim under a key is over: its calls, if any, answer a repeat from now on. */
export const releaseClaimKey = (db: Executor, params: ClaimKey & { at: Date }) =>
  db
    .delete(nodeClaimKeys)
    .where(
      and(
        eq(nodeClaimKeys.edgeNodeId, params.nodeId),
        eq(nodeClaimKeys.claimKey, params.claimKey),
        eq(nodeClaimKeys.takenAt, params.at),
      ),
    );

/** Keys left by processes that stopped mid-claim. */
export const deleteStaleClaimKeys = (db: Executor, before: Date) =>
  db.delete(nodeClaimKeys).where(lt(nodeClaimKeys.takenAt, before));

/**
 * The campaign of a node's call, and whether the call has ended: where an event for it goes,
 * read by a process that does not run the campaign (two node requests in three, with three
 * processes), so written as text for the driver.
 */
export async function nodeCallCampaign(
  raw: RawClient,
  params: { nodeId: string; callId: string },
): Promise<{ campaignId: string; ended: boolean } | undefined> {
  const [row] = await runStatement<{ campaign_id: string; status: string }>(
    raw,
    NODE_CALL_CAMPAIGN,
    [params.nodeId, params.callId],
  );
  return row && { campaignId: row.campaign_id, ended: row.status === "ended" };
}

const NODE_CALL_CAMPAIGN = `
  select campaign_id::text, status from calls where edge_node_id = $1::uuid and id = $2::uuid`;

export const findNodeCall = async (db: Executor, params: { nodeId: string; callId: string }) =>
  (
    await db
      .select()
      .from(calls)
      .where(and(eq(calls.edgeNodeId, params.nodeId), eq(calls.id, params.callId)))
      .limit(1)
  )[0];

export const findTenantCall = async (db: Executor, params: { tenantId: string; callId: string }) =>
  (
    await db
      .select()
      .from(calls)
      .where(and(eq(calls.tenantId, params.tenantId), eq(calls.id, params.callId)))
      .limit(1)
  )[0];

/**
 * Calls that have failed: claimed and not heard of within their lease, or past their lease on
 * a node that is revoked or has stopped sending heartbeats. A call on a live node keeps going
 * however long it lasts.
 */
export const failedCalls = (db: Executor, params: { now: Date; offlineBefore: Date }) =>
  db
    .select({ call: calls })
    .from(calls)
    .innerJoin(nodes, eq(nodes.id, calls.edgeNodeId))
    .where(
      and(
        ne(calls.status, "ended"),
        lt(calls.leaseExpiresAt, params.now),
        or(
          eq(calls.status, "claimed"),
          isNotNull(nodes.revokedAt),
          isNull(nodes.lastHeartbeatAt),
          lt(nodes.lastHeartbeatAt, params.offlineBefore),
        ),
      ),
    );

/**
 * A lead's fields in the order of the columns of the file it came from (its import's header):
 * the database keeps them as a JSON object, whose keys it sorts its own way.
 */
export function inFileOrder(
  fields: Record<string, string>,
  header: readonly string[] | null | undefined,
): Record<string, string> {
  if (!header) return fields;
  const ordered = fieldRecord();
  for (const name of fieldNamesOf(header)) {
    if (Object.hasOwn(fields, name)) ordered[name] = fields[name] as string;
  }
  for (const [name, value] of Object.entries(fields))
    if (!Object.hasOwn(ordered, name)) ordered[name] = value;
  return ordered;
}

/** A lead of a tenant, its fields in the order of the file it came from. */
export async function findLead(db: Executor, params: { tenantId: string; leadId: string }) {
  const [row] = await db
    .select({ lead: leads, header: leadImports.header })
    .from(leads)
    .leftJoin(leadImports, eq(leadImports.id, leads.importId))
    .where(and(eq(leads.tenantId, params.tenantId), eq(leads.id, params.leadId)))
    .limit(1);
  return row && { ...row.lead, fields: inFileOrder(row.lead.fields, row.header) };
}

/** A lead of a tenant with its number's do-not-call entry, if any, in one read. */
export const findLeadWithDnc = async (db: Executor, params: { tenantId: string; leadId: string }) =>
  (
    await db
      .select({ lead: leads, dncSource: dncNumbers.source })
      .from(leads)
      .leftJoin(
        dncNumbers,
        and(eq(dncNumbers.tenantId, leads.tenantId), eq(dncNumbers.phone, leads.phone)),
      )
      .where(and(eq(leads.tenantId, params.tenantId), eq(leads.id, params.leadId)))
      .limit(1)
  )[0];

/** A campaign's calls not yet ended, each with the lead it dials. */
export async function liveCallsOf(db: Executor, campaignId: string) {
  const rows = await db
    .select({
      call: calls,
      lead: {
        id: leads.id,
        phone: leads.phone,
        timezone: leads.timezone,
        fields: leads.fields,
        attempts: leads.attempts,
      },
      header: leadImports.header,
    })
    .from(calls)
    .innerJoin(leads, eq(leads.id, calls.leadId))
    .leftJoin(leadImports, eq(leadImports.id, leads.importId))
    .where(and(eq(calls.campaignId, campaignId), ne(calls.status, "ended")));
  return rows.map(({ call, lead, header }) => ({
    ...call,
    lead: { ...lead, fields: inFileOrder(lead.fields, header) },
  }));
}

/** Campaigns with calls not yet ended: their dialing state is loaded at start. */
export const campaignsWithLiveCalls = async (db: Executor) =>
  (
    await db
      .selectDistinct({ campaignId: calls.campaignId })
      .from(calls)
      .where(ne(calls.status, "ended"))
  ).map((row) => row.campaignId);

/** A campaign's most recent calls, oldest first: their outcomes and when they were answered. */
export async function recentCdrs(db: Executor, params: { campaignId: string; limit: number }) {
  const { campaignId, limit } = params;
  const rows = await db
    .select({
      callId: cdrs.callId,
      outcome: cdrs.outcome,
      disposition: cdrs.disposition,
      startedAt: cdrs.startedAt,
      answeredAt: cdrs.answeredAt,
      endedAt: cdrs.endedAt,
    })
    .from(cdrs)
    .where(eq(cdrs.campaignId, campaignId))
    .orderBy(desc(cdrs.createdAt))
    .limit(limit);
  return rows.reverse();
}

/**
 * When each of these dispositioned calls ended, and when it was last changed: its disposition,
 * since nothing changes an ended call after that.
 */
export const dispositionTimes = (db: Executor, callIds: string[]) =>
  callIds.length === 0
    ? Promise.resolve([])
    : db
        .select({ endedAt: calls.endedAt, updatedAt: calls.updatedAt })
        .from(calls)
        .where(and(isAnyUuid(calls.id, callIds), isNotNull(calls.disposition)))
        .orderBy(calls.endedAt);

/**
 * Calls of a campaign answered since `since`, as the compliance ledger counts them: by a
 * person, or by what detection took for a machine.
 */
export const answeredCdrsSince = (
  db: Executor,
  { campaignId, since }: { campaignId: string; since: Date },
) =>
  db
    .select({
      callId: cdrs.callId,
      outcome: cdrs.outcome,
      answeredAt: cdrs.answeredAt,
      bridgeMs: cdrs.bridgeMs,
      media: cdrs.media,
      disposition: cdrs.disposition,
    })
    .from(cdrs)
    .where(
      and(
        eq(cdrs.campaignId, campaignId),
        // Machines answered too: detection's verdicts, whose false positives the ledger counts.
        inArray(cdrs.outcome, ["answered", "abandoned", "machine"]),
        gte(cdrs.answeredAt, since),
      ),
    )
    .orderBy(cdrs.answeredAt);

/**
 * What a campaign's nodes heard and played on its calls answered since `since`: messages
 * played, cut off or not played, opt-outs, detection's verdicts, and the machine verdicts put
 * through to agents with what the agents said.
 */
export async function mediaCountsSince(
  db: Executor,
  { campaignId, since }: { campaignId: string; since: Date },
) {
  const count = (condition: ReturnType<typeof sql>) =>
    sql<number>`count(*) filter (where ${condition})::int`;
  const message = sql`${cdrs.media}->'message'`;
  const amd = sql`${cdrs.media}->'amd'`;
  const sampled = sql`(${amd}->>'sampled')::boolean`;
  const [row] = await db
    .select({
      abandonPlayed: count(
        sql`${message}->>'kind' = 'abandon' and (${message}->>'played')::boolean`,
      ),
      abandonCompleted: count(
        sql`${message}->>'kind' = 'abandon' and (${message}->>'completed')::boolean`,
      ),
      abandonNotPlayed: count(
        sql`(${message}->>'kind' = 'abandon' and not (${message}->>'played')::boolean) or (${cdrs.outcome} = 'abandoned' and ${message} is null)`,
      ),
      voicemailPlayed: count(
        sql`${message}->>'kind' = 'voicemail' and (${message}->>'played')::boolean`,
      ),
      optOuts: count(sql`(${cdrs.media}->>'opted_out')::boolean`),
      human: count(sql`${amd}->>'result' = 'human'`),
      machine: count(sql`${amd}->>'result' = 'machine'`),
      fax: count(sql`${amd}->>'result' = 'fax'`),
      unknown: count(sql`${amd}->>'result' = 'unknown'`),
      sampled: count(sampled),
      sampledJudged: count(sql`${sampled} and ${cdrs.disposition} is not null`),
      sampledMachines: count(sql`${sampled} and ${cdrs.disposition} = 'answering_machine'`),
    })
    .from(cdrs)
    .where(and(eq(cdrs.campaignId, campaignId), gte(cdrs.answeredAt, since)));
  return row as NonNullable<typeof row>;
}

/** When a campaign first started running, if it ever did: where its legal window begins. */
export const firstStartOf = async (db: Executor, campaignId: string) =>
  (
    await db
      .select({ at: min(campaignStatusChanges.createdAt) })
      .from(campaignStatusChanges)
      .where(
        and(
          eq(campaignStatusChanges.campaignId, campaignId),
          eq(campaignStatusChanges.toStatus, "running"),
        ),
      )
  )[0]?.at ?? null;

const stamp = (at: Date | null) => at?.toISOString() ?? null;
const mediaText = (call: CallRow) => (call.media ? JSON.stringify(call.media) : null);

/** A lead's next state once a call leaves it: decided by the call's step, written here. */
export interface LeadNext {
  state: LeadState;
  nextAttemptAt: Date | null;
}

/** The fence's parameters, by name (see db/fence.ts). */
const fenceParams = (fence: Fence) => ({ campaign_id: fence.campaignId, lease_token: fence.token });

type FenceParams = ReturnType<typeof fenceParams>;

/**
 * Writes what changes on a live call as the node reports it (status, agent, bridge, machine,
 * lease, ringing and answer times) from the call as the actor now holds it.
 */
export async function saveLiveCall(
  raw: RawClient,
  params: { call: CallRow; fence: Fence },
): Promise<void> {
  const { call } = params;
  await SAVE_LIVE_CALL.run(raw, {
    ...fenceParams(params.fence),
    call_id: call.id,
    status: call.status,
    agent_id: call.agentId,
    bridged: call.bridged,
    machine: call.machine,
    lease_expires_at: stamp(call.leaseExpiresAt),
    ringing_at: stamp(call.ringingAt),
    answered_at: stamp(call.answeredAt),
    media: mediaText(call),
    updated_at: stamp(call.updatedAt),
  });
}

const SAVE_LIVE_CALL = namedStatement<
  FenceParams & {
    call_id: string;
    status: string;
    agent_id: string | null;
    bridged: boolean;
    machine: boolean;
    lease_expires_at: string | null;
    ringing_at: string | null;
    answered_at: string | null;
    media: string | null;
    updated_at: string | null;
  }
>(`
  update calls set status = :status, agent_id = :agent_id::uuid, bridged = :bridged::boolean,
    machine = :machine::boolean, lease_expires_at = :lease_expires_at::timestamptz,
    ringing_at = :ringing_at::timestamptz, answered_at = :answered_at::timestamptz,
    media = :media::jsonb, updated_at = :updated_at::timestamptz
  where id = :call_id::uuid and ${fenceCondition(":campaign_id", ":lease_token")}`);

/**
 * A call's lead's update to its next state (`:lead_state`), as the CTE `lead` of the call's
 * statement: a lead whose number went on the tenant's do-not-call list while its call was in
 * flight (marked by the listing, see `retireListedLeads`) ends `DoNotCall` instead of waiting
 * for another attempt, keeping that state in `listed_from` for when the number leaves the
 * list. The mark is read on the lead's row, which the update waits for while a listing holds
 * it, so a listing committed at the same moment is never missed. Then `lead.completed` (done,
 * or listed) or `lead.exhausted`. `where` picks the lead; the statement answers `listed`.
 */
const leadUpdateStatements = (params: { set: string; where: string; at: string }) => `
  lead as (
    update leads set
      state = case when listed_from is not null and ${DIALABLE_NEXT} then 'DoNotCall'
        else :lead_state::text end,
      listed_from = case when listed_from is not null and ${DIALABLE_NEXT} then :lead_state::text
        end,
      ${params.set}
    where ${params.where}
    returning state = 'DoNotCall' and listed_from is not null as listed),${[
      outboxStatement("lead_completed", {
        type: "lead.completed",
        source: "lead",
        where: ":lead_state::text in ('Completed', 'DoNotCall') or lead.listed",
        tenantId: ":tenant_id::uuid",
        orderKey: ":lead_id::text",
        data: "jsonb_build_object('lead_id', :lead_id::text)",
        at: params.at,
      }),
      outboxStatement("lead_exhausted", {
        type: "lead.exhausted",
        source: "lead",
        where: ":lead_state::text = 'Exhausted'",
        tenantId: ":tenant_id::uuid",
        orderKey: ":lead_id::text",
        data: "jsonb_build_object('lead_id', :lead_id::text)",
        at: params.at,
      }),
    ].join(",")}
  select listed from lead`;

/** The lead's next state is one still to be dialled: a listing ends it instead. */
const DIALABLE_NEXT = ":lead_state::text in ('Fresh', 'Retry', 'Callback')";

/** Whether the lead update of a statement with `leadUpdateStatements` ended its lead as listed. */
const endedListed = (rows: { listed: boolean }[]) => rows[0]?.listed === true;

/** `dnc.added` for each number the `added` CTE put on the list. */
const dncEventStatement = (added: string, source: string, by: string, at: string) =>
  outboxStatement("dnc_added", {
    type: "dnc.added",
    source: added,
    tenantId: ":tenant_id::uuid",
    orderKey: "null::text",
    data: `jsonb_build_object('phone', ${added}.phone, 'source', ${source}, 'added_by', ${by})`,
    at,
  });

/**
 * Ends a call in one statement: its row, its CDR (once per call), and for a call no agent
 * took, its lead's next state as the call's step decided it (`lead`). One round trip and one
 * commit, where a transaction of three statements took five. `ended` is the call as it ends.
 * Answers whether the lead ended `DoNotCall` instead, its number listed meanwhile.
 */
export async function endCall(
  raw: RawClient,
  params: {
    ended: CallRow;
    cdrId: string;
    ringSeconds: number;
    talkSeconds: number;
    lead: LeadNext | null;
    fence: Fence;
  },
): Promise<boolean> {
  const { ended: call, lead } = params;
  const rows = await END_CALL.run<{ listed: boolean }>(raw, {
    ...fenceParams(params.fence),
    call_id: call.id,
    outcome: call.outcome,
    hangup_cause: call.hangupCause,
    ended_at: stamp(call.endedAt),
    updated_at: stamp(call.updatedAt),
    bridge_ms: call.bridgeMs,
    media: mediaText(call),
    cdr_id: params.cdrId,
    tenant_id: call.tenantId,
    lead_list_id: call.leadListId,
    lead_id: call.leadId,
    edge_node_id: call.edgeNodeId,
    agent_id: call.bridged ? call.agentId : null,
    phone: call.phone,
    caller_id: call.callerId,
    attempt: call.attempt,
    disposition: call.disposition,
    claimed_at: stamp(call.claimedAt),
    answered_at: stamp(call.answeredAt),
    ring_seconds: params.ringSeconds,
    talk_seconds: params.talkSeconds,
    lead_state: lead?.state ?? null,
    next_attempt_at: stamp(lead?.nextAttemptAt ?? null),
  });
  return endedListed(rows);
}

const END_CALL = namedStatement<
  FenceParams & {
    call_id: string;
    outcome: string | null;
    hangup_cause: string | null;
    ended_at: string | null;
    updated_at: string | null;
    bridge_ms: number | null;
    media: string | null;
    cdr_id: string;
    tenant_id: string;
    lead_list_id: string;
    lead_id: string;
    edge_node_id: string;
    agent_id: string | null;
    phone: string;
    caller_id: string;
    attempt: number;
    disposition: string | null;
    claimed_at: string | null;
    answered_at: string | null;
    ring_seconds: number;
    talk_seconds: number;
    lead_state: string | null;
    next_attempt_at: string | null;
  }
>(`
  with ended as (
    update calls set status = 'ended', outcome = :outcome, hangup_cause = :hangup_cause,
      ended_at = :ended_at::timestamptz, updated_at = :updated_at::timestamptz,
      bridge_ms = :bridge_ms::int, media = :media::jsonb
    where id = :call_id::uuid and ${fenceCondition(":campaign_id", ":lease_token")}
    returning id, profile, profile_version, zone, zone_source, governor_held, media, notes,
      disposition_automatic, disposition_outcome),
  cdr as (
    insert into cdrs (id, tenant_id, call_id, campaign_id, lead_list_id, lead_id, edge_node_id,
      agent_id, phone, caller_id, attempt, outcome, hangup_cause, disposition, started_at,
      answered_at, ended_at, ring_seconds, talk_seconds, bridge_ms, profile, profile_version,
      zone, zone_source, governor_held, media, notes, disposition_automatic, disposition_outcome,
      created_at)
    select :cdr_id::uuid, :tenant_id::uuid, id, :campaign_id::uuid, :lead_list_id::uuid,
      :lead_id::uuid, :edge_node_id::uuid, :agent_id::uuid, :phone, :caller_id, :attempt::int,
      :outcome, :hangup_cause, :disposition, :claimed_at::timestamptz,
      :answered_at::timestamptz, :ended_at::timestamptz, :ring_seconds::int,
      :talk_seconds::int, :bridge_ms::int, profile, profile_version, zone, zone_source,
      governor_held, media, notes, disposition_automatic, disposition_outcome,
      :ended_at::timestamptz
    from ended
    on conflict do nothing),${outboxStatement("call_ended", {
      type: "call.ended",
      source: "ended",
      tenantId: ":tenant_id::uuid",
      orderKey: "ended.id::text",
      data: "jsonb_build_object('call_id', ended.id)",
      at: ":ended_at::timestamptz",
    })},${leadUpdateStatements({
      set: `next_attempt_at = :next_attempt_at::timestamptz, last_outcome = :outcome,
      updated_at = :ended_at::timestamptz`,
      where: `id = :lead_id::uuid and :lead_state::text is not null
      and exists (select 1 from ended)`,
      at: ":ended_at::timestamptz",
    })}`);

/**
 * Bridges an answered call to its agent and marks its lead Connected, in one statement.
 * `call` is the call as it is now.
 */
export async function bridgeCall(
  raw: RawClient,
  params: { call: CallRow; fence: Fence },
): Promise<void> {
  const { call } = params;
  await BRIDGE_CALL.run(raw, {
    ...fenceParams(params.fence),
    call_id: call.id,
    answered_at: stamp(call.answeredAt),
    agent_id: call.agentId,
    lease_expires_at: stamp(call.leaseExpiresAt),
    media: mediaText(call),
    updated_at: stamp(call.updatedAt),
  });
}

const BRIDGE_CALL = namedStatement<
  FenceParams & {
    call_id: string;
    answered_at: string | null;
    agent_id: string | null;
    lease_expires_at: string | null;
    media: string | null;
    updated_at: string | null;
  }
>(`
  with answered as (
    update calls set status = 'answered', answered_at = :answered_at::timestamptz,
      agent_id = :agent_id::uuid, bridged = true, lease_expires_at = :lease_expires_at::timestamptz,
      media = :media::jsonb, updated_at = :updated_at::timestamptz
    where id = :call_id::uuid and ${fenceCondition(":campaign_id", ":lease_token")}
    returning lead_id)
  update leads set state = 'Connected', last_outcome = 'answered', updated_at = :updated_at::timestamptz
  where id in (select lead_id from answered)`);

/**
 * Records an agent's disposition in one statement: on the call and its CDR, the lead's next
 * state as the call's step decided it, and for `addToDnc` the phone on the tenant's
 * do-not-call list with its audit record (`by`: who dispositioned). `call` is the call as it
 * now is. Answers whether the lead ended `DoNotCall` instead, its number listed meanwhile.
 */
export async function settleDisposition(
  raw: RawClient,
  params: {
    call: CallRow;
    lead: LeadNext;
    addToDnc: boolean;
    by: ChangeActor;
    fence: Fence;
  },
): Promise<boolean> {
  const { call, lead } = params;
  const rows = await SETTLE_DISPOSITION.run<{ listed: boolean }>(raw, {
    ...fenceParams(params.fence),
    call_id: call.id,
    disposition: call.disposition,
    disposition_automatic: call.dispositionAutomatic,
    disposition_outcome: call.dispositionOutcome,
    notes: call.notes,
    updated_at: stamp(call.updatedAt),
    tenant_id: call.tenantId,
    phone: call.phone,
    agent_id: call.agentId,
    add_to_dnc: params.addToDnc,
    lead_id: call.leadId,
    lead_state: lead.state,
    next_attempt_at: stamp(lead.nextAttemptAt),
    audit_id: Bun.randomUUIDv7(),
    actor_type: params.by.actorType,
    actor_id: params.by.actorId,
  });
  return endedListed(rows);
}

const SETTLE_DISPOSITION = namedStatement<
  FenceParams & {
    call_id: string;
    disposition: string | null;
    disposition_automatic: boolean;
    disposition_outcome: string | null;
    notes: string | null;
    updated_at: string | null;
    tenant_id: string;
    phone: string;
    agent_id: string | null;
    add_to_dnc: boolean;
    lead_id: string;
    lead_state: string;
    next_attempt_at: string | null;
    audit_id: string;
    actor_type: string;
    actor_id: string | null;
  }
>(`
  with updated as (
    update calls set disposition = :disposition, disposition_automatic = :disposition_automatic,
      disposition_outcome = :disposition_outcome, notes = :notes,
      updated_at = :updated_at::timestamptz
    where id = :call_id::uuid and ${fenceCondition(":campaign_id", ":lease_token")}
    returning id),
  cdr as (
    update cdrs set disposition = :disposition, disposition_automatic = :disposition_automatic,
      disposition_outcome = :disposition_outcome, notes = :notes
    where call_id = :call_id::uuid and exists (select 1 from updated)),
  dnc as (
    insert into dnc_numbers (tenant_id, phone, source, created_by, created_at)
    select :tenant_id::uuid, :phone, 'disposition', :agent_id, :updated_at::timestamptz
    where :add_to_dnc::boolean and exists (select 1 from updated)
    on conflict do nothing
    returning phone),
  dnc_request as (
    insert into dnc_requests (tenant_id, phone, source, requested_at)
    select :tenant_id::uuid, phone, 'disposition', :updated_at::timestamptz from dnc),
  dnc_audit as (
    insert into audit_events (id, tenant_id, actor_type, actor_id, action, target_type, target_id,
      details, created_at)
    select :audit_id::uuid, :tenant_id::uuid, :actor_type, :actor_id, 'dnc.added', 'dnc_entry', phone,
      jsonb_build_object('phone', phone, 'source', 'disposition', 'call_id', :call_id::text),
      :updated_at::timestamptz
    from dnc),${outboxStatement("call_dispositioned", {
      type: "call.dispositioned",
      source: "updated",
      tenantId: ":tenant_id::uuid",
      orderKey: "updated.id::text",
      data: "jsonb_build_object('call_id', updated.id)",
      at: ":updated_at::timestamptz",
    })},${dncEventStatement("dnc", "'disposition'", ":agent_id::text", ":updated_at::timestamptz")},${leadUpdateStatements(
      {
        set: `next_attempt_at = :next_attempt_at::timestamptz, last_outcome = :disposition,
      updated_at = :updated_at::timestamptz`,
        where: "id = :lead_id::uuid and exists (select 1 from updated)",
        at: ":updated_at::timestamptz",
      },
    )}`);

/**
 * A lead pressed the opt-out key during the abandon message: the call's media facts, and its
 * number on the tenant's do-not-call list (source `keypress`) with its audit record, in one
 * statement. `call` is the call as it now is.
 */
export async function recordOptOut(
  raw: RawClient,
  params: { call: CallRow; at: Date; fence: Fence },
): Promise<void> {
  const { call } = params;
  await RECORD_OPT_OUT.run(raw, {
    ...fenceParams(params.fence),
    call_id: call.id,
    media: mediaText(call),
    tenant_id: call.tenantId,
    phone: call.phone,
    node_id: call.edgeNodeId,
    at: params.at.toISOString(),
    audit_id: Bun.randomUUIDv7(),
  });
}

const RECORD_OPT_OUT = namedStatement<
  FenceParams & {
    call_id: string;
    media: string | null;
    tenant_id: string;
    phone: string;
    node_id: string;
    at: string;
    audit_id: string;
  }
>(`
  with updated as (
    update calls set media = :media::jsonb, updated_at = :at::timestamptz
    where id = :call_id::uuid and ${fenceCondition(":campaign_id", ":lease_token")}
    returning id),
  dnc as (
    insert into dnc_numbers (tenant_id, phone, source, created_by, created_at)
    select :tenant_id::uuid, :phone, 'keypress', :node_id, :at::timestamptz
    where exists (select 1 from updated)
    on conflict do nothing
    returning phone),
  dnc_request as (
    insert into dnc_requests (tenant_id, phone, source, requested_at)
    select :tenant_id::uuid, :phone, 'keypress', :at::timestamptz
    where exists (select 1 from updated)),${dncEventStatement("dnc", "'keypress'", ":node_id::text", ":at::timestamptz")}
  insert into audit_events (id, tenant_id, actor_type, actor_id, action, target_type, target_id,
    details, created_at)
  select :audit_id::uuid, :tenant_id::uuid, 'edge_node', :node_id, 'dnc.added', 'dnc_entry', phone,
    jsonb_build_object('phone', phone, 'source', 'keypress', 'call_id', :call_id::text),
    :at::timestamptz
  from dnc`);

/** Calls in flight on a node, whichever process owns their campaigns. */
export const countLiveCallsOnNode = async (db: Executor, nodeId: string) =>
  (
    await db
      .select({ live: count() })
      .from(calls)
      .where(and(eq(calls.edgeNodeId, nodeId), ne(calls.status, "ended")))
  )[0]?.live ?? 0;

/** Calls in flight on a node with their campaigns, whichever process owns them. */
export const liveCallsOnNode = (db: Executor, nodeId: string) =>
  db
    .select({ callId: calls.id, campaignId: calls.campaignId })
    .from(calls)
    .where(and(eq(calls.edgeNodeId, nodeId), ne(calls.status, "ended")));

/** A tenant's running campaigns, oldest first: where a claim looks for work. */
export const runningCampaignIds = async (db: Executor, tenantId: string) =>
  (
    await db
      .select({ id: campaigns.id })
      .from(campaigns)
      .where(and(eq(campaigns.tenantId, tenantId), eq(campaigns.status, "running")))
      .orderBy(asc(campaigns.createdAt), asc(campaigns.id))
  ).map((row) => row.id);

/** The limits a number is over at `at` across its workspace (`number_limits`), each with when it lifts. */
export async function numberLimitsAt(
  db: Executor,
  params: { tenantId: string; phone: string; at: Date; limits: NumberLimits },
): Promise<{ code: "attempt_cap" | "cooldown"; reason: string; until: Date }[]> {
  const { limits } = params;
  const result = await db.execute(sql`
    select code, reason, until from number_limits(${params.tenantId}::uuid, ${params.phone},
      ${params.at.toISOString()}::timestamptz, ${limits.cap?.max ?? null}::int,
      ${limits.cap?.hours ?? null}::int, ${limits.afterAbandoned}::int,
      ${limits.afterMachine}::int, ${limits.afterDncRequest}::int)`);
  return rowsOf<{ code: "attempt_cap" | "cooldown"; reason: string; until: string | Date }>(
    result,
  ).map((row) => ({ code: row.code, reason: row.reason, until: new Date(row.until) }));
}
