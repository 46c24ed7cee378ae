import { sql } from "drizzle-orm";
import type { Executor } from "../client.ts";
import { rowsOf } from "../rows.ts";

/** A campaign's calls that ended in one minute, counted as the compliance ledger counts them. */
export interface MinuteFigures {
  minute: Date;
  attempts: number;
  answered: number;
  abandoned: number;
  bridged_late: number;
  machine: number;
  no_answer: number;
  busy: number;
  failed: number;
  talk_seconds: number;
}

/**
 * A campaign's calls counted by the minute they ended in (when their CDR was written, by the
 * campaign's own index), from `from` to `to` (whole minutes, `to` excluded): with
 * `everyMinute`, a minute with no call is listed too. The CDRs are the record.
 */
export async function minuteFigures(
  db: Executor,
  params: {
    campaignId: string;
    from: Date;
    to: Date;
    everyMinute: boolean;
    /** A live answer put through later than this is an abandoned call in law. */
    bridgeLimitMs: number;
  },
): Promise<MinuteFigures[]> {
  const late = sql`(outcome = 'answered' and coalesce(bridge_ms, 0) > ${params.bridgeLimitMs}::int)`;
  const from = params.from.toISOString();
  const to = params.to.toISOString();
  const result = await db.execute(sql`
    with counted as (
      select date_trunc('minute', created_at) as minute, count(*)::int as attempts,
        (count(*) filter (where outcome = 'answered' and not ${late}))::int as answered,
        (count(*) filter (where outcome = 'abandoned' or ${late}))::int as abandoned,
        (count(*) filter (where ${late}))::int as bridged_late,
        (count(*) filter (where outcome = 'machine'))::int as machine,
        (count(*) filter (where outcome = 'no_answer'))::int as no_answer,
        (count(*) filter (where outcome = 'busy'))::int as busy,
        (count(*) filter (where outcome = 'failed'))::int as failed,
        coalesce(sum(talk_seconds), 0)::int as talk_seconds
      from cdrs
      where campaign_id = ${params.campaignId}::uuid
        and created_at >= ${from}::timestamptz and created_at < ${to}::timestamptz
      group by 1),
    minutes as (${
      params.everyMinute
        ? sql`select generate_series(${from}::timestamptz,
            ${to}::timestamptz - interval '1 minute', interval '1 minute') as minute`
        : sql`select minute from counted`
    })
    select (extract(epoch from m.minute) * 1000)::float8 as minute_ms,
      coalesce(c.attempts, 0) as attempts, coalesce(c.answered, 0) as answered,
      coalesce(c.abandoned, 0) as abandoned, coalesce(c.bridged_late, 0) as bridged_late,
      coalesce(c.machine, 0) as machine,
      coalesce(c.no_answer, 0) as no_answer, coalesce(c.busy, 0) as busy,
      coalesce(c.failed, 0) as failed, coalesce(c.talk_seconds, 0) as talk_seconds
    from minutes m left join counted c on c.minute = m.minute
    order by m.minute`);
  return rowsOf<Record<string, unknown>>(result).map((row) => ({
    // As a number: the drivers' text of a timestamp in the years 1–99 reads as 19xx or 20xx.
    minute: new Date(Number(row.minute_ms)),
    attempts: Number(row.attempts),
    answered: Number(row.answered),
    abandoned: Number(row.abandoned),
    bridged_late: Number(row.bridged_late),
    machine: Number(row.machine),
    no_answer: Number(row.no_answer),
    busy: Number(row.busy),
    failed: Number(row.failed),
    talk_seconds: Number(row.talk_seconds),
  }));
}
