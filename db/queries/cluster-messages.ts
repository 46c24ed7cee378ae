import { inArray, lt, sql } from "drizzle-orm";
import type { Executor } from "../client.ts";
import { clusterMessages } from "../schema/index.ts";
import { isAny } from "../statement.ts";

/** Stores a push too large for a NOTIFY payload; its id goes in the notification instead. */
export const insertClusterMessage = async (db: Executor, payload: string) =>
  (
    (
      await db
        .insert(clusterMessages)
        .values({ payload, createdAt: sql`now()` })
        .returning({ id: clusterMessages.id })
    )[0] as { id: number }
  ).id;

export const clusterMessagesByIds = (db: Executor, ids: number[]) =>
  db
    .select({ id: clusterMessages.id, payload: clusterMessages.payload })
    .from(clusterMessages)
    .where(isAny(clusterMessages.id, ids, "bigint"));

/**
 * Deletes up to `limit` stored pushes older than `olderThanSeconds` (by the database's clock,
 * the one that stamped them), the oldest first; returns how many went.
 */
export async function deleteOldClusterMessages(
  db: Executor,
  params: { olderThanSeconds: number; limit: number },
) {
  const oldest = db
    .select({ id: clusterMessages.id })
    .from(clusterMessages)
    .where(
      lt(clusterMessages.createdAt, sql`now() - make_interval(secs => ${params.olderThanSeconds})`),
    )
    .orderBy(clusterMessages.id)
    .limit(params.limit);
  const deleted = await db
    .delete(clusterMessages)
    .where(inArray(clusterMessages.id, oldest))
    .returning({ id: clusterMessages.id });
  return deleted.length;
}
