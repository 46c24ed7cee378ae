import { Type } from "@sinclair/typebox";
import { t } from "elysia";
import type { ServiceDeps } from "../../deps.ts";
import { currentCallOf } from "../../dialer/calls.ts";
import { AgentSchema, agentView } from "../../dialer/model.ts";
import { AgentFiguresSchema, agentFigures } from "./figures.ts";

/** The most agents the board shows at once: a floor's worth. */
const MAX_ON_BOARD = 500;

export const AgentBoardSchema = t.Object({
  agents: t.Array(
    t.Object({
      agent: AgentSchema,
      call: t.Union(
        [
          t.Object({
            id: t.String({ format: "uuid" }),
            phone: t.String(),
            lead_fields: t.Record(t.String(), t.String()),
            answered_at: t.Union([t.String({ format: "date-time" }), t.Null()]),
          }),
          t.Null(),
        ],
        { description: "the call the agent is reserved for, on or wrapping up" },
      ),
      figures: AgentFiguresSchema,
    }),
  ),
  counts: t.Object({
    by_state: t.Record(t.String(), Type.Integer()),
    paused_by_reason: t.Record(t.String(), Type.Integer({ description: "`unspecified` for none" })),
  }),
});

/**
 * The agents signed in to the workspace, for supervisors: each one's state (and reason), its
 * call with the lead, and its figures for the day; with the counts by state and by not-ready
 * reason. Longest in their state first.
 */
export async function agentBoard(deps: ServiceDeps, tenantId: string, timeZone?: string) {
  const present = deps.dialer.agents
    .inTenant(tenantId)
    .filter((agent) => agent.state !== "offline")
    .sort((a, b) => a.since - b.since)
    .slice(0, MAX_ON_BOARD);
  const [figures, calls] = await Promise.all([
    agentFigures(
      deps,
      tenantId,
      present.map((agent) => agent.userId),
      timeZone,
    ),
    Promise.all(present.map((agent) => currentCallOf(deps, agent))),
  ]);
  const byState: Record<string, number> = {};
  const byReason: Record<string, number> = {};
  for (const agent of present) {
    byState[agent.state] = (byState[agent.state] ?? 0) + 1;
    if (agent.state === "paused") {
      const reason = agent.reason ?? "unspecified";
      byReason[reason] = (byReason[reason] ?? 0) + 1;
    }
  }
  return {
    agents: present.map((agent, index) => {
      const current = calls[index];
      return {
        agent: agentView(agent),
        call:
          current?.call && current.lead
            ? {
                id: current.call.id,
                phone: current.lead.phone,
                lead_fields: current.lead.fields,
                answered_at: current.call.answered_at,
              }
            : null,
        figures: figures[index] as (typeof figures)[number],
      };
    }),
    counts: { by_state: byState, paused_by_reason: byReason },
  };
}
