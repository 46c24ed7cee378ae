import { and, desc, eq, ne, sql } from "drizzle-orm";
import type { HopperLead } from "../../actors/dialing.ts";
import type { Executor } from "../client.ts";
import { rowsOf } from "../rows.ts";
import { calls, leadLists, leads } from "../schema/index.ts";

/** The list a campaign's numbers dialled by hand are kept in, made on the first. */
export const MANUAL_LIST_NAME = "Manual dials";
/** The advisory lock class of a campaign's hand-dialled leads. */
const MANUAL_LEADS_LOCK = 1_296_125_764;

/**
 * The node of the tenant that has sent a heartbeat since `since`, is not revoked and has the
 * most room (its capacity less its calls in flight), if any has room.
 */
export async function nodeWithRoom(
  db: Executor,
  params: { tenantId: string; since: Date },
): Promise<{ nodeId: string } | undefined> {
  const result = await db.execute(sql`
    select n.id, n.max_concurrent_calls - (select count(*) from calls c
      where c.edge_node_id = n.id and c.status <> 'ended')::int as room
    from nodes n
    where n.tenant_id = ${params.tenantId}::uuid and n.revoked_at is null
      and n.last_heartbeat_at >= ${params.since.toISOString()}::timestamptz
    order by room desc, n.id
    limit 1`);
  const [row] = rowsOf<{ id: string; room: number }>(result);
  return row && Number(row.room) > 0 ? { nodeId: row.id } : undefined;
}

/** A lead of the campaign as the hopper holds leads, with its list's caller id. */
export async function findDialLead(
  db: Executor,
  params: { campaignId: string; leadId: string },
): Promise<HopperLead | undefined> {
  const [row] = await db
    .select({ lead: leads, callerId: leadLists.callerId })
    .from(leads)
    .innerJoin(leadLists, eq(leadLists.id, leads.leadListId))
    .where(and(eq(leads.campaignId, params.campaignId), eq(leads.id, params.leadId)))
    .limit(1);
  if (!row) return undefined;
  const { lead } = row;
  return {
    id: lead.id,
    leadListId: lead.leadListId,
    phone: lead.phone,
    timezone: lead.timezone,
    zoneSource: lead.zoneSource,
    state: lead.state as HopperLead["state"],
    attempts: lead.attempts,
    callerId: row.callerId,
    fields: lead.fields,
  };
}

/** Whether a call to `phone` is in flight anywhere in the workspace. */
export async function callUnderWayTo(db: Executor, params: { tenantId: string; phone: string }) {
  const [found] = await db
    .select({ id: calls.id })
    .from(calls)
    .where(
      and(
        eq(calls.tenantId, params.tenantId),
        eq(calls.phone, params.phone),
        ne(calls.status, "ended"),
      ),
    )
    .limit(1);
  return found !== undefined;
}

/** The caller ID of the campaign's newest list: the one its hand dials show. */
export async function newestCallerId(db: Executor, campaignId: string) {
  const [list] = await db
    .select({ callerId: leadLists.callerId })
    .from(leadLists)
    .where(and(eq(leadLists.campaignId, campaignId), ne(leadLists.callerId, "")))
    .orderBy(desc(leadLists.createdAt))
    .limit(1);
  return list?.callerId;
}

/**
 * The lead a number dialled by hand is dialled as: in the campaign's list of such numbers
 * (made on the first), new, or the number's earlier one made fresh again, unless a call to it
 * is under way (undefined). Its earlier calls stay on its CDRs.
 */
export async function manualLead(
  db: Executor,
  params: {
    tenantId: string;
    campaignId: string;
    callerId: string;
    phone: string;
    timezone: string;
    zoneSource: "number" | "column";
    ids: { list: string; lead: string };
    now: Date;
  },
): Promise<ManualLead | undefined> {
  return db.transaction(async (tx) => {
    // A campaign's hand dials take turns here: one list is made, and each lead counted once.
    await tx.execute(
      sql`select pg_advisory_xact_lock(${MANUAL_LEADS_LOCK}::int, hashtext(${params.campaignId}::text))`,
    );
    const [list] = await tx
      .select({ id: leadLists.id })
      .from(leadLists)
      .where(and(eq(leadLists.campaignId, params.campaignId), eq(leadLists.name, MANUAL_LIST_NAME)))
      .limit(1);
    const listId = list?.id ?? params.ids.list;
    if (list)
      // A list made before hand dials took a caller ID had none.
      await tx
        .update(leadLists)
        .set({ callerId: params.callerId })
        .where(and(eq(leadLists.id, listId), eq(leadLists.callerId, "")));
    else {
      await tx.insert(leadLists).values({
        id: listId,
        tenantId: params.tenantId,
        campaignId: params.campaignId,
        name: MANUAL_LIST_NAME,
        callerId: params.callerId,
        leadCount: 0,
        createdAt: params.now,
        updatedAt: params.now,
      });
    }
    const [found] = await tx
      .select({
        id: leads.id,
        state: leads.state,
        attempts: leads.attempts,
        nextAttemptAt: leads.nextAttemptAt,
      })
      .from(leads)
      .where(and(eq(leads.leadListId, listId), eq(leads.phone, params.phone)))
      .limit(1);
    const earlier = found && {
      state: found.state,
      attempts: found.attempts,
      nextAttemptAt: found.nextAttemptAt,
    };
    // A fresh lead here is another hand dial's, about to go. It is not locked: that dial's claim
    // passes a locked lead over, and both dials would be refused.
    if (found?.state === "Fresh") return { id: found.id, listId, earlier: earlier ?? null };
    const [lead] = await tx
      .insert(leads)
      .values({
        id: params.ids.lead,
        tenantId: params.tenantId,
        campaignId: params.campaignId,
        leadListId: listId,
        importId: listId,
        importRow: 0,
        phone: params.phone,
        timezone: params.timezone,
        zoneSource: params.zoneSource,
        state: "Fresh",
        attempts: 0,
        fields: {},
        createdAt: params.now,
        updatedAt: params.now,
      })
      .onConflictDoUpdate({
        target: [leads.leadListId, leads.phone],
        set: {
          state: "Fresh",
          attempts: 0,
          nextAttemptAt: null,
          timezone: params.timezone,
          zoneSource: params.zoneSource,
          updatedAt: params.now,
        },
        setWhere: sql`${leads.state} not in ('Dialing', 'Connected')`,
      })
      .returning({ id: leads.id });
    if (!lead) return undefined;
    if (!earlier) {
      await tx
        .update(leadLists)
        .set({ leadCount: sql`${leadLists.leadCount} + 1`, updatedAt: params.now })
        .where(eq(leadLists.id, listId));
    }
    return { id: lead.id, listId, earlier: earlier ?? null };
  });
}

/** A number's lead as `manualLead` left it, and what it was before (null: it is new). */
export interface ManualLead {
  id: string;
  listId: string;
  earlier: { state: string; attempts: number; nextAttemptAt: Date | null } | null;
}

/**
 * Undoes `manualLead` when the dial was refused after it: a new lead goes, an earlier one gets
 * its state back, so that nothing is left for the campaign to dial by itself. Only while the
 * lead is still `Fresh`, as `manualLead` made it.
 */
export async function undoManualLead(db: Executor, lead: ManualLead, now: Date): Promise<void> {
  await db.transaction(async (tx) => {
    const fresh = and(eq(leads.id, lead.id), eq(leads.state, "Fresh"));
    if (!lead.earlier) {
      const gone = await tx.delete(leads).where(fresh).returning({ id: leads.id });
      if (gone.length > 0) {
        await tx
          .update(leadLists)
          .set({ leadCount: sql`${leadLists.leadCount} - 1`, updatedAt: now })
          .where(eq(leadLists.id, lead.listId));
      }
      return;
    }
    await tx
      .update(leads)
      .set({
        state: lead.earlier.state as typeof leads.$inferSelect.state,
        attempts: lead.earlier.attempts,
        nextAttemptAt: lead.earlier.nextAttemptAt,
        updatedAt: now,
      })
      .where(fresh);
  });
}
