import { describe, expect, test } from "bun:test";
import { AgentBoard, type AgentListener } from "../../src/dialer/agents.ts";
import { connectRealtime } from "../../src/realtime/events.ts";
import type { Publisher } from "../../src/realtime/hub.ts";
import { createWorkspace } from "../helpers/app.ts";

/** A board whose listeners the test can call as a replica adopting another process's change would. */
class ObservedBoard extends AgentBoard {
  readonly observers: AgentListener[] = [];
  override subscribe(listener: AgentListener): () => void {
    this.observers.push(listener);
    return super.subscribe(listener);
  }
}

describe("agent changes to sockets", () => {
  test("a change made here is pushed; one adopted from another process is not", async () => {
    const w = await createWorkspace();
    const board = new ObservedBoard();
    connectRealtime({ ...w.deps, dialer: { ...w.deps.dialer, agents: board } });
    const published: string[] = [];
    const publisher: Publisher = {
      publish: (topic) => published.push(topic),
      subscriberCount: () => 1,
    };
    w.deps.realtime.attach(publisher);
    const agent = {
      userId: "0190c0de-0000-7000-8000-000000000001",
      tenantId: w.acme.id,
      state: "paused" as const,
      campaignId: null,
      callId: null,
    };
    for (const listener of board.observers) listener({ ...agent, since: 1 }, { remote: true });
    expect(published).toEqual([]);
    board.set(agent, 2);
    expect(published).toHaveLength(2);
    w.deps.realtime.close();
  });
});
