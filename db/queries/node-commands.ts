import { and, asc, eq, inArray, isNull, lt, sql } from "drizzle-orm";
import type { Executor } from "../client.ts";
import { nodeCommands } from "../schema/index.ts";
import { isAnyUuid } from "../statement.ts";

export type NodeCommandRow = typeof nodeCommands.$inferInsert;
export type StoredNodeCommand = typeof nodeCommands.$inferSelect;

/** At most this many commands go out in one poll; the rest follow in the next. */
const POLL_BATCH = 100;

export const insertNodeCommand = (db: Executor, row: NodeCommandRow) =>
  db.insert(nodeCommands).values(row).onConflictDoNothing();

/** Whether the node has a command it has not acknowledged: the long poll's cheap probe. */
export async function hasPendingCommands(db: Executor, nodeId: string): Promise<boolean> {
  const rows = await db
    .select({ id: nodeCommands.id })
    .from(nodeCommands)
    .where(and(eq(nodeCommands.edgeNodeId, nodeId), isNull(nodeCommands.ackedAt)))
    .limit(1);
  return rows.length > 0;
}

/** Whether a command's call has ended: the command is moot, and a dial would place a call closed. */
const callEnded = sql`exists (select 1 from calls c where c.id = ${nodeCommands.callId} and c.status = 'ended')`;

/**
 * The node's commands not yet acknowledged, oldest first, each marked as handed out once
 * more: every poll hands out all of them until the node acknowledges each. Those whose calls
 * have ended meanwhile are withdrawn (marked acknowledged) instead of handed out.
 */
export async function deliverPendingCommands(
  db: Executor,
  params: { nodeId: string; now: Date },
): Promise<StoredNodeCommand[]> {
  await db
    .update(nodeCommands)
    .set({ ackedAt: params.now })
    .where(
      and(eq(nodeCommands.edgeNodeId, params.nodeId), isNull(nodeCommands.ackedAt), callEnded),
    );
  const pending = db
    .select({ id: nodeCommands.id })
    .from(nodeCommands)
    .where(
      and(
        eq(nodeCommands.edgeNodeId, params.nodeId),
        isNull(nodeCommands.ackedAt),
        sql`not ${callEnded}`,
        // A poll that waited through its node's revocation is handed nothing.
        sql`exists (select 1 from nodes n where n.id = ${params.nodeId}::uuid and n.revoked_at is null)`,
      ),
    )
    .orderBy(asc(nodeCommands.createdAt), asc(nodeCommands.id))
    .limit(POLL_BATCH);
  const rows = await db
    .update(nodeCommands)
    .set({ deliveredAt: params.now, deliveries: sql`${nodeCommands.deliveries} + 1` })
    .where(inArray(nodeCommands.id, pending))
    .returning();
  return rows.sort(
    (a, b) => a.createdAt.getTime() - b.createdAt.getTime() || a.id.localeCompare(b.id),
  );
}

/** Marks the node's own commands among `ids` acknowledged; another node's ids change nothing. */
export const ackNodeCommands = (
  db: Executor,
  params: { nodeId: string; ids: string[]; now: Date },
) =>
  params.ids.length === 0
    ? Promise.resolve()
    : db
        .update(nodeCommands)
        .set({ ackedAt: params.now })
        .where(
          and(
            eq(nodeCommands.edgeNodeId, params.nodeId),
            isAnyUuid(nodeCommands.id, params.ids),
            isNull(nodeCommands.ackedAt),
          ),
        );

/** Forgets commands older than `before`: acknowledged, or for calls long over. */
export const deleteOldNodeCommands = (db: Executor, before: Date) =>
  db.delete(nodeCommands).where(lt(nodeCommands.createdAt, before));
