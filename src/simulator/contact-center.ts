import type { DatabaseHandle } from "../../db/client.ts";
import { openDatabase } from "../../db/client.ts";
import { runMigrations } from "../../db/migrate.ts";
import { countLeadsByState } from "../../db/queries/leads.ts";
import { AgentBoard, type AgentPresence, type AgentState } from "../dialer/agents.ts";
import { RecentCalls } from "../dialer/call-history.ts";
import { ComplianceLedger, ledgerEntryOf } from "../dialer/ledger.ts";
import {
  PACER_DEFAULTS,
  type PacerDecision,
  type PacerInput,
  type PacerTuning,
  pace,
} from "../dialer/predictive.ts";
import {
  applyCallEvent,
  type CallEventType,
  claimJobs,
  type DialJob,
  dispositionCall,
  setAgentState,
  sweepExpiredCalls,
} from "../dialer/service.ts";
import type { UserPrincipal } from "../identity/principal.ts";
import { Agenda } from "./agenda.ts";
import type { DaySample } from "./chart.ts";
import { OccupancyMeter, occupancyOf } from "./occupancy.ts";
import { type CallScript, drawCall, type OutcomeModel } from "./outcome-model.ts";
import { Random } from "./random.ts";
import type { DaySummary } from "./summary.ts";
import { buildWorld, SteppedClock, type World } from "./world.ts";

/**
 * How calls are paced. `predictive`: the predictive pacer, `dial_ratio` as its cap;
 * `progressive`: the service's progressive pacing at 1.0; `ratio`: progressive at a fixed
 * `dial_ratio` (3.0 is the busy-but-illegal anchor).
 */
export type PacingMode = "predictive" | "progressive" | "ratio";

export interface DayOptions {
  agents: number;
  leads: number;
  /** Length of the simulated shift; fractions give minutes. */
  hours: number;
  mode: PacingMode;
  /** `ratio`: the fixed dial ratio; `predictive`: the cap on it. */
  ratio: number;
  maxAbandonRate: number;
  seed: number;
  model: OutcomeModel;
  /** When the shift starts (epoch ms). */
  startAt: number;
  timezone: string;
  /** How often the edge node asks for jobs (simulated ms). */
  tickMs: number;
  /** How often the chart takes a point (simulated ms). */
  sampleMs: number;
  tuning?: PacerTuning;
  /** Sees every decision of the predictive pacer with what it was given. */
  onPace?: (at: number, input: PacerInput, decision: PacerDecision) => void;
  /** A migrated database to run on; by default a fresh in-memory PGlite. */
  database?: DatabaseHandle;
  onProgress?: (fraction: number, detail: string) => void;
}

export interface DayResult {
  summary: DaySummary;
  samples: DaySample[];
  /** The ledger as the nodes saw the calls, fed at each call's end. */
  ledger: ComplianceLedger;
  firstStartedAt: number;
  /** The node's answer-to-bridge time of every bridged call. */
  bridgeTimes: Map<string, number>;
  world: World;
  /** Stops the actors and closes the database if the simulation opened it. */
  close(): Promise<void>;
}

const SWEEP_EVERY_MS = 30_000;
/** Calls still running when the shift ends are followed to their end, up to this long. */
const DRAIN_LIMIT_MS = 4 * 3_600_000;
const ABANDON_HANGUP_MS = 1_000;
const MACHINE_HANGUP_MS = 500;
const RINGING_AFTER_MS = 200;

/**
 * Stand-in for a hook the dialer service does not have yet. The service paces every claim
 * itself (calls waiting for an agent ≤ ready agents × `dial_ratio`), so it never dials for
 * agents who are about to free up, which is the point of predictive pacing. While the
 * simulator claims on the predictive pacer's behalf, this board reports enough ready agents
 * for the pacer's decision to pass; the claim's `max` carries the decision itself. Only the
 * pacing count is touched: bridging picks real agents through `longestReady`.
 */
class PacerPassThroughBoard extends AgentBoard {
  readyAtLeast: number | undefined;

  override inCampaign(campaignId: string, state?: AgentState): AgentPresence[] {
    const found = super.inCampaign(campaignId, state);
    const wanted = this.readyAtLeast;
    if (state !== "ready" || wanted === undefined || found.length >= wanted) return found;
    const stand: AgentPresence = {
      userId: "pacer",
      tenantId: "",
      state: "ready",
      campaignId,
      callId: null,
      since: 0,
    };
    return [...found, ...Array.from({ length: wanted - found.length }, () => stand)];
  }
}

const iso = (at: number) => new Date(at).toISOString();

/** The local hour of an instant in a zone, memoised per minute (calls come in thousands). */
function localHours(timezone: string) {
  const format = new Intl.DateTimeFormat("en-US", {
    timeZone: timezone,
    hour: "numeric",
    hourCycle: "h23",
  });
  let minute = Number.NaN;
  let hour = 0;
  return (at: number) => {
    const current = Math.floor(at / 60_000);
    if (current !== minute) {
      minute = current;
      hour = Number(format.format(new Date(at))) % 24;
    }
    return hour;
  };
}

/**
 * One shift of a contact center in one process: the app's services over a real database,
 * a scripted edge node dialling what it claims and reporting each call's events, and
 * scripted agents who talk, wrap up and disposition. Simulated time jumps from one due
 * action to the next, so an 8-hour day takes as long as its database work.
 */
export async function simulateDay(options: DayOptions): Promise<DayResult> {
  const realStart = performance.now();
  const ownDatabase = options.database === undefined;
  const database =
    options.database ??
    (await (async () => {
      const handle = await openDatabase({ dataDir: "memory://" });
      await runMigrations(handle);
      return handle;
    })());
  const clock = new SteppedClock(options.startAt);
  const world = await buildWorld({
    database,
    clock,
    agents: options.agents,
    leads: options.leads,
    timezone: options.timezone,
    dialRatio: options.mode === "progressive" ? 1 : options.ratio,
    maxAbandonRate: options.maxAbandonRate,
  });
  const { deps, node, campaignId } = world;
  const board = new PacerPassThroughBoard();
  deps.dialer = { ...deps.dialer, agents: board };

  const random = new Random(options.seed);
  const hourAt = localHours(options.timezone);
  const agenda = new Agenda();
  const ledger = new ComplianceLedger();
  const recent = new RecentCalls();
  const meter = new OccupancyMeter();
  const bridgeTimes = new Map<string, number>();
  const agentsById = new Map(world.agents.map((agent) => [agent.user.id, agent]));
  /** Calls placed and not yet picked up, by when they were placed: the pacer's "ringing". */
  const ringing = new Map<string, number>();
  /** Calls not ended and not bridged: what the service counts against its own pacing. */
  const unbridged = new Set<string>();
  const counts = { placed: 0, ended: 0, liveAnswers: 0, machines: 0, talkMs: 0 };
  const firstStartedAt = options.startAt;
  const endAt = options.startAt + options.hours * 3_600_000;
  board.subscribe((agent) => meter.change(agent.userId, agent.state, agent.since));

  const event = (
    callId: string,
    type: CallEventType,
    at: number,
    hangupCause?: string,
    bridgeMs?: number,
  ) =>
    applyCallEvent(deps, node, callId, {
      type,
      at: iso(at),
      hangup_cause: hangupCause,
      node_bridge_ms: bridgeMs,
    });

  /** The node hangs up; a call a person answered goes into the ledger as the node saw it. */
  const end = async (
    callId: string,
    cause: string,
    person?: { answeredAt: number; bridgeMs: number | null },
  ) => {
    const at = clock.now();
    await event(callId, "ended", at, cause, person?.bridgeMs ?? undefined);
    ringing.delete(callId);
    unbridged.delete(callId);
    counts.ended++;
    recent.callEnded(person !== undefined);
    if (!person) return;
    const entry = ledgerEntryOf({
      callId,
      outcome: person.bridgeMs === null ? "abandoned" : "answered",
      answeredAt: person.answeredAt,
      bridgeMs: person.bridgeMs,
    });
    if (entry) ledger.record(entry);
  };

  const answer = async (callId: string, script: Extract<CallScript, { kind: "person" }>) => {
    const at = clock.now();
    ringing.delete(callId);
    counts.liveAnswers++;
    recent.answered(script.ringMs);
    const reply = await event(callId, "answered", at);
    const agent = reply.call.agent_id ? agentsById.get(reply.call.agent_id) : undefined;
    if (reply.call.action !== "bridge" || !agent) {
      agenda.at(at + ABANDON_HANGUP_MS, () =>
        end(callId, "NORMAL_CLEARING", { answeredAt: at, bridgeMs: null }),
      );
      return;
    }
    unbridged.delete(callId);
    bridgeTimes.set(callId, script.bridgeMs);
    const hangUpAt = at + script.bridgeMs + script.talkMs;
    agenda.at(hangUpAt, async () => {
      await end(callId, "NORMAL_CLEARING", { answeredAt: at, bridgeMs: script.bridgeMs });
      counts.talkMs += script.talkMs;
      recent.talked(script.talkMs);
      agenda.at(hangUpAt + script.wrapMs, () => disposition(agent, callId, script));
    });
  };

  const disposition = async (
    agent: UserPrincipal,
    callId: string,
    script: Extract<CallScript, { kind: "person" }>,
  ) => {
    await dispositionCall(deps, agent, callId, { disposition: script.disposition });
    recent.wrapped(script.wrapMs);
  };

  const dial = (job: DialJob) => {
    const placedAt = clock.now();
    const script = drawCall(options.model, random, hourAt(placedAt));
    const callId = job.call_id;
    counts.placed++;
    ringing.set(callId, placedAt);
    unbridged.add(callId);
    if (script.kind !== "failed")
      agenda.at(placedAt + RINGING_AFTER_MS, async () => {
        await event(callId, "ringing", clock.now());
      });
    const due = placedAt + script.ringMs;
    switch (script.kind) {
      case "person":
        agenda.at(due, () => answer(callId, script));
        return;
      case "machine":
        agenda.at(due + options.model.machineDetectMs, async () => {
          ringing.delete(callId);
          counts.machines++;
          await event(callId, "machine", clock.now());
          agenda.at(clock.now() + MACHINE_HANGUP_MS, () => end(callId, "NORMAL_CLEARING"));
        });
        return;
      case "busy":
        agenda.at(due, () => end(callId, "USER_BUSY"));
        return;
      case "failed":
        agenda.at(due, () => end(callId, "NO_ROUTE_DESTINATION"));
        return;
      case "no_answer":
        agenda.at(due, () => end(callId, "NO_ANSWER"));
        return;
    }
  };

  const tuning = options.tuning ?? PACER_DEFAULTS;
  const ratios: number[] = [];
  /** How many calls the node asks for now, and the ratio the campaign paces at. */
  const decide = (now: number): { max: number; ratio: number } => {
    const agents = board.inCampaign(campaignId);
    const ready = agents.filter((agent) => agent.state === "ready").length;
    if (options.mode !== "predictive")
      return {
        max: ready === 0 ? 0 : world.nodeCapacity,
        ratio: options.mode === "ratio" ? options.ratio : 1,
      };
    const report = ledger.report(now, { firstStartedAt, maxAbandonRate: options.maxAbandonRate });
    const input: PacerInput = {
      readyAgents: ready,
      busyAgents: agents
        .filter((agent) => agent.state === "on_call" || agent.state === "wrap_up")
        .map((agent) => ({
          state: agent.state as "on_call" | "wrap_up",
          elapsedMs: now - agent.since,
        })),
      ringingMs: [...ringing.values()].map((placedAt) => now - placedAt),
      history: recent.history(),
      dialRatio: options.ratio,
      maxAbandonRate: options.maxAbandonRate,
      ledger: { abandonRate: report.window.abandonRate, budget: report.budget },
    };
    const decision = pace(input, tuning);
    options.onPace?.(now, input, decision);
    return { max: decision.calls, ratio: decision.ratio };
  };

  let lastSweep = options.startAt;
  const tick = async () => {
    const now = clock.now();
    if (now >= endAt) return;
    if (now - lastSweep >= SWEEP_EVERY_MS) {
      lastSweep = now;
      await sweepExpiredCalls(deps);
    }
    const { max, ratio } = decide(now);
    ratios.push(ratio);
    if (max > 0) {
      board.readyAtLeast =
        options.mode === "predictive"
          ? Math.ceil((max + unbridged.size) / options.ratio) + 1
          : undefined;
      try {
        const { jobs } = await claimJobs(deps, node, max, 0);
        for (const job of jobs) dial(job);
      } finally {
        board.readyAtLeast = undefined;
      }
    }
    agenda.at(now + options.tickMs, tick);
  };

  const samples: DaySample[] = [];
  let previous = meter.totals(options.startAt);
  let shift = previous;
  const sample = () => {
    const now = clock.now();
    const totals = meter.totals(now);
    const report = ledger.report(now, { firstStartedAt, maxAbandonRate: options.maxAbandonRate });
    samples.push({
      at: now - options.startAt,
      ratio: ratios.length ? ratios.reduce((sum, value) => sum + value, 0) / ratios.length : 0,
      abandonRate: report.window.abandonRate,
      occupancy: occupancyOf({
        loggedIn: totals.loggedIn - previous.loggedIn,
        busy: totals.busy - previous.busy,
        talking: totals.talking - previous.talking,
      }),
    });
    ratios.length = 0;
    previous = totals;
    if (now >= endAt) {
      shift = totals;
      return;
    }
    agenda.at(Math.min(endAt, now + options.sampleMs), sample);
  };

  for (const agent of world.agents)
    await setAgentState(deps, agent, { state: "ready", campaign_id: campaignId });
  agenda.at(options.startAt, tick);
  agenda.at(options.startAt + options.sampleMs, sample);

  const total = endAt - options.startAt;
  for (;;) {
    const next = agenda.peek();
    if (next === undefined || next > endAt + DRAIN_LIMIT_MS) break;
    if (next > clock.now()) clock.set(next);
    await agenda.take()?.run();
    options.onProgress?.(
      Math.min(1, (clock.now() - options.startAt) / total),
      `${counts.placed} calls`,
    );
  }

  const leadStates = await countLeadsByState(deps.db, campaignId);
  const leadsIn = (state: string) => leadStates.find((row) => row.state === state)?.total ?? 0;
  const report = ledger.report(clock.now(), {
    firstStartedAt,
    maxAbandonRate: options.maxAbandonRate,
  });
  const loggedInHours = shift.loggedIn / 3_600_000;
  const summary: DaySummary = {
    mode: options.mode,
    agents: options.agents,
    hours: options.hours,
    seed: options.seed,
    callsPlaced: counts.placed,
    callsEnded: counts.ended,
    liveAnswers: counts.liveAnswers,
    machines: counts.machines,
    answerRate: counts.ended === 0 ? 0 : counts.liveAnswers / counts.ended,
    abandons: report.window.abandons,
    abandonRate: report.window.abandonRate,
    windowBasis: report.basis,
    occupancy: occupancyOf(shift),
    talkMinutesPerAgentHour: loggedInHours === 0 ? 0 : shift.talking / 60_000 / loggedInHours,
    leadsTotal: leadStates.reduce((sum, row) => sum + row.total, 0),
    leadsExhausted: leadsIn("Exhausted"),
    leadsFresh: leadsIn("Fresh"),
    realSeconds: (performance.now() - realStart) / 1000,
  };
  return {
    summary,
    samples,
    ledger,
    firstStartedAt,
    bridgeTimes,
    world,
    async close() {
      deps.campaigns.stopAll();
      deps.tenants.stopAll();
      await deps.credentials.close();
      if (ownDatabase) await database.close();
    },
  };
}
