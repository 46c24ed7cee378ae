import type { DatabaseHandle } from "../../db/client.ts";
import { openDatabase } from "../../db/client.ts";
import { runMigrations } from "../../db/migrate.ts";
import { countLeadsByState } from "../../db/queries/leads.ts";
import type { ProfileName } from "../compliance/profiles.ts";
import {
  applyCallEvent,
  type CallEventType,
  dispositionCall,
  sweepExpiredCalls,
} from "../dialer/calls.ts";
import type { DialJob } from "../dialer/claim-replies.ts";
import { claimJobs } from "../dialer/claims.ts";
import { ComplianceLedger, ledgerEntryOf } from "../dialer/ledger.ts";
import {
  PACER_DEFAULTS,
  type PacerDecision,
  type PacerInput,
  type PacerTuning,
} from "../dialer/predictive.ts";
import type { UserPrincipal } from "../identity/principal.ts";
import { setAgentState } from "../modules/agents/service.ts";
import { heartbeat } from "../modules/edge-nodes/service.ts";
import { abandonLimitOf, checkLimit } from "./abandon-limit.ts";
import { Agenda } from "./agenda.ts";
import type { DaySample } from "./chart.ts";
import {
  type AbandonInterval,
  abandonIntervals,
  OCCUPANCY_INTERVAL_MS,
  type OccupancyInterval,
  openingAbandonRate,
  spreadOf,
  WARM_UP_MS,
} from "./intervals.ts";
import { assertLegalDay, legalStart, PROFILE_LEADS } from "./legal-day.ts";
import { OccupancyMeter, occupancyOf } from "./occupancy.ts";
import { type CallScript, drawCall, type OutcomeModel } from "./outcome-model.ts";
import { Random } from "./random.ts";
import type { DaySummary } from "./summary.ts";
import { buildWorld, SteppedClock, type World } from "./world.ts";

/**
 * How calls are paced, all by the dialer service itself. `predictive`: a predictive campaign
 * (the predictive pacer, `dial_ratio` as its cap); `progressive`: a progressive campaign at
 * `dial_ratio` (calls waiting ≤ ready agents × ratio, so it dials only while agents are
 * ready); `ratio`: a fixed ratio over every logged-in agent, ready or busy, blind to the
 * ledger (the pacer's `fixedRatio`): the busy-but-illegal anchor.
 */
export type PacingMode = "predictive" | "progressive" | "ratio";

export interface DayOptions {
  agents: number;
  leads: number;
  /** Length of the simulated shift; fractions give minutes. */
  hours: number;
  mode: PacingMode;
  /** The campaign's `dial_ratio`: the fixed ratio in `ratio` mode, a cap in `predictive`. */
  ratio: number;
  maxAbandonRate: number;
  /** The campaign's `regulatory_profile`: its calling hours and abandon limit (`us`). */
  profile?: ProfileName;
  seed: number;
  model: OutcomeModel;
  /**
   * When the shift starts (epoch ms); by default 09:00 in the leads' zone on a Tuesday, or
   * earlier if the shift must start earlier to end within the hours. The whole shift must be
   * within the hours in which the leads may be called.
   */
  startAt?: number;
  /** The leads' zone; by default the profile's (`PROFILE_LEADS`). */
  timezone?: string;
  /** How often the edge node asks for jobs (simulated ms). */
  tickMs: number;
  /** How often the chart takes a point (simulated ms). */
  sampleMs: number;
  /** The predictive pacer's tuning, given to the service. */
  tuning?: PacerTuning;
  /** Sees every decision the service's predictive pacer made, with what it was given. */
  onPace?: (at: number, input: PacerInput, decision: PacerDecision) => void;
  /** A migrated database to run on; by default a fresh in-memory PGlite. */
  database?: DatabaseHandle;
  onProgress?: (fraction: number, detail: string) => void;
}

export interface DayResult {
  summary: DaySummary;
  samples: DaySample[];
  /** Abandon rates by 15 minutes of answer time, and occupancy by 5 minutes. */
  intervals: { abandons: AbandonInterval[]; occupancy: OccupancyInterval[] };
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
/** The node's heartbeat: well inside the time after which a silent node's calls fail. */
const HEARTBEAT_EVERY_MS = 10_000;
/** Calls still running when the shift ends are followed to their end, up to this long. */
const DRAIN_LIMIT_MS = 4 * 3_600_000;
const ABANDON_HANGUP_MS = 1_000;
const MACHINE_HANGUP_MS = 500;
const RINGING_AFTER_MS = 200;

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
  const profile = options.profile ?? "us";
  const place = {
    ...PROFILE_LEADS[profile],
    ...(options.timezone ? { timezone: options.timezone } : {}),
  };
  const legal = { profile, lead: { timezone: place.timezone, phone: place.phone(0) } };
  const startAt = options.startAt ?? legalStart(legal, options.hours);
  assertLegalDay(legal, startAt, options.hours);
  const ownDatabase = options.database === undefined;
  const database =
    options.database ??
    (await (async () => {
      const handle = await openDatabase({ dataDir: "memory://" });
      await runMigrations(handle);
      return handle;
    })());
  const clock = new SteppedClock(startAt);
  const world = await buildWorld({
    database,
    clock,
    agents: options.agents,
    leads: options.leads,
    place,
    profile,
    dialMode: options.mode === "progressive" ? "progressive" : "predictive",
    dialRatio: options.ratio,
    maxAbandonRate: options.maxAbandonRate,
  });
  const { deps, node, campaignId } = world;
  const tuning = options.tuning ?? PACER_DEFAULTS;
  deps.dialer = {
    ...deps.dialer,
    pacer: options.mode === "ratio" ? { ...tuning, fixedRatio: options.ratio } : tuning,
  };

  const random = new Random(options.seed);
  const hourAt = localHours(place.timezone);
  const agenda = new Agenda();
  const ledger = new ComplianceLedger();
  const meter = new OccupancyMeter();
  const bridgeTimes = new Map<string, number>();
  const agentsById = new Map(world.agents.map((agent) => [agent.user.id, agent]));
  const counts = { placed: 0, ended: 0, liveAnswers: 0, machines: 0, talkMs: 0 };
  const firstStartedAt = startAt;
  const endAt = startAt + options.hours * 3_600_000;
  deps.dialer.agents.subscribe((agent) => meter.change(agent.userId, agent.state, agent.since));

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
    counts.ended++;
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
    counts.liveAnswers++;
    const reply = await event(callId, "answered", at);
    const agent = reply.call.agent_id ? agentsById.get(reply.call.agent_id) : undefined;
    if (reply.call.action !== "bridge" || !agent) {
      agenda.at(at + ABANDON_HANGUP_MS, () =>
        end(callId, "NORMAL_CLEARING", { answeredAt: at, bridgeMs: null }),
      );
      return;
    }
    bridgeTimes.set(callId, script.bridgeMs);
    const hangUpAt = at + script.bridgeMs + script.talkMs;
    agenda.at(hangUpAt, async () => {
      await end(callId, "NORMAL_CLEARING", { answeredAt: at, bridgeMs: script.bridgeMs });
      counts.talkMs += script.talkMs;
      agenda.at(hangUpAt + script.wrapMs, () => disposition(agent, callId, script));
    });
  };

  const disposition = async (
    agent: UserPrincipal,
    callId: string,
    script: Extract<CallScript, { kind: "person" }>,
  ) => {
    await dispositionCall(deps, agent, agent.tenantId, callId, { disposition: script.disposition });
  };

  const dial = (job: DialJob) => {
    const placedAt = clock.now();
    const script = drawCall(options.model, random, hourAt(placedAt));
    const callId = job.call_id;
    counts.placed++;
    // A call answered within the node's first ring reports no ringing.
    if (script.kind !== "failed" && script.ringMs > RINGING_AFTER_MS)
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

  const ratios: number[] = [];
  /** The decision the service made on this claim, if it made one (a claim may stop short). */
  const paced = (now: number) => {
    const last = deps.dialer.paced.get(campaignId);
    return last?.at === now ? last : undefined;
  };

  let lastSweep = startAt;
  let lastHeartbeat = Number.NEGATIVE_INFINITY;
  const tick = async () => {
    const now = clock.now();
    if (now >= endAt) return;
    if (now - lastHeartbeat >= HEARTBEAT_EVERY_MS) {
      lastHeartbeat = now;
      await heartbeat(deps, node, { activeCalls: counts.placed - counts.ended });
    }
    if (now - lastSweep >= SWEEP_EVERY_MS) {
      lastSweep = now;
      await sweepExpiredCalls(deps);
    }
    // The node asks for all it can carry; the service paces, as it does for the routes.
    const { jobs } = await claimJobs(deps, node, { max: world.nodeCapacity, waitMs: 0 });
    for (const job of jobs) dial(job);
    const decision = paced(now);
    if (decision) {
      ratios.push(decision.ratio);
      if (decision.predicted)
        options.onPace?.(now, decision.predicted.input, decision.predicted.decision);
    }
    agenda.at(now + options.tickMs, tick);
  };

  const samples: DaySample[] = [];
  const occupancyIntervals: OccupancyInterval[] = [];
  let intervalStart = meter.totals(startAt);
  const closeInterval = () => {
    const now = clock.now();
    const totals = meter.totals(now);
    const from = occupancyIntervals.at(-1)?.to ?? 0;
    occupancyIntervals.push({
      from,
      to: now - startAt,
      occupancy: occupancyOf({
        loggedIn: totals.loggedIn - intervalStart.loggedIn,
        busy: totals.busy - intervalStart.busy,
        talking: totals.talking - intervalStart.talking,
      }),
    });
    intervalStart = totals;
    if (now < endAt) agenda.at(Math.min(endAt, now + OCCUPANCY_INTERVAL_MS), closeInterval);
  };
  let previous = meter.totals(startAt);
  let shift = previous;
  const sample = () => {
    const now = clock.now();
    const totals = meter.totals(now);
    const report = ledger.report(now, { firstStartedAt, maxAbandonRate: options.maxAbandonRate });
    samples.push({
      at: now - startAt,
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
  agenda.at(startAt, tick);
  agenda.at(startAt + options.sampleMs, sample);
  agenda.at(Math.min(endAt, startAt + OCCUPANCY_INTERVAL_MS), closeInterval);

  const total = endAt - startAt;
  for (;;) {
    const next = agenda.peek();
    if (next === undefined || next > endAt + DRAIN_LIMIT_MS) break;
    if (next > clock.now()) clock.set(next);
    await agenda.take()?.run();
    options.onProgress?.(Math.min(1, (clock.now() - startAt) / total), `${counts.placed} calls`);
  }

  const leadStates = await countLeadsByState(deps.db, campaignId);
  const leadsIn = (state: string) => leadStates.find((row) => row.state === state)?.total ?? 0;
  const report = ledger.report(clock.now(), {
    firstStartedAt,
    maxAbandonRate: options.maxAbandonRate,
  });
  const loggedInHours = shift.loggedIn / 3_600_000;
  const answered = [...ledger.evidence(clock.now(), firstStartedAt)];
  const abandonsBy15 = abandonIntervals(answered, startAt, endAt - startAt);
  const worst = abandonsBy15.reduce(
    (most, each) => (each.rate > most.rate ? each : most),
    abandonsBy15[0] as AbandonInterval,
  );
  const afterWarmUp = occupancyIntervals.filter((interval) => interval.from >= WARM_UP_MS);
  const lowest = afterWarmUp.reduce<OccupancyInterval | undefined>(
    (least, each) => (least === undefined || each.occupancy < least.occupancy ? each : least),
    undefined,
  );
  const ratioSpread = spreadOf(
    samples.filter((each) => each.at > WARM_UP_MS).map((each) => each.ratio),
  );
  const summary: DaySummary = {
    mode: options.mode,
    profile,
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
    openingAbandonRate: openingAbandonRate(answered, startAt),
    limit: checkLimit(answered, startAt, abandonLimitOf(profile, options.maxAbandonRate, startAt)),
    worstAbandonInterval: { from: worst.from, rate: worst.rate },
    lowestOccupancyInterval: lowest ? { from: lowest.from, occupancy: lowest.occupancy } : null,
    ratioAfterWarmUp: ratioSpread,
    talkMinutesPerAgentHour: loggedInHours === 0 ? 0 : shift.talking / 60_000 / loggedInHours,
    leadsTotal: leadStates.reduce((sum, row) => sum + row.total, 0),
    leadsExhausted: leadsIn("Exhausted"),
    leadsFresh: leadsIn("Fresh"),
    realSeconds: (performance.now() - realStart) / 1000,
  };
  return {
    summary,
    samples,
    intervals: { abandons: abandonsBy15, occupancy: occupancyIntervals },
    ledger,
    firstStartedAt,
    bridgeTimes,
    world,
    async close() {
      // Agents' last state changes are still being written: a reset of the database meanwhile
      // (the next simulated day) would deadlock with them.
      await deps.dialer.agents.settled();
      deps.campaigns.stopAll();
      deps.tenants.stopAll();
      await deps.credentials.close();
      if (ownDatabase) await database.close();
    },
  };
}
