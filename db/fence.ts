import { type SQL, sql } from "drizzle-orm";

/**
 * What a write of a campaign carries to prove that its process still owns the campaign: the
 * token of the campaign's lease. `dialer_fence` (a database function) refuses the whole
 * statement with SQLSTATE DL001 when the token is no longer the lease's, and holds a takeover
 * back until the write commits (a shared advisory lock that a takeover takes exclusively).
 * Null where one process owns every campaign.
 */
export interface Fence {
  campaignId: string;
  token: number | null;
}

/** The fence as a condition of a Drizzle query. */
export const fenced = (fence: Fence): SQL =>
  sql`(select dialer_fence(${fence.campaignId}::uuid, ${fence.token}::bigint))`;

/**
 * The fence as a condition of a statement written as text, given the parameter numbers of the
 * campaign and the token. A scalar subquery: evaluated once per statement, not once per row.
 */
export const fenceCondition = (campaignParam: string, tokenParam: string) =>
  `(select dialer_fence(${campaignParam}::uuid, ${tokenParam}::bigint))`;
