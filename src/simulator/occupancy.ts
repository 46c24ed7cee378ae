import type { AgentState } from "../dialer/agents.ts";

/** Time agents spent logged in, busy (talking or wrapping up) and talking, in milliseconds. */
export interface AgentTime {
  loggedIn: number;
  busy: number;
  talking: number;
}

const BUSY: ReadonlySet<AgentState> = new Set(["on_call", "wrap_up"]);

/**
 * Adds up agent time by state from the agent board's changes. Occupancy is busy time over
 * logged-in time; anything but `offline` counts as logged in.
 */
export class OccupancyMeter {
  private readonly agents = new Map<string, { state: AgentState; since: number }>();
  private readonly closed: AgentTime = { loggedIn: 0, busy: 0, talking: 0 };

  change(agentId: string, state: AgentState, at: number) {
    const current = this.agents.get(agentId);
    if (current) this.add(this.closed, current.state, at - current.since);
    if (state === "offline") this.agents.delete(agentId);
    else this.agents.set(agentId, { state, since: at });
  }

  /** Totals up to `at`, open spans included. */
  totals(at: number): AgentTime {
    const totals = { ...this.closed };
    for (const { state, since } of this.agents.values()) this.add(totals, state, at - since);
    return totals;
  }

  private add(totals: AgentTime, state: AgentState, span: number) {
    if (span <= 0 || state === "offline") return;
    totals.loggedIn += span;
    if (BUSY.has(state)) totals.busy += span;
    if (state === "on_call") totals.talking += span;
  }
}

export const occupancyOf = (time: AgentTime) =>
  time.loggedIn === 0 ? 0 : time.busy / time.loggedIn;
