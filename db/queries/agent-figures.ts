import type { RawClient } from "../client.ts";
import { arrayLiteral, namedStatement } from "../statement.ts";

/** Seconds an agent spent in one state (and reason) within a span, from the states it left. */
export interface StateSeconds {
  userId: string;
  state: string;
  reason: string | null;
  seconds: number;
}

/** An agent's connected calls started within a span. */
export interface CallFigures {
  userId: string;
  calls: number;
  talkSeconds: number;
}

interface SpanParams extends Record<string, string> {
  tenant_id: string;
  user_ids: string;
  from: string;
  to: string;
}

const spanParams = (params: { tenantId: string; userIds: string[]; from: Date; to: Date }) => ({
  tenant_id: params.tenantId,
  user_ids: arrayLiteral(params.userIds),
  from: params.from.toISOString(),
  to: params.to.toISOString(),
});

/** The time each agent spent in each state and reason within `[from, to)`, as logged. */
export function loggedStateSeconds(
  raw: RawClient,
  params: { tenantId: string; userIds: string[]; from: Date; to: Date },
): Promise<StateSeconds[]> {
  return LOGGED_STATE_SECONDS.run<StateSeconds>(raw, spanParams(params));
}

const LOGGED_STATE_SECONDS = namedStatement<SpanParams>(`
  select user_id as "userId", state, reason,
    sum(extract(epoch from least(ended_at, :to::timestamptz)
      - greatest(started_at, :from::timestamptz)))::float8 as seconds
  from agent_state_log
  where tenant_id = :tenant_id::uuid and user_id = any(:user_ids::uuid[])
    and ended_at > :from::timestamptz and started_at < :to::timestamptz
  group by user_id, state, reason`);

/** Each agent's connected calls that started within `[from, to)`, and their talk time. */
export function connectedCallFigures(
  raw: RawClient,
  params: { tenantId: string; userIds: string[]; from: Date; to: Date },
): Promise<CallFigures[]> {
  return CONNECTED_CALL_FIGURES.run<CallFigures>(raw, spanParams(params));
}

const CONNECTED_CALL_FIGURES = namedStatement<SpanParams>(`
  select agent_id as "userId", count(*)::int as calls, sum(talk_seconds)::int as "talkSeconds"
  from cdrs
  where tenant_id = :tenant_id::uuid and agent_id = any(:user_ids::uuid[])
    and outcome = 'answered'
    and started_at >= :from::timestamptz and started_at < :to::timestamptz
  group by agent_id`);
