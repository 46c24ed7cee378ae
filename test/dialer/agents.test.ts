import { describe, expect, test } from "bun:test";
import { AgentBoard } from "../../src/dialer/agents.ts";

const presence = (userId: string, campaignId: string | null, state = "ready" as const) => ({
  userId,
  tenantId: "t",
  state,
  campaignId,
  callId: null,
});

describe("the agent board", () => {
  test("lists agents by campaign as they move, and forgets them offline", () => {
    const board = new AgentBoard();
    board.set(presence("a", "c1"), 1);
    board.set(presence("b", "c1"), 2);
    board.set({ ...presence("c", "c2"), state: "paused" }, 3);
    expect(board.inCampaign("c1").map((agent) => agent.userId)).toEqual(["a", "b"]);
    expect(board.inCampaign("c2", "ready")).toEqual([]);

    board.set(presence("a", "c2"), 4);
    expect(board.inCampaign("c1").map((agent) => agent.userId)).toEqual(["b"]);
    expect(board.inCampaign("c2").map((agent) => agent.userId)).toEqual(["c", "a"]);

    board.set({ ...presence("b", "c1"), state: "on_call" }, 5);
    expect(board.inCampaign("c1", "on_call").map((agent) => agent.userId)).toEqual(["b"]);
    board.set({ ...presence("b", null), state: "offline" }, 6);
    expect(board.inCampaign("c1")).toEqual([]);
    expect(board.get("b")).toBeUndefined();
  });

  test("the longest-waiting ready agent of the campaign goes first", () => {
    const board = new AgentBoard();
    board.set(presence("late", "c1"), 20);
    board.set(presence("early", "c1"), 10);
    board.set(presence("other-campaign", "c2"), 1);
    board.set({ ...presence("busy", "c1"), state: "wrap_up" }, 0);
    expect(board.longestReady("c1")?.userId).toBe("early");
    expect(board.readyByWait("c1", 5).map((agent) => agent.userId)).toEqual(["early", "late"]);
    expect(board.readyByWait("c1", 1).map((agent) => agent.userId)).toEqual(["early"]);
    board.set({ ...presence("early", "c1"), state: "reserved" }, 30);
    expect(board.longestReady("c1")?.userId).toBe("late");
    expect(board.longestReady("c3")).toBeUndefined();
  });
});
