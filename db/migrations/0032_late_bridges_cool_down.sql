-- A call bridged to its agent later than 2 s after the answer is an abandoned call in law, as
-- the compliance ledger counts it (`BRIDGE_LIMIT_MS`): it starts the redial cool-down after an
-- abandoned call too. Sources: Ofcom's persistent-misuse statement, in force from 2017-03 (2 s
-- to an agent; no redial within 72 h of an abandoned call unless an agent is guaranteed), and
-- the US TSR 16 CFR 310.4(b)(4)(iii) (2 s after the greeting).
CREATE OR REPLACE FUNCTION "number_limits"("tenant" uuid, "number" text, "at" timestamptz, "cap_max" integer,
  "cap_hours" integer, "after_abandoned" integer, "after_machine" integer, "after_dnc_days" integer)
RETURNS TABLE ("code" text, "reason" text, "until" timestamptz) LANGUAGE sql STABLE AS $$
  select 'attempt_cap', 'attempt_cap', c.until from (
    select r.claimed_at + make_interval(hours => "cap_hours") as until from calls r
    where r.tenant_id = "tenant" and r.phone = "number"
      and r.claimed_at > "at" - make_interval(hours => "cap_hours")
    order by r.claimed_at desc offset "cap_max" - 1 limit 1) c
  where "cap_max" is not null
  union all
  select 'cooldown', h.outcome, max(coalesce(r.ended_at, r.claimed_at)) + make_interval(hours => h.hours)
  from (values ('abandoned', "after_abandoned"), ('machine', "after_machine")) h(outcome, hours)
  join calls r on r.outcome = h.outcome
    -- Bridged past the 2 s the law allows: abandoned too (the ledger counts it so).
    or (h.outcome = 'abandoned' and r.outcome = 'answered' and r.bridge_ms > 2000)
  where h.hours is not null and r.tenant_id = "tenant" and r.phone = "number"
    and r.claimed_at > "at" - make_interval(hours => h.hours + 1)
  group by h.outcome, h.hours
  having max(coalesce(r.ended_at, r.claimed_at)) + make_interval(hours => h.hours) > "at"
  union all
  select 'cooldown', 'do_not_call_request', max(d.requested_at) + make_interval(days => "after_dnc_days")
  from dnc_requests d
  where "after_dnc_days" is not null and d.tenant_id = "tenant" and d.phone = "number"
    and d.requested_at > "at" - make_interval(days => "after_dnc_days")
  having count(*) > 0
$$;
