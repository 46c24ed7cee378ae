import { sql } from "drizzle-orm";
import type { Database, RawClient } from "../client.ts";
import { rowsOf } from "../rows.ts";
import { arrayLiteral, runStatement } from "../statement.ts";

export interface RateHitsRow {
  key: string;
  bucket: number;
  hits: number;
}

/** A process's ask for units of a key's budget over the minute of buckets `first`…`last`. */
export interface RateGrantAsk {
  key: string;
  first: number;
  last: number;
  limit: number;
  /** Units for requests waiting now: granted as far as the budget goes. */
  need: number;
  /** Units asked ahead of demand: granted up to half of what is left after `need`. */
  extra: number;
}

export interface RateGrant {
  granted: number;
  /** Every process's requests and units granted, per bucket from `first` to `last`. */
  hits: number[];
}

/**
 * Grants units of a key's budget and charges them to bucket `last`, in one statement:
 * `rate_limit_grant` (migration 0015) takes the key's advisory lock before it reads the
 * minute's total, so grants of one key in several processes never both spend the same units.
 */
export async function grantRateHits(raw: RawClient, ask: RateGrantAsk): Promise<RateGrant> {
  const rows = await runStatement<{ granted: number; bucket_hits: number[] }>(
    raw,
    GRANT_RATE_HITS,
    [ask.key, ask.first, ask.last, ask.limit, ask.need, ask.extra],
  );
  const row = rows[0];
  return { granted: Number(row?.granted ?? 0), hits: Array.from(row?.bucket_hits ?? [], Number) };
}

const GRANT_RATE_HITS = `
  select granted, bucket_hits from rate_limit_grant(
    rate_key => $1, first_bucket => $2, last_bucket => $3, cap => $4, need => $5, extra => $6)`;

/**
 * Adds each (key, bucket)'s change to its row, in one statement: requests a process counted
 * alone while the database failed, and units it gives back (negative). A row never goes below
 * zero, and a give-back to a row already swept is dropped. The rows are written in key and
 * bucket order, so that processes writing the same rows at once never wait on each other in a
 * cycle.
 */
export async function addRateHits(
  raw: RawClient,
  params: { deltas: readonly RateHitsRow[] },
): Promise<void> {
  const { deltas } = params;
  await runStatement(raw, ADD_RATE_HITS, [
    arrayLiteral(deltas.map((delta) => delta.key)),
    `{${deltas.map((delta) => delta.bucket).join(",")}}`,
    `{${deltas.map((delta) => delta.hits).join(",")}}`,
  ]);
}

const ADD_RATE_HITS = `
  insert into rate_limit_hits as h (key, bucket, hits)
  select d.key, d.bucket, d.hits from unnest($1::text[], $2::bigint[], $3::int[]) as d(key, bucket, hits)
  where d.hits > 0
    or exists (select 1 from rate_limit_hits r where r.key = d.key and r.bucket = d.bucket)
  order by d.key, d.bucket
  on conflict (key, bucket) do update set hits = greatest(h.hits + excluded.hits, 0)`;

/**
 * Deletes up to `limit` rows of buckets before `before`; returns how many. Rows another
 * process is deleting (or adding to) are skipped rather than waited for.
 */
export async function deleteStaleRateHits(
  db: Database,
  params: { before: number; limit: number },
): Promise<number> {
  const result = await db.execute(sql`
    with deleted as (
      delete from rate_limit_hits where ctid = any(array(
        select ctid from rate_limit_hits where bucket < ${params.before}
        limit ${params.limit} for update skip locked))
      returning 1)
    select count(*)::int as deleted from deleted`);
  return Number(rowsOf<{ deleted: number }>(result)[0]?.deleted ?? 0);
}
