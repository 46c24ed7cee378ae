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

/** Estimates from the campaign's recent calls. */
export interface PacingHistory {
  /** Share of placed calls a person answered (answering machines excluded). */
  answerRate: number;
  /** How many placed calls `answerRate` was measured over. */
  samples: number;
  /** Mean time from placing a call to a person's answer. */
  ringMs: number;
  /** Mean talk time of bridged calls. */
  talkMs: number;
  /** Spread of talk time (standard deviation over mean); 1 when unknown. */
  talkCv?: number | undefined;
  /** Mean wrap-up time (hang-up to disposition). */
  wrapMs: number;
  /** Spread of wrap-up time; 0.5 when unknown. */
  wrapCv?: number | undefined;
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
  /** From the compliance ledger: the legal window's rate, and the budget left (both views). */
  ledger: { abandonRate: number; budget: number };
}

export interface PacerDecision {
  /** New calls to place now. */
  calls: number;
  /** Calls in flight (after placing) per agent expected free when they are answered. */
  ratio: number;
  mode: "predictive" | "progressive" | "fixed";
  reason: string;
  /** Agents expected free within the ring time. */
  expectedFree: number;
  /** Expected live answers, and expected abandons, from every call in flight after placing. */
  expectedAnswers: number;
  expectedAbandons: number;
}

export interface PacerTuning {
  /** Below this many ready and busy agents, pace progressively (the model needs numbers). */
  minTeam: number;
  /** Below this many measured calls, pace progressively. */
  minSamples: number;
  /** Aim for this share of `max_abandon_rate`, leaving the rest for chance. */
  targetShare: number;
  /** Largest accepted chance that the calls in flight abandon more than the budget left. */
  budgetRisk: number;
  /**
   * Pace at this fixed ratio instead (see `fixedRatio`): the simulator's busy-but-illegal
   * anchor. The service never sets it.
   */
  fixedRatio?: number | undefined;
}

export const PACER_DEFAULTS: PacerTuning = {
  minTeam: 10,
  minSamples: 200,
  targetShare: 0.8,
  budgetRisk: 0.01,
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

function progressive(input: PacerInput, why: string): PacerDecision {
  const inFlight = input.ringingMs.length;
  const calls = Math.max(0, input.readyAgents - inFlight);
  return {
    calls,
    ratio: input.readyAgents === 0 ? 0 : round2((inFlight + calls) / input.readyAgents),
    mode: "progressive",
    reason: `progressive: ${why}`,
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
    expectedFree: input.readyAgents,
    expectedAnswers: 0,
    expectedAbandons: 0,
  };
}

/**
 * How many calls to place now. Progressive (one call in flight per ready agent) for a team
 * under `minTeam`, with fewer than `minSamples` measured calls, or once the abandon budget
 * is spent; otherwise the most calls such that, over every call in flight:
 *
 * - calls in flight ≤ `dialRatio` × agents expected free within the ring time;
 * - expected abandons ≤ the target rate × expected answers, the target being
 *   `targetShare` × `maxAbandonRate`, corrected by how far the ledger's rate is from it;
 * - the chance of more abandons than the ledger's budget left is ≤ `budgetRisk`.
 *
 * Never fewer calls than progressive pacing would place: those cannot be abandoned.
 */
export function pace(input: PacerInput, tuning: PacerTuning = PACER_DEFAULTS): PacerDecision {
  if (tuning.fixedRatio !== undefined) return fixedRatio(input, tuning.fixedRatio);
  const team = input.readyAgents + input.busyAgents.length;
  const { history } = input;
  if (team < tuning.minTeam)
    return progressive(input, `${team} agents, fewer than ${tuning.minTeam} to predict for`);
  if (history.samples < tuning.minSamples)
    return progressive(input, `${history.samples} calls measured, fewer than ${tuning.minSamples}`);
  if (!(history.answerRate > 0)) return progressive(input, "no answers measured yet");
  const budget = Math.floor(input.ledger.budget);
  if (budget < 1) return progressive(input, "the abandon budget is spent");

  const horizon = Math.max(1000, history.ringMs);
  const freeChances = input.busyAgents.map((agent) => freeWithin(agent, history, horizon));
  const busyFree = sumOfBernoullis(freeChances);
  const expectedFree = input.readyAgents + freeChances.reduce((sum, p) => sum + p, 0);
  // P(F ≤ f) for F = ready + those freed; index f counts agents.
  const freeCdf: number[] = [];
  let running = 0;
  for (let f = 0; f <= input.readyAgents + busyFree.length; f++) {
    running += f < input.readyAgents ? 0 : (busyFree[f - input.readyAgents] ?? 0);
    freeCdf.push(Math.min(1, running));
  }
  const cdfAt = (f: number) => (f < 0 ? 0 : (freeCdf[Math.min(f, freeCdf.length - 1)] ?? 1));

  const ringing = input.ringingMs.map((elapsed) => stillAnswers(elapsed, history));
  const inFlight = ringing.length;
  const cap = Math.floor(input.dialRatio * expectedFree + 1e-9) - inFlight;
  const floor = Math.max(0, input.readyAgents - inFlight);
  const target = input.maxAbandonRate * tuning.targetShare;
  const allowedRate = Math.min(
    input.maxAbandonRate,
    Math.max(0, 2 * target - input.ledger.abandonRate),
  );

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
    let overBudget = 0;
    for (let k = 0; k < pmf.length; k++) {
      const mass = pmf[k] as number;
      abandons += mass * shortfallAt(k);
      overBudget += mass * cdfAt(k - budget - 1);
    }
    return { abandons, overBudget };
  };

  let chosen = 0;
  let held = "";
  let outcome = measure(answers);
  let expectedAnswers = ringingAnswers;
  for (let calls = 1; ; calls++) {
    if (calls > cap) {
      held = `dial_ratio ${input.dialRatio}`;
      break;
    }
    const next = addBernoulli(answers, history.answerRate);
    const measured = measure(next);
    const nextAnswers = ringingAnswers + calls * history.answerRate;
    if (measured.overBudget > tuning.budgetRisk) {
      held = `the abandon budget (${budget} left)`;
      break;
    }
    if (measured.abandons > allowedRate * nextAnswers) {
      held = `the abandon target (${percent(allowedRate)} of answers)`;
      break;
    }
    answers = next;
    outcome = measured;
    expectedAnswers = nextAnswers;
    chosen = calls;
  }
  // Calls up to one per ready agent cannot be abandoned, whatever the model says.
  const calls = Math.max(chosen, floor);
  if (calls > chosen) {
    held += "; raised to one call per ready agent";
    expectedAnswers = ringingAnswers + calls * history.answerRate;
  }
  return {
    calls,
    ratio: expectedFree > 0 ? round2((inFlight + calls) / expectedFree) : 0,
    mode: "predictive",
    reason:
      `predictive: ${inFlight + calls} calls in flight for ${round2(expectedFree)} agents ` +
      `expected free in ${round2(horizon / 1000)} s, held by ${held}`,
    expectedFree: round2(expectedFree),
    expectedAnswers: round2(expectedAnswers),
    expectedAbandons: round2(outcome.abandons),
  };
}
