import type { CallRow } from "../db/queries/dialer.ts";
import { LEAD_STATES } from "../db/schema/leads.ts";
import type { ZoneSource } from "../src/compliance/lead-rules.ts";
import { type RecentCalls, recordEndedCall } from "../src/dialer/call-history.ts";
import { type ComplianceLedger, ledgerEntryOf, type VerdictEntry } from "../src/dialer/ledger.ts";
import type { CallOutcome } from "../src/dialer/outcome.ts";
import type { LiveCalls } from "./live-calls.ts";

export type LeadState = (typeof LEAD_STATES)[number];
export type DialableState = "Fresh" | "Retry" | "Callback";

/** A lead the campaign may dial soon: what a claim needs without reading the database. */
export interface HopperLead {
  id: string;
  leadListId: string;
  phone: string;
  timezone: string;
  zoneSource: ZoneSource;
  state: DialableState;
  attempts: number;
  callerId: string;
  fields: Record<string, string>;
}

/** What an agent is shown of the lead when a call connects. */
export interface LeadSummary {
  id: string;
  phone: string;
  timezone: string;
  fields: Record<string, string>;
  attempts: number;
}

/** A lead offered to an agent in preview, since `offeredAt` (epoch ms). */
export interface PreviewOffer {
  lead: HopperLead;
  offeredAt: number;
}

/** A call not yet ended, with the lead it dials. */
export type LiveCall = CallRow & { lead: LeadSummary };

/**
 * A campaign's dialing state, owned by its actor: the hopper (a bounded queue of leads that
 * were dialable when it was filled, in dialing order), calls in flight, leads counted by
 * state, the outcomes of its recent calls, the pacer's estimates and the compliance ledger.
 * The database stays the record; this is what claims, pacing and pushes read instead of
 * querying it.
 */
export interface DialingState {
  hopper: HopperLead[];
  /** When the hopper was last filled (epoch ms); it is refilled when empty or stale. */
  hopperFilledAt: number;
  calls: LiveCalls;
  /**
   * Calls that ended with an agent who has not yet given a disposition, as they ended: a
   * disposition is decided from here rather than read back from the database. At most
   * `MAX_WRAPPING`, the oldest forgotten first (a disposition then reads the call's row).
   */
  wrapping: ReadonlyMap<string, CallRow>;
  /**
   * In preview, the lead each agent is offered, by agent: out of the hopper until the agent
   * dials it or skips it (it then goes back). Kept in memory only: after a restart the lead,
   * still dialable in the database, is offered again.
   */
  previews: ReadonlyMap<string, PreviewOffer>;
  leads: Record<LeadState, number>;
  /** Outcomes of the most recent calls, oldest first, at most `RECENT_CALLS`. */
  recent: CallOutcome[];
  /**
   * Live answers, ring, talk and wrap-up times of recent calls, and every live answer and
   * abandon of the last 30 days. Both are recorded into rather than copied: successive
   * states share them, because copying 30 days of answers on every ended call would cost
   * more than the call. Only `applyDialing` records into them.
   */
  history: RecentCalls;
  ledger: ComplianceLedger;
  /** When the campaign first ran (epoch ms), where its legal window starts; null before. */
  firstStartedAt: number | null;
}

/** How many leads a hopper holds at most; refills read this many in one query. */
export const HOPPER_SIZE = 200;
/**
 * A hopper older than this reads the callbacks and retries due again, so that one falling due
 * goes first. Its fresh leads keep their place: an import only adds fresh leads after them.
 */
export const HOPPER_MAX_AGE_MS = 5_000;
/** Calls in wrap-up a campaign keeps at most. */
export const MAX_WRAPPING = 1_000;
/** How many recent calls pacing and stats measure rates over. */
export const RECENT_CALLS = 500;

const FINAL_STATES: ReadonlySet<LeadState> = new Set(["Completed", "Exhausted", "DoNotCall"]);

export const noLeads = (): Record<LeadState, number> =>
  Object.fromEntries(LEAD_STATES.map((state) => [state, 0])) as Record<LeadState, number>;

export type LeadMove = { from: LeadState; to: LeadState; count?: number };

export type DialingEvent =
  | { type: "dialing.loaded"; dialing: DialingState }
  | {
      type: "dialing.hopperFilled";
      leads: HopperLead[];
      at: number;
      /** `leads` are the callbacks and retries due: the hopper's fresh leads follow them. */
      dueOnly?: boolean;
    }
  | {
      type: "dialing.callsPlaced";
      /** Leads leaving the hopper: those with a call, and those no longer dialable. */
      removed: string[];
      calls: LiveCall[];
      /** The state each dialled lead had before it became `Dialing`. */
      from: DialableState[];
    }
  | { type: "dialing.callChanged"; call: LiveCall; lead?: LeadMove }
  | {
      type: "dialing.callEnded";
      callId: string;
      outcome: CallOutcome;
      lead?: LeadMove;
      /** Epoch ms of the claim, the answer (if any) and the end. */
      claimedAt: number;
      answeredAt: number | null;
      endedAt: number;
      /** The node's answer-to-bridge time, as the CDR records it. */
      bridgeMs: number | null;
      /** The call as it ended, when its agent now owes a disposition. */
      wrapUp?: CallRow | undefined;
      /** A machine verdict hung up on, for the ledger's estimate of false positives. */
      verdict?: VerdictEntry | undefined;
    }
  /** Leads offered to agents in preview; `removed` leave the hopper (offered, or not dialable). */
  | {
      type: "dialing.previewsOffered";
      offers: { agentId: string; lead: HopperLead; at: number }[];
      removed: string[];
    }
  /** An agent's offer ends: dialled, or (`back`) skipped or given up, its lead back in the hopper. */
  | { type: "dialing.previewEnded"; agentId: string; back: boolean }
  /** A disposition was given for a call in wrap-up (a sampled machine verdict: judged). */
  | { type: "dialing.dispositioned"; callId: string; verdict?: VerdictEntry | undefined }
  /** An agent dispositioned a call `wrapMs` after it hung up, at `at`. */
  | { type: "dialing.wrappedUp"; wrapMs: number; at: number }
  | { type: "dialing.started"; at: number }
  | { type: "dialing.leadsMoved"; moves: LeadMove[] }
  /** Counted again from the database, after leads arrived by import. */
  | { type: "dialing.leadsCounted"; leads: Record<LeadState, number> };

function moved(leads: Record<LeadState, number>, moves: LeadMove[]) {
  const next = { ...leads };
  for (const { from, to, count = 1 } of moves) {
    next[from] = Math.max(0, next[from] - count);
    next[to] += count;
  }
  return next;
}

/**
 * The dialing state after one committed change. Pure but for the history and the ledger,
 * which it records into (see `DialingState`) unless `record` is false: a preview of what a
 * decision would lead to, which must leave them as they are.
 */
export function applyDialing(
  state: DialingState,
  event: DialingEvent,
  record = true,
): DialingState {
  switch (event.type) {
    case "dialing.loaded":
      return event.dialing;
    case "dialing.hopperFilled": {
      const hopper = event.dueOnly
        ? [...event.leads, ...state.hopper.filter((lead) => lead.state === "Fresh")].slice(
            0,
            HOPPER_SIZE,
          )
        : event.leads;
      const offered = new Set([...state.previews.values()].map((offer) => offer.lead.id));
      return {
        ...state,
        hopper: offered.size > 0 ? hopper.filter((lead) => !offered.has(lead.id)) : hopper,
        hopperFilledAt: event.at,
      };
    }
    case "dialing.callsPlaced": {
      const removed = new Set(event.removed);
      return {
        ...state,
        hopper: state.hopper.filter((lead) => !removed.has(lead.id)),
        calls: state.calls.with(event.calls),
        leads: moved(
          state.leads,
          event.from.map((from) => ({ from, to: "Dialing" })),
        ),
      };
    }
    case "dialing.callChanged":
      return {
        ...state,
        calls: state.calls.with([event.call]),
        leads: event.lead ? moved(state.leads, [event.lead]) : state.leads,
      };
    case "dialing.callEnded": {
      const recent =
        state.recent.length >= RECENT_CALLS ? state.recent.slice(1) : state.recent.slice();
      recent.push(event.outcome);
      if (record) {
        recordEndedCall(state.history, event);
        const entry = ledgerEntryOf(event);
        if (entry) state.ledger.record(entry);
        if (event.verdict) state.ledger.recordVerdict(event.verdict);
      }
      return {
        ...state,
        calls: state.calls.without(event.callId),
        wrapping: event.wrapUp ? wrappingWith(state.wrapping, event.wrapUp) : state.wrapping,
        recent,
        leads: event.lead ? moved(state.leads, [event.lead]) : state.leads,
      };
    }
    case "dialing.dispositioned": {
      if (record && event.verdict) state.ledger.recordVerdict(event.verdict);
      if (!state.wrapping.has(event.callId)) return state;
      const wrapping = new Map(state.wrapping);
      wrapping.delete(event.callId);
      return { ...state, wrapping };
    }
    case "dialing.previewsOffered": {
      const removed = new Set(event.removed);
      const previews = new Map(state.previews);
      for (const offer of event.offers)
        previews.set(offer.agentId, { lead: offer.lead, offeredAt: offer.at });
      return {
        ...state,
        hopper: state.hopper.filter((lead) => !removed.has(lead.id)),
        previews,
      };
    }
    case "dialing.previewEnded": {
      const offer = state.previews.get(event.agentId);
      if (!offer) return state;
      const previews = new Map(state.previews);
      previews.delete(event.agentId);
      const back = event.back && state.hopper.length < HOPPER_SIZE;
      return { ...state, previews, hopper: back ? [...state.hopper, offer.lead] : state.hopper };
    }
    case "dialing.leadsMoved":
      return { ...state, leads: moved(state.leads, event.moves) };
    case "dialing.leadsCounted":
      // Counted again because leads changed outside the campaign's calls (an import, a number
      // listed): the hopper is read again too, rather than offer a lead no longer dialable.
      return { ...state, leads: event.leads, hopper: [] };
    case "dialing.wrappedUp":
      if (!record) return state;
      state.history.wrapped(event.wrapMs, event.at);
      return { ...state };
    case "dialing.started":
      return state.firstStartedAt === null ? { ...state, firstStartedAt: event.at } : state;
  }
}

/** The calls in wrap-up with one more, the oldest forgotten past `MAX_WRAPPING`. */
function wrappingWith(wrapping: ReadonlyMap<string, CallRow>, call: CallRow) {
  const next = new Map(wrapping);
  next.set(call.id, call);
  if (next.size > MAX_WRAPPING) next.delete(next.keys().next().value as string);
  return next;
}

/** The dialing state a decision's events would lead to, the history and ledger left alone. */
export const previewDialing = (state: DialingState, events: readonly { type: string }[]) =>
  events.reduce(
    (next, event) =>
      event.type.startsWith("dialing.") ? applyDialing(next, event as DialingEvent, false) : next,
    state,
  );

/**
 * What the hopper reads from the database before a claim: every kind of lead when it is
 * empty, the callbacks and retries due when it is stale, else nothing.
 */
export function hopperRefill(state: DialingState, now: number): "all" | "due" | null {
  if (state.hopper.length === 0) return "all";
  return now - state.hopperFilledAt >= HOPPER_MAX_AGE_MS ? "due" : null;
}

/** A callback the lead agreed to is made whatever attempts it has used. */
const isCallback = (lead: HopperLead) => lead.state === "Callback";

/**
 * Up to `count` leads from the front of the hopper that may be dialled now. The others passed
 * over leave it: those out of attempts (but callbacks), and those `windowOf` closes, with when
 * it next opens (null: not within its horizon).
 */
export function takeFromHopper(
  state: DialingState,
  maxAttempts: number,
  count: number,
  windowOf: (lead: HopperLead) => { open: boolean; nextOpenAt: number | null },
): {
  taken: HopperLead[];
  dropped: HopperLead[];
  closed: { lead: HopperLead; opensAt: number | null }[];
} {
  const taken: HopperLead[] = [];
  const dropped: HopperLead[] = [];
  const closed: { lead: HopperLead; opensAt: number | null }[] = [];
  for (const lead of state.hopper) {
    if (taken.length >= count) break;
    if (lead.attempts >= maxAttempts && !isCallback(lead)) {
      dropped.push(lead);
      continue;
    }
    const window = windowOf(lead);
    if (window.open) taken.push(lead);
    else {
      dropped.push(lead);
      closed.push({ lead, opensAt: window.nextOpenAt });
    }
  }
  return { taken, dropped, closed };
}

/** Calls placed but not yet with an agent: what progressive pacing counts against ready agents. */
export const unbridgedCalls = (state: DialingState) => state.calls.unbridged;

/** Calls placed with no agent waiting for them and not yet bridged: the ones that may be abandoned. */
export const unreservedCalls = (state: DialingState) => state.calls.unreserved;

export const callsInFlight = (state: DialingState) => state.calls.size;

/** For each call no person has answered yet (nor a machine), how long ago it was placed. */
export function ringingFor(state: DialingState, now: number): number[] {
  const ringing: number[] = [];
  for (const call of state.calls) {
    if (call.answeredAt === null && !call.machine) ringing.push(now - call.claimedAt.getTime());
  }
  return ringing;
}

/** Recent calls by what happened: the measure behind answer and abandon rates. */
export function recentCounts(state: DialingState) {
  let pickedUp = 0;
  let answered = 0;
  let abandoned = 0;
  for (const outcome of state.recent) {
    if (outcome === "answered") answered++;
    else if (outcome === "abandoned") abandoned++;
    if (outcome === "answered" || outcome === "abandoned" || outcome === "machine") pickedUp++;
  }
  return { total: state.recent.length, picked_up: pickedUp, answered, abandoned };
}

/** Every lead final and no call in flight; a campaign that never had a lead is not done. */
export function dialingDone(state: DialingState) {
  if (callsInFlight(state) > 0) return false;
  let total = 0;
  for (const lead of LEAD_STATES) {
    const count = state.leads[lead];
    total += count;
    if (count > 0 && !FINAL_STATES.has(lead)) return false;
  }
  return total > 0;
}
