import { describe, expect, test } from "bun:test";
import { RecentCalls } from "../../src/dialer/call-history.ts";
import { abandonBudget } from "../../src/dialer/ledger.ts";
import {
  type BusyAgent,
  confidenceOf,
  PACER_DEFAULTS,
  type PacerDecision,
  type PacerInput,
  type PacingHistory,
  pace,
  talkMeanOf,
} from "../../src/dialer/predictive.ts";
import { Random } from "../../src/simulator/random.ts";
import recorded from "./fixtures/pacer-snapshots.json";

/** A campaign's recent calls as measured mid-morning: 30% live answers, 2-minute talks. */
const MORNING: PacingHistory = {
  answerRate: 0.3,
  samples: 500,
  ringMs: 12_000,
  ringSamples: 200,
  talkMs: 120_000,
  talkCv: 0.8,
  talkSamples: 200,
  wrapMs: 15_000,
  wrapCv: 0.5,
  wrapSamples: 200,
};

/** A ledger of `liveAnswers` with `abandons`, as the pacer is given it. */
const ledgerOf = (liveAnswers: number, abandons: number, maxRate = 0.03) => ({
  liveAnswers,
  abandons,
  abandonRate: liveAnswers === 0 ? 0 : abandons / liveAnswers,
  budget: abandonBudget(liveAnswers, abandons, maxRate),
});

/** `count` agents spread over a call's life: every ninth wrapping up, the rest talking. */
const team = (count: number, seed = 1): BusyAgent[] => {
  const random = new Random(seed);
  return Array.from({ length: count }, (_, index) =>
    index % 9 === 0
      ? { state: "wrap_up" as const, elapsedMs: Math.round(random.between(0, 15_000)) }
      : { state: "on_call" as const, elapsedMs: Math.round(random.between(0, 240_000)) },
  );
};

const snapshot = (overrides: Partial<PacerInput> = {}): PacerInput => ({
  readyAgents: 5,
  busyAgents: team(95),
  ringingMs: [],
  history: MORNING,
  dialRatio: 3,
  maxAbandonRate: 0.03,
  // 2% of 2,450 answers: 25 abandons left before the limit.
  ledger: ledgerOf(2_450, 49),
  ...overrides,
});

describe("falls back to progressive pacing", () => {
  test.each([
    ["a team of 9", snapshot({ readyAgents: 4, busyAgents: team(5) }), 4, "9 agents"],
    [
      "20 calls measured: the answer rate is ±34%",
      snapshot({ history: { ...MORNING, samples: 20 } }),
      5,
      "estimates not trusted yet (answer rate ±34.16%)",
    ],
    [
      "four talks measured",
      snapshot({ history: { ...MORNING, talkSamples: 4 } }),
      5,
      "estimates not trusted yet (talk time ±40%)",
    ],
    ["no answers yet", snapshot({ history: { ...MORNING, answerRate: 0 } }), 5, "no answers"],
  ])("%s", (_label, input, calls, reason) => {
    const decision = pace(input);
    expect(decision.mode).toBe("progressive");
    expect(decision.calls).toBe(calls);
    expect(decision.confidence).toBe(0);
    expect(decision.reason).toContain(reason);
  });
});

describe("ramps up from progressive pacing as the estimates become trustworthy", () => {
  // The answer rate's relative error: √(0.7 / (0.3 n)), 0.3 at n = 26, 0.1 at n = 234.
  const steps = [20, 40, 80, 120, 160, 240, 500].map((samples) => {
    const decision = pace(snapshot({ history: { ...MORNING, samples } }));
    return { samples, decision, trust: confidenceOf({ ...MORNING, samples }) };
  });

  test.each(steps.map((step) => [step.samples, step] as const))(
    "%i calls measured",
    (_samples, { decision, trust }) => {
      expect(decision.confidence).toBeCloseTo(trust.confidence, 2);
      expect(trust.weakest).toBe("answer rate");
      if (trust.confidence === 0) expect(decision.mode).toBe("progressive");
      if (trust.confidence > 0 && trust.confidence < 1)
        expect(decision.reason).toContain("ramping at");
    },
  );

  test("the calls grow with the confidence, from one per ready agent to the model in full", () => {
    const calls = steps.map((step) => step.decision.calls);
    for (let index = 1; index < calls.length; index++)
      expect(calls[index] as number).toBeGreaterThanOrEqual(calls[index - 1] as number);
    expect(calls[0]).toBe(5);
    expect(steps.at(-1)?.decision.confidence).toBe(1);
    expect(calls.at(-1) as number).toBeGreaterThan(calls[2] as number);
  });

  test("talk times of a day's first minutes are corrected by the calls still running", () => {
    // Twenty short calls finished, ninety still running for two to four minutes: the finished
    // calls' mean (40 s) is the short end, the exposure estimate is far longer.
    const busyAgents = Array.from({ length: 90 }, (_, index) => ({
      state: "on_call" as const,
      elapsedMs: 120_000 + index * 1_000,
    }));
    const decayMs = 600_000;
    const early: PacingHistory = {
      ...MORNING,
      talkMs: 40_000,
      talkSamples: 400,
      talkExposure: { decayMs, completions: 20, exposureMs: 20 * 40_000 },
    };
    expect(talkMeanOf(early, busyAgents)).toBeGreaterThan(500_000);
    expect(talkMeanOf({ ...early, talkExposure: undefined }, busyAgents)).toBe(40_000);
    const corrected = pace(snapshot({ readyAgents: 10, busyAgents, history: early }));
    const naive = pace(
      snapshot({ readyAgents: 10, busyAgents, history: { ...early, talkExposure: undefined } }),
    );
    expect(corrected.calls).toBeLessThan(naive.calls);
    expect(corrected.expectedFree).toBeLessThan(naive.expectedFree);
  });
});

describe("the abandon budget counts the calls in flight and the answers they bring", () => {
  test.each([
    // liveAnswers, abandons, calls ringing: at or over the limit the pacer still dials what
    // the answers of the calls in flight pay for, and fewer calls the more are ringing.
    [1_000, 30, 0],
    [1_000, 30, 40],
    [1_000, 35, 0],
    [100, 0, 0],
    [100, 0, 40],
  ])("%i answers, %i abandoned, %i ringing", (liveAnswers, abandons, ringing) => {
    const input = snapshot({
      readyAgents: 20,
      busyAgents: team(80),
      ringingMs: Array.from({ length: ringing }, () => 2_000),
      ledger: ledgerOf(liveAnswers, abandons),
    });
    const decision = pace(input);
    expect(decision.mode).toBe("predictive");
    expect(decision.calls).toBeGreaterThanOrEqual(Math.max(0, 20 - ringing));
    const looser = pace({ ...input, ledger: ledgerOf(liveAnswers * 4, abandons) });
    expect(looser.calls).toBeGreaterThanOrEqual(decision.calls);
    const fewerRinging = pace({ ...input, ringingMs: input.ringingMs.slice(0, ringing / 2) });
    expect(fewerRinging.calls).toBeGreaterThanOrEqual(decision.calls);
  });

  test("a ledger exactly at the limit dials past the ready agents: its answers earn budget", () => {
    const decision = pace(
      snapshot({ readyAgents: 20, busyAgents: team(80), ledger: ledgerOf(1_000, 30) }),
    );
    expect(decision.calls).toBeGreaterThan(20);
    expect(decision.reason).toContain("abandon budget (0 left)");
  });

  test("calls already ringing take the place of new ones, one for one or more", () => {
    const input = snapshot({ readyAgents: 20, busyAgents: team(80), ledger: ledgerOf(300, 6) });
    const calm = pace(input);
    const ringing = pace({ ...input, ringingMs: Array.from({ length: 10 }, () => 1_000) });
    expect(calm.calls - ringing.calls).toBeGreaterThanOrEqual(9);
  });
});

describe("the cap is a safety limit: a looser one never dials less", () => {
  const inputs = [
    ["all ready", snapshot({ readyAgents: 100, busyAgents: [] })],
    ["all busy", snapshot({ readyAgents: 0, busyAgents: team(100) })],
    ["ramping", snapshot({ history: { ...MORNING, samples: 80 } })],
    [
      "near the limit",
      snapshot({ readyAgents: 10, busyAgents: team(90), ledger: ledgerOf(500, 14) }),
    ],
    ["small team", snapshot({ readyAgents: 3, busyAgents: team(22) })],
  ] as const;
  test.each(inputs)("%s", (_label, input) => {
    const calls = [1, 1.5, 2, 3, 4, 5].map((dialRatio) => pace({ ...input, dialRatio }));
    for (let index = 1; index < calls.length; index++) {
      expect((calls[index] as PacerDecision).calls).toBeGreaterThanOrEqual(
        (calls[index - 1] as PacerDecision).calls,
      );
      expect((calls[index] as PacerDecision).ratio).toBeLessThanOrEqual(
        [1, 1.5, 2, 3, 4, 5][index] as number,
      );
    }
  });
});

describe("predicts for a large team", () => {
  test("all 100 agents ready at the start of the day: the dial_ratio cap holds", () => {
    const decision = pace(snapshot({ readyAgents: 100, busyAgents: [] }));
    expect(decision).toMatchObject({ mode: "predictive", calls: 300, ratio: 3 });
    expect(decision.reason).toContain("dial_ratio 3");
  });

  test("every agent busy: calls for those about to free up, within the abandon target", () => {
    const decision = pace(snapshot({ readyAgents: 0, busyAgents: team(100) }));
    expect(decision.mode).toBe("predictive");
    expect(decision.calls).toBeGreaterThan(0);
    expect(decision.expectedFree).toBeGreaterThan(0);
    expect(decision.expectedFree).toBeLessThan(100);
    expect(decision.ratio).toBeLessThanOrEqual(3);
    // Target 2.4%; the ledger at 2% of 2,450 answers is 9.8 abandons below it, spread over
    // the answers of 15 minutes (about 590): 4% of answers, within the limit of 3%.
    expect(decision.expectedAbandons).toBeLessThanOrEqual(0.03 * decision.expectedAnswers + 0.01);
  });

  test("calls already ringing are counted before new ones", () => {
    const calm = pace(snapshot());
    const ringing = pace(snapshot({ ringingMs: Array.from({ length: 10 }, () => 3_000) }));
    expect(ringing.calls).toBeLessThan(calm.calls);
    // A call that has rung for 25 s is unlikely to be answered: it weighs less than a new one.
    const stale = pace(snapshot({ ringingMs: Array.from({ length: 10 }, () => 25_000) }));
    expect(stale.calls).toBeGreaterThan(ringing.calls);
  });

  test("the nearer the ledger is to the limit, the fewer the calls", () => {
    const calls = [0, 40, 60, 70].map(
      (abandons) => pace(snapshot({ ledger: ledgerOf(2_450, abandons) })).calls,
    );
    for (let index = 1; index < calls.length; index++)
      expect(calls[index] as number).toBeLessThanOrEqual(calls[index - 1] as number);
    expect(calls[3]).toBeLessThan(calls[0] as number);
  });

  test("a small budget is a hard limit: fewer calls than the rate target alone allows", () => {
    const ample = pace(snapshot({ readyAgents: 30, busyAgents: team(70) }));
    const tight = pace(
      snapshot({ readyAgents: 30, busyAgents: team(70), ledger: ledgerOf(100, 2) }),
    );
    expect(tight.calls).toBeLessThan(ample.calls);
    expect(tight.reason).toContain("abandon budget (1 left)");
    expect(tight.calls).toBeGreaterThanOrEqual(30);
  });

  test("never fewer calls than one per ready agent", () => {
    for (const ringing of [0, 5, 20]) {
      const input = snapshot({
        readyAgents: 40,
        busyAgents: team(60),
        ringingMs: Array.from({ length: ringing }, () => 1_000),
        ledger: ledgerOf(100, 10),
      });
      expect(pace(input).calls).toBeGreaterThanOrEqual(40 - ringing);
    }
  });

  test("the tuning decides who is too small a team", () => {
    const input = snapshot({ readyAgents: 2, busyAgents: team(6) });
    expect(pace(input).mode).toBe("progressive");
    expect(pace(input, { ...PACER_DEFAULTS, minTeam: 5 }).mode).toBe("predictive");
  });
});

/** A snapshot the simulator recorded, as the pacer's input. */
const replay = (label: string, overrides: Partial<PacerInput> = {}): PacerInput => {
  const found = recorded.snapshots.find((snapshot) => snapshot.label === label);
  if (!found) throw new Error(`no snapshot ${label}`);
  return {
    readyAgents: found.readyAgents,
    busyAgents: [
      ...found.onCallMs.map((elapsedMs) => ({ state: "on_call" as const, elapsedMs })),
      ...found.wrapUpMs.map((elapsedMs) => ({ state: "wrap_up" as const, elapsedMs })),
    ],
    ringingMs: found.ringingMs,
    // Recorded from windows of the last 500 calls and 200 durations of each kind.
    history: { ...found.history, ringSamples: 200, talkSamples: 200, wrapSamples: 200 },
    dialRatio: 3,
    maxAbandonRate: 0.03,
    // The counts behind the recorded rate and budget.
    ledger: ledgerOf(
      Math.round(((found.ledger.budget + 0.5) * 0.97) / (0.03 - found.ledger.abandonRate)),
      Math.round(
        (found.ledger.abandonRate * ((found.ledger.budget + 0.5) * 0.97)) /
          (0.03 - found.ledger.abandonRate),
      ),
    ),
    ...overrides,
  };
};

describe("decisions over histories recorded from a simulated day of 100 agents", () => {
  test.each([
    // snapshot, mode, calls, why
    ["ramp-up, first minutes", "predictive", 0, "held by dial_ratio 3; ramping at 83.97%"],
    ["steady, morning", "predictive", 0, "held by the abandon budget (1 left)"],
    // No budget left, yet the answers of 49 more calls pay for the abandons they risk.
    ["ledger near its limit", "predictive", 49, "held by the abandon budget (0 left)"],
    ["steady, late", "predictive", 3, "held by dial_ratio 3"],
  ] as const)("%s: %s, %i calls", (label, mode, calls, why) => {
    const decision = pace(replay(label));
    expect(decision).toMatchObject({ mode, calls });
    expect(decision.reason).toContain(why);
  });

  test.each(recorded.snapshots.map((snapshot) => snapshot.label))(
    "%s: a looser cap adds calls only within the abandon target and budget",
    (label) => {
      const capped = pace(replay(label));
      const loose = pace(replay(label, { dialRatio: 5 }));
      expect(loose.calls).toBeGreaterThanOrEqual(capped.calls);
      if (loose.mode === "predictive") {
        expect(loose.ratio).toBeLessThanOrEqual(5);
        expect(loose.expectedAbandons).toBeLessThanOrEqual(0.03 * loose.expectedAnswers + 0.01);
      }
    },
  );
});

/** The model itself: estimates taken as measured, agents free within the whole ring time. */
const EXACT = { ...PACER_DEFAULTS, caution: 0, freeHorizonShare: 1 };

test("agents expected free match a Monte Carlo of talk and wrap-up times", () => {
  // Erlang talk (shape 2, from CV 0.71) and wrap-up (shape 4, from CV 0.5), drawn as sums of
  // exponentials; a talk already `elapsed` long is redrawn until it is longer than that.
  const history: PacingHistory = { ...MORNING, talkCv: Math.SQRT1_2, wrapCv: 0.5 };
  const agents = team(90, 3);
  const decision = pace(snapshot({ readyAgents: 10, busyAgents: agents, history }), EXACT);
  const random = new Random(11);
  const erlang = (mean: number, shape: number) => {
    let sum = 0;
    for (let stage = 0; stage < shape; stage++) sum -= Math.log(1 - random.next()) * (mean / shape);
    return sum;
  };
  const trials = 4_000;
  let free = 0;
  for (let trial = 0; trial < trials; trial++) {
    for (const agent of agents) {
      if (agent.state === "wrap_up") {
        let wrap = erlang(history.wrapMs, 4);
        while (wrap <= agent.elapsedMs) wrap = erlang(history.wrapMs, 4);
        if (wrap - agent.elapsedMs <= history.ringMs) free++;
        continue;
      }
      let talk = erlang(history.talkMs, 2);
      while (talk <= agent.elapsedMs) talk = erlang(history.talkMs, 2);
      if (talk - agent.elapsedMs + erlang(history.wrapMs, 4) <= history.ringMs) free++;
    }
  }
  const busyFree = decision.expectedFree - 10;
  expect(busyFree).toBeGreaterThan(1);
  expect(Math.abs(free / trials - busyFree)).toBeLessThan(0.1);
});

test("the predicted abandons match a Monte Carlo of the same model", () => {
  // Exponential wrap-up (CV 1) makes each agent free within the ring time with the same
  // chance, 1 − e^(−h/w), whatever they have done so far: easy to draw independently.
  const history: PacingHistory = { ...MORNING, wrapMs: 20_000, wrapCv: 1 };
  const input = snapshot({
    readyAgents: 4,
    busyAgents: Array.from({ length: 40 }, () => ({ state: "wrap_up" as const, elapsedMs: 0 })),
    history,
    ledger: ledgerOf(10_000, 0),
  });
  const decision = pace(input, EXACT);
  expect(decision.mode).toBe("predictive");
  const free = 1 - Math.exp(-history.ringMs / history.wrapMs);
  const random = new Random(7);
  const trials = 40_000;
  let abandons = 0;
  for (let trial = 0; trial < trials; trial++) {
    let agents = input.readyAgents;
    for (let agent = 0; agent < 40; agent++) if (random.chance(free)) agents++;
    let answers = 0;
    for (let call = 0; call < decision.calls; call++)
      if (random.chance(history.answerRate)) answers++;
    abandons += Math.max(0, answers - agents);
  }
  expect(decision.expectedAbandons).toBeGreaterThan(0.1);
  expect(Math.abs(abandons / trials - decision.expectedAbandons)).toBeLessThan(0.02);
});

describe("recent calls", () => {
  test("estimates weigh calls by age, and count the calls behind them", () => {
    const recent = new RecentCalls({ answerMs: 60_000, durationMs: 60_000 });
    // A call every second for ten minutes, every fourth answered after 10 s, talks of 60 s.
    for (let second = 0; second < 600; second++) {
      const at = second * 1_000;
      recent.callEnded(second % 4 === 0, at);
      if (second % 4 === 0) {
        recent.answered(10_000, at);
        recent.talked(60_000, at);
        recent.wrapped(10_000, at);
      }
    }
    const history = recent.history(599_000);
    expect(history.answerRate).toBeCloseTo(0.25, 1);
    expect(history.ringMs).toBeCloseTo(10_000, 6);
    expect(history.talkCv).toBeCloseTo(0, 6);
    // Steady weights over a time constant of 60 calls: about 120 effective calls.
    expect(history.samples).toBeGreaterThan(100);
    expect(history.samples).toBeLessThan(130);
    expect(history.talkSamples).toBeGreaterThan(25);
    // Left idle, the same estimates are trusted less.
    expect(recent.history(659_000).samples).toBeCloseTo(history.samples / Math.E, 3);
    expect(recent.history(659_000).answerRate).toBe(history.answerRate);
  });

  test("a drop in the answer rate is followed within a few time constants", () => {
    const recent = new RecentCalls({ answerMs: 60_000, durationMs: 600_000 });
    for (let second = 0; second < 600; second++) recent.callEnded(second % 3 === 0, second * 1_000);
    expect(recent.history(599_000).answerRate).toBeCloseTo(1 / 3, 1);
    for (let second = 600; second < 780; second++)
      recent.callEnded(second % 10 === 0, second * 1_000);
    expect(recent.history(779_000).answerRate).toBeLessThan(0.13);
  });

  test("talk exposure over completions is the mean talk time in a steady stream", () => {
    const recent = new RecentCalls({ answerMs: 60_000, durationMs: 300_000 });
    // Ten agents each on 100 s calls back to back for an hour, staggered by 10 s.
    for (let agent = 0; agent < 10; agent++)
      for (let end = 100_000 + agent * 10_000; end <= 3_600_000; end += 100_000)
        recent.talked(100_000, end);
    const now = 3_600_000;
    const running = Array.from({ length: 10 }, (_, agent) => ({
      state: "on_call" as const,
      elapsedMs: (now - (100_000 + agent * 10_000)) % 100_000,
    }));
    const history = recent.history(now);
    expect(talkMeanOf(history, running)).toBeCloseTo(100_000, -3);
  });
});

describe("a fixed ratio (the simulator's busy-but-illegal anchor)", () => {
  const fixed = { ...PACER_DEFAULTS, fixedRatio: 3 };
  test.each([
    ["100 agents, none ringing", snapshot(), 300],
    ["100 agents, 120 unanswered", snapshot({ ringingMs: Array(120).fill(5_000) }), 180],
    ["more unanswered than the ratio allows", snapshot({ ringingMs: Array(310).fill(0) }), 0],
    // The ledger and the small team do not hold it back, as they hold back the pacer.
    [
      "a spent budget, 9 agents",
      snapshot({ readyAgents: 0, busyAgents: team(9), ledger: ledgerOf(100, 20) }),
      27,
    ],
  ])("%s", (_name, input, calls) => {
    const decision = pace(input, fixed);
    expect(decision).toMatchObject({ calls, ratio: 3, mode: "fixed" });
    expect(pace(input).mode).not.toBe("fixed");
  });
});
