/**
 * The predictive pacer: how many calls to place now so that agents stay busy while the
 * campaign's abandon rate stays within `max_abandon_rate`. Pure arithmetic over a snapshot;
 * the algorithm and its sources are in docs/PACING.md.
 */

/** An agent who is not ready yet, and how long they have been in their state. */
export interface BusyAgent {
  state: "on_call" | "wrap_up";
  elapsedMs: number;
}

/** One estimate from recent calls: its mean, spread and effective number of calls. */
export interface Estimate {
  mean: number;
  /** Effective number of values (weighted; fewer once the newest is old). */
  samples: number;
  /** Standard deviation over mean; undefined while unknown. */
  cv?: number | undefined;
}

/**
 * Estimates from the campaign's recent calls, each exponentially weighted in time, with the
 * effective number of calls behind it: the pacer trusts an estimate as far as its standard
 * error allows.
 */
export interface PacingHistory {
  /** Share of placed calls a person answered (answering machines excluded). */
  answerRate: number;
  /** Effective number of placed calls `answerRate` was measured over. */
  samples: number;
  /** Mean time from placing a call to a person's answer, its spread and its calls. */
  ringMs: number;
  ringCv?: number | undefined;
  ringSamples: number;
  /** Mean talk time of bridged calls, its spread and its calls. */
  talkMs: number;
  talkCv?: number | undefined;
  talkSamples: number;
  /** Mean wrap-up time (hang-up to disposition), its spread and its calls. */
  wrapMs: number;
  wrapCv?: number | undefined;
  wrapSamples: number;
  /**
   * Talk time as exposure: the weighted time agents spent on finished calls and the weighted
   * number of those calls (weights e^(−age / decayMs)). With the exposure of the calls still
   * running added, exposure over completions estimates the mean talk time without the bias
   * of a day's first finished calls, which are its short ones.
   */
  talkExposure?: { decayMs: number; completions: number; exposureMs: number } | undefined;
}

export interface PacerInput {
  readyAgents: number;
  busyAgents: readonly BusyAgent[];
  /** For each call in flight that no person has answered yet, how long ago it was placed. */
  ringingMs: readonly number[];
  history: PacingHistory;
  /** The campaign's cap on calls in flight per agent expected free. */
  dialRatio: number;
  maxAbandonRate: number;
  /**
   * From the compliance ledger, the view with the smaller budget (legal window or day): its
   * rate, the abandons it still allows with no further answer, and its counts.
   */
  ledger: { abandonRate: number; budget: number; liveAnswers: number; abandons: number };
}

export interface PacerDecision {
  /** New calls to place now. */
  calls: number;
  /** Calls in flight (after placing) per agent expected free when they are answered. */
  ratio: number;
  mode: "predictive" | "progressive" | "fixed";
  reason: string;
  /** How far the estimates are trusted, 0 (progressive pacing) to 1 (the model in full). */
  confidence: number;
  /** Agents expected free within the ring time. */
  expectedFree: number;
  /** Expected live answers, and expected abandons, from every call in flight after placing. */
  expectedAnswers: number;
  expectedAbandons: number;
}

export interface PacerTuning {
  /** Below this many ready and busy agents, pace progressively (the model needs numbers). */
  minTeam: number;
  /** Aim for this share of `max_abandon_rate`, leaving the rest for chance. */
  targetShare: number;
  /**
   * The target's steering: the ledger's surplus (or excess) of abandons against the target is
   * spread over the answers expected in this long.
   */
  steerMs: number;
  /** Largest accepted chance that the calls in flight take the ledger past the limit. */
  budgetRisk: number;
  /**
   * The ramp: with the least certain estimate's relative standard error at `rampFrom` or
   * more the pacer dials progressively, at `rampTo` or less it dials all the model allows,
   * and in between that share of the calls the model adds to progressive pacing.
   */
  rampFrom: number;
  rampTo: number;
  /** Agents count as free for the calls if free within this share of the mean ring time. */
  freeHorizonShare: number;
  /** Each estimate is taken this many standard errors toward the side that dials less. */
  caution: number;
  /**
   * Pace at this fixed ratio instead (see `fixedRatio`): the simulator's busy-but-illegal
   * anchor. The service never sets it.
   */
  fixedRatio?: number | undefined;
}

export const PACER_DEFAULTS: PacerTuning = {
  minTeam: 10,
  targetShare: 0.8,
  steerMs: 900_000,
  budgetRisk: 0.01,
  rampFrom: 0.3,
  rampTo: 0.1,
  freeHorizonShare: 0.75,
  caution: 1,
};

/** Ring times of answered calls are modelled as Erlang with this shape (CV ≈ 0.58). */
const RING_SHAPE = 3;
/** Slices of the ring time when convolving the rest of a call with its wrap-up. */
const SLICES = 16;

/** Erlang shape for a coefficient of variation: CV = 1/√k. */
const shapeOf = (cv: number | undefined, fallback: number) => {
  const value = cv === undefined || !(cv > 0) ? fallback : cv;
  return Math.min(12, Math.max(1, Math.round(1 / (value * value))));
};

/** Σ_{n<k} x^n / n!: the polynomial part of the Erlang survival function. */
function erlangPolynomial(x: number, k: number) {
  let term = 1;
  let sum = 1;
  for (let n = 1; n < k; n++) {
    term *= x / n;
    sum += term;
  }
  return sum;
}

/**
 * P(X > elapsed + t | X > elapsed) for X Erlang(k) with the given mean: the chance that
 * something already `elapsed` old lasts `t` longer. Written as a ratio that cannot underflow.
 */
function stillGoing(mean: number, k: number, elapsed: number, t: number) {
  if (t <= 0) return 1;
  if (!(mean > 0)) return 0;
  const rate = k / mean;
  const from = Math.max(0, elapsed);
  return (
    (Math.exp(-rate * t) * erlangPolynomial(rate * (from + t), k)) /
    erlangPolynomial(rate * from, k)
  );
}

/** Chance that a busy agent is ready again within `horizon`. */
function freeWithin(agent: BusyAgent, history: PacingHistory, horizon: number) {
  const wrapShape = shapeOf(history.wrapCv, 0.5);
  const wrapDone = (t: number) => 1 - stillGoing(history.wrapMs, wrapShape, 0, t);
  if (agent.state === "wrap_up")
    return 1 - stillGoing(history.wrapMs, wrapShape, agent.elapsedMs, horizon);
  // The rest of the call, then a whole wrap-up, must both fit in the horizon.
  const talkShape = shapeOf(history.talkCv, 1);
  const step = horizon / SLICES;
  let chance = 0;
  let before = 1;
  for (let slice = 1; slice <= SLICES; slice++) {
    const after = stillGoing(history.talkMs, talkShape, agent.elapsedMs, slice * step);
    chance += (before - after) * wrapDone(horizon - (slice - 0.5) * step);
    before = after;
  }
  return chance;
}

/** Chance that a call placed `elapsedMs` ago and not answered yet will still be answered. */
function stillAnswers(elapsedMs: number, history: PacingHistory) {
  const rate = history.answerRate;
  const waiting = rate * stillGoing(history.ringMs, RING_SHAPE, 0, elapsedMs);
  return waiting / (1 - rate + waiting);
}

/** The distribution of a sum of independent Bernoulli variables (Poisson binomial). */
function sumOfBernoullis(chances: readonly number[]): number[] {
  let pmf = [1];
  for (const p of chances) pmf = addBernoulli(pmf, p);
  return pmf;
}

function addBernoulli(pmf: readonly number[], p: number): number[] {
  const next = new Array<number>(pmf.length + 1).fill(0);
  for (let k = 0; k < pmf.length; k++) {
    const mass = pmf[k] as number;
    next[k] = (next[k] as number) + mass * (1 - p);
    next[k + 1] = (next[k + 1] as number) + mass * p;
  }
  return next;
}

const round2 = (value: number) => Math.round(value * 100) / 100;
const percent = (rate: number) => `${round2(rate * 100)}%`;

function progressive(input: PacerInput, why: string, confidence = 0): PacerDecision {
  const inFlight = input.ringingMs.length;
  const calls = Math.max(0, input.readyAgents - inFlight);
  return {
    calls,
    ratio: input.readyAgents === 0 ? 0 : round2((inFlight + calls) / input.readyAgents),
    mode: "progressive",
    reason: `progressive: ${why}`,
    confidence,
    expectedFree: input.readyAgents,
    expectedAnswers: 0,
    expectedAbandons: 0,
  };
}

/**
 * A fixed dial ratio over every agent logged in to the campaign, ready or busy, blind to the
 * answer rate and the ledger: calls not yet answered ≤ agents × `ratio`. This is a fixed
 * "dial level" that counts agents on calls (VICIdial's default tally): agents stay busy, and
 * answers that find none ready are abandoned however many there are.
 */
function fixedRatio(input: PacerInput, ratio: number): PacerDecision {
  const team = input.readyAgents + input.busyAgents.length;
  const inFlight = input.ringingMs.length;
  const calls = Math.max(0, Math.floor(team * ratio + 1e-9) - inFlight);
  return {
    calls,
    ratio,
    mode: "fixed",
    reason: `fixed: ${ratio} calls in flight per agent logged in, ${team} agents`,
    confidence: 1,
    expectedFree: input.readyAgents,
    expectedAnswers: 0,
    expectedAbandons: 0,
  };
}

/** Relative standard error of a mean from its spread and effective number of values. */
const relativeError = (cv: number | undefined, fallback: number, samples: number) =>
  samples > 0 ? (cv ?? fallback) / Math.sqrt(samples) : Number.POSITIVE_INFINITY;

/**
 * How far each estimate can be trusted, as its relative standard error: the answer rate's
 * is binomial, √((1 − a) / (a·n)); a mean time's is its spread over √n.
 */
export function estimateErrors(history: PacingHistory) {
  const rate = history.answerRate;
  return {
    "answer rate":
      rate > 0 && history.samples > 0
        ? Math.sqrt((1 - rate) / (rate * history.samples))
        : Number.POSITIVE_INFINITY,
    "ring time": relativeError(history.ringCv, 1 / Math.sqrt(RING_SHAPE), history.ringSamples),
    "talk time": relativeError(history.talkCv, 1, history.talkSamples),
    "wrap-up time": relativeError(history.wrapCv, 0.5, history.wrapSamples),
  };
}

/**
 * The ramp from progressive pacing (0) to the model in full (1), from the least certain
 * estimate's relative error, and that estimate.
 */
export function confidenceOf(history: PacingHistory, tuning: PacerTuning = PACER_DEFAULTS) {
  const errors = Object.entries(estimateErrors(history));
  const [weakest, error] = errors.reduce((worst, each) => (each[1] > worst[1] ? each : worst));
  const share = (tuning.rampFrom - error) / (tuning.rampFrom - tuning.rampTo);
  return { confidence: Math.min(1, Math.max(0, share)), weakest, error };
}

/**
 * The mean talk time the pacer plans with: the larger of the finished calls' mean and their
 * exposure estimate with the calls still running counted (time on calls over calls finished,
 * both weighted as the history weighs them).
 */
export function talkMeanOf(history: PacingHistory, busyAgents: readonly BusyAgent[]) {
  const exposure = history.talkExposure;
  if (!exposure || !(exposure.completions > 0)) return history.talkMs;
  let running = 0;
  for (const agent of busyAgents)
    if (agent.state === "on_call")
      running += exposure.decayMs * (1 - Math.exp(-agent.elapsedMs / exposure.decayMs));
  return Math.max(history.talkMs, (exposure.exposureMs + running) / exposure.completions);
}

/**
 * How many calls to place now. Progressive (one call in flight per ready agent) for a team
 * under `minTeam` or before any answer; otherwise the most calls such that, over every call
 * in flight, with each estimate taken `caution` standard errors toward dialling less:
 *
 * - calls in flight ≤ `dialRatio` × agents expected free within the ring time (a safety cap);
 * - expected abandons ≤ the allowed share of expected answers: `targetShare` ×
 *   `maxAbandonRate`, plus the ledger's surplus of abandons against that target spread over
 *   the answers expected in `steerMs` (minus its excess), within [0, `maxAbandonRate`];
 * - the chance that the calls in flight take the ledger past `maxAbandonRate` (counting the
 *   answers they add as well as their abandons) is ≤ `budgetRisk`;
 *
 * and of the calls this adds to progressive pacing, the share the estimates' confidence
 * allows (the ramp). Never fewer calls than progressive pacing would place: those cannot be
 * abandoned. Monotone in `dialRatio`: a looser cap never gives fewer calls.
 */
export function pace(input: PacerInput, tuning: PacerTuning = PACER_DEFAULTS): PacerDecision {
  if (tuning.fixedRatio !== undefined) return fixedRatio(input, tuning.fixedRatio);
  const team = input.readyAgents + input.busyAgents.length;
  const { history } = input;
  if (team < tuning.minTeam)
    return progressive(input, `${team} agents, fewer than ${tuning.minTeam} to predict for`);
  if (!(history.answerRate > 0)) return progressive(input, "no answers measured yet");
  const trust = confidenceOf(history, tuning);
  const errorText = `${trust.weakest} ±${Number.isFinite(trust.error) ? percent(trust.error) : "∞"}`;
  if (trust.confidence <= 0) return progressive(input, `estimates not trusted yet (${errorText})`);

  // Each estimate on its cautious side: more answers, longer talks and wrap-ups, a shorter
  // horizon for agents to free up in, and longer rings for calls still ringing.
  const errors = estimateErrors(history);
  const k = tuning.caution;
  const ringShort = Math.max(0, 1 - k * errors["ring time"]);
  const cautious: PacingHistory = {
    ...history,
    answerRate: Math.min(1, history.answerRate * (1 + k * errors["answer rate"])),
    ringMs: history.ringMs * (1 + k * errors["ring time"]),
    talkMs: talkMeanOf(history, input.busyAgents) * (1 + k * errors["talk time"]),
    wrapMs: history.wrapMs * (1 + k * errors["wrap-up time"]),
  };
  const answerRate = cautious.answerRate;

  // Answers come over the ring time, not all at its end: an agent free just before the mean
  // ring time is too late for the earlier answers. Agents count as free within a share of it.
  const ringHorizon = Math.max(1000, history.ringMs * ringShort);
  const horizon = Math.max(1000, ringHorizon * tuning.freeHorizonShare);
  const freeChances = input.busyAgents.map((agent) => freeWithin(agent, cautious, horizon));
  const busyFree = sumOfBernoullis(freeChances);
  // The cap and the ratio reported count agents free within the whole ring time.
  const expectedFree =
    input.readyAgents +
    input.busyAgents.reduce((sum, agent) => sum + freeWithin(agent, cautious, ringHorizon), 0);
  // P(F ≤ f) for F = ready + those freed; index f counts agents.
  const freeCdf: number[] = [];
  let running = 0;
  for (let f = 0; f <= input.readyAgents + busyFree.length; f++) {
    running += f < input.readyAgents ? 0 : (busyFree[f - input.readyAgents] ?? 0);
    freeCdf.push(Math.min(1, running));
  }
  const cdfAt = (f: number) => (f < 0 ? 0 : (freeCdf[Math.min(f, freeCdf.length - 1)] ?? 1));

  const ringing = input.ringingMs.map((elapsed) => stillAnswers(elapsed, cautious));
  const inFlight = ringing.length;
  const cap = Math.floor(input.dialRatio * expectedFree + 1e-9) - inFlight;
  const floor = Math.max(0, input.readyAgents - inFlight);
  // The target steers: the abandons the ledger is below (or above) the target share are
  // spent (or paid back) over the answers expected in the next `steerMs`. Integral action on
  // the ledger's own counts, so a model that under- or overestimates is corrected.
  const { liveAnswers, abandons: abandoned } = input.ledger;
  const target = input.maxAbandonRate * tuning.targetShare;
  const cycleMs = Math.max(1, cautious.talkMs + cautious.wrapMs);
  const steeringAnswers = Math.max(1, (team * tuning.steerMs) / cycleMs);
  const surplus = target * liveAnswers - abandoned;
  const allowedRate = Math.min(
    input.maxAbandonRate,
    Math.max(0, target + surplus / steeringAnswers),
  );
  // With k more live answers the ledger allows ⌊r·(n + k) − a⌋ abandons among them: the
  // answers bridged in time earn budget as the abandons spend it.
  const allowedAbandons = (k: number) =>
    Math.max(0, Math.floor(input.maxAbandonRate * (liveAnswers + k) - abandoned + 1e-9));

  let answers = sumOfBernoullis(ringing);
  const ringingAnswers = ringing.reduce((sum, p) => sum + p, 0);
  // E[(k − F)+] for each k, built as k grows: shortfall(k + 1) = shortfall(k) + P(F ≤ k).
  const shortfall = [0];
  const shortfallAt = (k: number) => {
    while (shortfall.length <= k) {
      const j = shortfall.length - 1;
      shortfall.push((shortfall[j] as number) + cdfAt(j));
    }
    return shortfall[k] as number;
  };
  const measure = (pmf: readonly number[]) => {
    let abandons = 0;
    let overLimit = 0;
    for (let k = 0; k < pmf.length; k++) {
      const mass = pmf[k] as number;
      abandons += mass * shortfallAt(k);
      overLimit += mass * cdfAt(k - allowedAbandons(k) - 1);
    }
    return { abandons, overLimit };
  };

  let chosen = 0;
  let held = "";
  let outcome = measure(answers);
  for (let calls = 1; ; calls++) {
    if (calls > cap) {
      held = `dial_ratio ${input.dialRatio}`;
      break;
    }
    const next = addBernoulli(answers, answerRate);
    const measured = measure(next);
    const nextAnswers = ringingAnswers + calls * answerRate;
    if (measured.overLimit > tuning.budgetRisk) {
      held = `the abandon budget (${Math.floor(input.ledger.budget)} left)`;
      break;
    }
    if (measured.abandons > allowedRate * nextAnswers) {
      held = `the abandon target (${percent(allowedRate)} of answers)`;
      break;
    }
    answers = next;
    outcome = measured;
    chosen = calls;
  }
  // The ramp: of the calls in flight the model adds to one per ready agent, the share the
  // estimates' confidence allows.
  const modelLevel = inFlight + chosen;
  const rampLevel =
    modelLevel > input.readyAgents
      ? Math.floor(input.readyAgents + trust.confidence * (modelLevel - input.readyAgents) + 1e-9)
      : modelLevel;
  let calls = Math.max(0, rampLevel - inFlight);
  if (trust.confidence < 1) held += `; ramping at ${percent(trust.confidence)} (${errorText})`;
  // Calls up to one per ready agent cannot be abandoned, whatever the model says.
  if (floor > calls) {
    calls = floor;
    held += "; raised to one call per ready agent";
  }
  if (calls !== chosen) {
    let pmf = sumOfBernoullis(ringing);
    for (let call = 0; call < calls; call++) pmf = addBernoulli(pmf, answerRate);
    outcome = measure(pmf);
  }
  return {
    calls,
    ratio: expectedFree > 0 ? round2((inFlight + calls) / expectedFree) : 0,
    mode: "predictive",
    reason:
      `predictive: ${inFlight + calls} calls in flight for ${round2(expectedFree)} agents ` +
      `expected free in ${round2(ringHorizon / 1000)} s, held by ${held}`,
    confidence: round2(trust.confidence),
    expectedFree: round2(expectedFree),
    expectedAnswers: round2(ringingAnswers + calls * answerRate),
    expectedAbandons: round2(outcome.abandons),
  };
}
