import { describe, expect, test } from "bun:test";
import { RecentCalls } from "../../src/dialer/call-history.ts";
import {
  type BusyAgent,
  PACER_DEFAULTS,
  type PacerInput,
  type PacingHistory,
  pace,
} from "../../src/dialer/predictive.ts";
import { Random } from "../../src/simulator/random.ts";
import recorded from "./fixtures/pacer-snapshots.json";

/** A campaign's recent calls as measured mid-morning: 30% live answers, 2-minute talks. */
const MORNING: PacingHistory = {
  answerRate: 0.3,
  samples: 500,
  ringMs: 12_000,
  talkMs: 120_000,
  talkCv: 0.8,
  wrapMs: 15_000,
  wrapCv: 0.5,
};

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
  ledger: { abandonRate: 0.02, budget: 25 },
  ...overrides,
});

describe("falls back to progressive pacing", () => {
  test.each([
    ["a team of 9", snapshot({ readyAgents: 4, busyAgents: team(5) }), 4, "9 agents"],
    [
      "150 calls measured",
      snapshot({ history: { ...MORNING, samples: 150 } }),
      5,
      "150 calls measured",
    ],
    ["no answers yet", snapshot({ history: { ...MORNING, answerRate: 0 } }), 5, "no answers"],
    [
      "a spent budget",
      snapshot({ ledger: { abandonRate: 0.03, budget: 0.6 } }),
      5,
      "budget is spent",
    ],
    [
      "calls already ringing for the ready agents",
      snapshot({ ledger: { abandonRate: 0.03, budget: 0 }, ringingMs: [1000, 2000, 3000] }),
      2,
      "budget is spent",
    ],
  ])("%s", (_label, input, calls, reason) => {
    const decision = pace(input);
    expect(decision.mode).toBe("progressive");
    expect(decision.calls).toBe(calls);
    expect(decision.reason).toContain(reason);
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
    // The correction: target 2.4%, the ledger at 2%, so 2.8% of answers may be abandoned.
    expect(decision.expectedAbandons).toBeLessThanOrEqual(0.028 * decision.expectedAnswers + 1e-9);
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
    const calls = [0, 0.02, 0.028, 0.04].map(
      (abandonRate) => pace(snapshot({ ledger: { abandonRate, budget: 25 } })).calls,
    );
    for (let index = 1; index < calls.length; index++)
      expect(calls[index] as number).toBeLessThanOrEqual(calls[index - 1] as number);
    expect(calls[3]).toBeLessThan(calls[0] as number);
  });

  test("a small budget is a hard limit: fewer calls than the rate target alone allows", () => {
    const ample = pace(snapshot({ readyAgents: 30, busyAgents: team(70) }));
    const tight = pace(
      snapshot({ readyAgents: 30, busyAgents: team(70), ledger: { abandonRate: 0.02, budget: 1 } }),
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
        ledger: { abandonRate: 0.1, budget: 1 },
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
    history: found.history,
    dialRatio: 3,
    maxAbandonRate: 0.03,
    ledger: found.ledger,
    ...overrides,
  };
};

describe("decisions over histories recorded from a simulated day of 100 agents", () => {
  test.each([
    // snapshot, mode, calls, why
    ["ramp-up, first minutes", "predictive", 0, "held by dial_ratio 3"],
    ["steady, morning", "predictive", 3, "held by dial_ratio 3"],
    ["ledger near its limit", "progressive", 2, "the abandon budget is spent"],
    ["steady, late", "predictive", 5, "held by dial_ratio 3"],
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
        const input = replay(label);
        const allowed = Math.min(0.03, Math.max(0, 2 * 0.024 - input.ledger.abandonRate));
        expect(loose.expectedAbandons).toBeLessThanOrEqual(allowed * loose.expectedAnswers + 0.01);
      }
    },
  );
});

test("agents expected free match a Monte Carlo of talk and wrap-up times", () => {
  // Erlang talk (shape 2, from CV 0.71) and wrap-up (shape 4, from CV 0.5), drawn as sums of
  // exponentials; a talk already `elapsed` long is redrawn until it is longer than that.
  const history: PacingHistory = { ...MORNING, talkCv: Math.SQRT1_2, wrapCv: 0.5 };
  const agents = team(90, 3);
  const decision = pace(snapshot({ readyAgents: 10, busyAgents: agents, history }));
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
    ledger: { abandonRate: 0, budget: 100 },
  });
  const decision = pace(input);
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
  test("estimates follow the last calls, and count as measured once every duration is", () => {
    const recent = new RecentCalls({ calls: 100, durations: 20, minimumDurations: 10 });
    for (let call = 0; call < 100; call++) recent.callEnded(call % 4 === 0);
    for (let call = 0; call < 9; call++) {
      recent.answered(10_000);
      recent.talked(60_000);
      recent.wrapped(10_000);
    }
    expect(recent.history()).toMatchObject({ answerRate: 0.25, samples: 0 });
    recent.answered(10_000);
    recent.talked(60_000);
    recent.wrapped(10_000);
    expect(recent.history()).toMatchObject({ samples: 100, ringMs: 10_000, talkMs: 60_000 });
    // The window moves on: 100 unanswered calls replace the old ones.
    for (let call = 0; call < 100; call++) recent.callEnded(false);
    for (let call = 0; call < 20; call++) recent.talked(180_000);
    const later = recent.history();
    expect(later.answerRate).toBe(0);
    expect(later.talkMs).toBe(180_000);
    expect(later.talkCv).toBeCloseTo(0, 6);
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
      snapshot({ readyAgents: 0, busyAgents: team(9), ledger: { abandonRate: 0.2, budget: 0 } }),
      27,
    ],
  ])("%s", (_name, input, calls) => {
    const decision = pace(input, fixed);
    expect(decision).toMatchObject({ calls, ratio: 3, mode: "fixed" });
    expect(pace(input).mode).not.toBe("fixed");
  });
});
