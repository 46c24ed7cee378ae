import { Type } from "@sinclair/typebox";
import { type Static, t } from "elysia";
import { connectedCallFigures, loggedStateSeconds } from "../../../db/queries/agent-figures.ts";
import type { ServiceDeps } from "../../deps.ts";
import { AGENT_STATES, type AgentPresence } from "../../dialer/agents.ts";
import { unprocessable } from "../../errors.ts";
import { instantOf, localParts } from "../../lib/zone-time.ts";
import { canonicalTimeZone } from "../leads/normalise.ts";

const Seconds = Type.Integer({ minimum: 0 });

export const AgentFiguresSchema = t.Object({
  user_id: t.String({ format: "uuid" }),
  day: t.Object(
    {
      start: t.String({ format: "date-time" }),
      end: t.String({ format: "date-time" }),
      time_zone: t.String(),
    },
    { description: "the local day counted, in the zone asked for (UTC when none)" },
  ),
  calls: Type.Integer({ description: "calls connected to the agent that started that day" }),
  talk_seconds: Seconds,
  wrap_up_seconds: Seconds,
  average_talk_seconds: t.Union([t.Number(), t.Null()]),
  average_wrap_up_seconds: t.Union([t.Number(), t.Null()]),
  seconds_by_state: t.Record(t.String(), Seconds, {
    description: "time in each state that day, the current state up to now included",
  }),
  paused_seconds_by_reason: t.Record(t.String(), Seconds, {
    description: "time paused for each reason (`unspecified` when none was given)",
  }),
});
export type AgentFigures = Static<typeof AgentFiguresSchema>;

export const FiguresQuery = t.Object({
  time_zone: t.Optional(
    t.String({ description: "an IANA zone whose calendar day is counted; UTC by default" }),
  ),
});

/** The local day around `now` in a zone: its first instant and the next day's. */
function dayIn(zone: string, now: number) {
  const { year, month, day } = localParts(zone, now);
  const next = new Date(Date.UTC(year, month - 1, day + 1));
  return {
    start: instantOf(zone, year, month, day, 0),
    end: instantOf(zone, next.getUTCFullYear(), next.getUTCMonth() + 1, next.getUTCDate(), 0),
  };
}

/**
 * What agents did on a day: calls connected and their talk, wrap-up time, time in each state
 * and paused for each reason. The states they left are read from their log, and each agent's
 * current state is counted up to now.
 */
export async function agentFigures(
  deps: ServiceDeps,
  tenantId: string,
  userIds: string[],
  timeZone: string | undefined,
): Promise<AgentFigures[]> {
  const zone = timeZone === undefined ? "Etc/UTC" : canonicalTimeZone(timeZone);
  if (!zone) throw unprocessable("time_zone", `not an IANA time zone: ${timeZone}`);
  const now = deps.clock.now();
  const { start, end } = dayIn(zone, now);
  const span = { tenantId, userIds, from: new Date(start), to: new Date(end) };
  const [states, calls] = await Promise.all([
    loggedStateSeconds(deps.rawDb, span),
    connectedCallFigures(deps.rawDb, span),
  ]);
  return userIds.map((userId) => {
    const byState: Record<string, number> = Object.fromEntries(
      AGENT_STATES.filter((state) => state !== "offline").map((state) => [state, 0]),
    );
    const byReason: Record<string, number> = {};
    const count = (state: string, reason: string | null | undefined, seconds: number) => {
      if (!(state in byState)) return;
      byState[state] = (byState[state] ?? 0) + seconds;
      if (state !== "paused") return;
      const key = reason ?? "unspecified";
      byReason[key] = (byReason[key] ?? 0) + seconds;
    };
    for (const row of states) if (row.userId === userId) count(row.state, row.reason, row.seconds);
    const current = deps.dialer.agents.get(userId);
    if (current?.tenantId === tenantId) count(current.state, current.reason, openSeconds(current));
    const own = calls.find((row) => row.userId === userId);
    const talk = own?.talkSeconds ?? 0;
    const connected = own?.calls ?? 0;
    const wrapUp = byState.wrap_up ?? 0;
    return {
      user_id: userId,
      day: {
        start: new Date(start).toISOString(),
        end: new Date(end).toISOString(),
        time_zone: zone,
      },
      calls: connected,
      talk_seconds: talk,
      wrap_up_seconds: Math.round(wrapUp),
      average_talk_seconds: connected ? round1(talk / connected) : null,
      average_wrap_up_seconds: connected ? round1(wrapUp / connected) : null,
      seconds_by_state: roundAll(byState),
      paused_seconds_by_reason: roundAll(byReason),
    };
  });

  /** The current state's time within the day. */
  function openSeconds(agent: AgentPresence) {
    return Math.max(0, Math.min(now, end) - Math.max(agent.since, start)) / 1000;
  }
}

const round1 = (value: number) => Math.round(value * 10) / 10;
const roundAll = (values: Record<string, number>) =>
  Object.fromEntries(Object.entries(values).map(([key, value]) => [key, Math.round(value)]));
