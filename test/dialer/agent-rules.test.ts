import { describe, expect, test } from "bun:test";
import { agentAfter } from "../../actors/commands.ts";
import type { AgentPresence } from "../../src/dialer/agents.ts";
import { nextAgentState } from "../../src/modules/agents/decide.ts";

const AT = 1_000_000;
const agent = (overrides: Partial<AgentPresence> = {}): AgentPresence => ({
  userId: "agent-a",
  tenantId: "tenant-1",
  email: "a@acme.test",
  state: "ready",
  campaignId: "campaign-1",
  callId: null,
  since: AT - 60_000,
  ...overrides,
});
const command = (state: "ready" | "paused" | "offline", extra: Record<string, unknown> = {}) => ({
  agent: { userId: "agent-a", tenantId: "tenant-1", email: "a@acme.test" },
  state,
  campaignId: null,
  ...extra,
});
const refusal = (run: () => unknown) => {
  try {
    run();
    return undefined;
  } catch (error) {
    return (error as { status: number }).status;
  }
};

describe("an agent's state, as pure rules", () => {
  test("a pause on a call or in wrap-up is a pause after the call; ready takes it back; leaving is refused", () => {
    for (const state of ["on_call", "wrap_up"] as const) {
      const busy = agent({ state, callId: "call-1" });
      const asked = nextAgentState(command("paused", { reason: "lunch" }), busy, true);
      expect(asked).toMatchObject({
        state,
        callId: "call-1",
        pauseAfterCall: true,
        reason: "lunch",
        keepSince: true,
        since: busy.since,
      });
      const back = nextAgentState(command("ready"), { ...busy, ...asked }, true);
      expect(back).toMatchObject({ state, pauseAfterCall: false, reason: null, keepSince: true });
      expect(refusal(() => nextAgentState(command("offline"), busy, true))).toBe(409);
      expect(refusal(() => nextAgentState(command("ready"), busy, true))).toBe(409);
      // Gone (disabled, or past the grace) as seen by a process that took them to be free:
      // paused after the call, not left to go back to ready.
      expect(nextAgentState(command("offline", { gone: true }), busy, true)).toMatchObject({
        state,
        callId: "call-1",
        pauseAfterCall: true,
      });
    }
  });

  test("the service's end of a breath is moot once the agent left it", () => {
    const resting = agent({ state: "paused", reason: "after_call", readyAt: AT });
    const ended = nextAgentState(
      command("ready", { campaignId: "campaign-1", bySystem: true }),
      resting,
      true,
    );
    expect(ended).toMatchObject({ state: "ready", reason: null, readyAt: null });
    const onBreak = agent({ state: "paused", reason: "break" });
    expect(
      nextAgentState(command("ready", { campaignId: "campaign-1", bySystem: true }), onBreak, true),
    ).toMatchObject({ state: "paused", reason: "break", keepSince: true });
  });
});

describe("what follows a call", () => {
  const wrapping = agent({ state: "wrap_up", callId: "call-1" });
  const wrappedUp = (breathMs: number, current: AgentPresence | undefined = wrapping) =>
    agentAfter(
      { type: "agentWrappedUp", userId: "agent-a", callId: "call-1", breathMs, at: AT },
      current,
    );

  test("ready, or a breath when the campaign gives one, or the pause asked for during the call", () => {
    expect(wrappedUp(0)).toMatchObject({ state: "ready", callId: null, reason: null });
    expect(wrappedUp(10_000)).toMatchObject({
      state: "paused",
      reason: "after_call",
      readyAt: AT + 10_000,
      callId: null,
    });
    expect(wrappedUp(10_000, { ...wrapping, pauseAfterCall: true, reason: "lunch" })).toMatchObject(
      { state: "paused", reason: "lunch", readyAt: null, pauseAfterCall: false },
    );
  });

  test("only for the call the agent is still on", () => {
    expect(wrappedUp(0, { ...wrapping, callId: "call-2" })).toBeUndefined();
    expect(wrappedUp(0, { ...wrapping, state: "on_call" })).toBeUndefined();
    const onCall = agent({ state: "on_call", callId: "call-1" });
    expect(
      agentAfter(
        {
          type: "agentLeaves",
          userId: "agent-a",
          callId: "call-1",
          state: "wrap_up",
          breathMs: 10_000,
          at: AT,
        },
        onCall,
      ),
    ).toMatchObject({ state: "wrap_up", callId: "call-1" });
  });
});
