import { expect, test } from "bun:test";
import { SimulatedEdgeNode } from "../../src/demo/edge-node.ts";
import type { DemoClient } from "../../src/demo/http.ts";
import type { CallScript } from "../../src/simulator/outcome-model.ts";

const A_LONG_TALK: CallScript = {
  kind: "person",
  ringMs: 10,
  talkMs: 60_000,
  wrapMs: 1_000,
  bridgeMs: 50,
  disposition: "completed",
};

/**
 * The service as the demo's node sees it: one job, a bridge on the answer, and the commands
 * `commands` hands out (each until acknowledged), with every request recorded.
 */
function fakeService(
  commands: (sent: string[]) => { id: string; type: string; call_id: string }[],
) {
  const sent: string[] = [];
  let jobs = [{ call_id: "claimed-call" }];
  const call = async (_method: string, path: string, body: Record<string, unknown> = {}) => {
    await Bun.sleep(5);
    if (path === "/nodes/jobs/claim") {
      const given = jobs;
      jobs = [];
      return { jobs: given };
    }
    if (path === "/nodes/commands") {
      sent.push(`ack ${(body.ack as string[]).join(",")}`);
      await Bun.sleep(20);
      return { commands: commands(sent) };
    }
    if (path.startsWith("/nodes/calls/")) {
      const extra = body.hangup_cause ? ` ${body.hangup_cause}` : "";
      sent.push(`${path.split("/")[3]} ${body.type}${extra}`);
      return { call: body.type === "answered" ? { action: "bridge" } : {} };
    }
    return {};
  };
  return { client: { call } as unknown as DemoClient, sent };
}

const until = async (check: () => boolean) => {
  for (let tries = 0; tries < 250 && !check(); tries++) await Bun.sleep(20);
  expect(check()).toBe(true);
};

test("the demo's node hangs up when asked, dials what it is told to, and acts on each command once", async () => {
  const { client, sent } = fakeService((sent) =>
    sent.includes("claimed-call answered")
      ? [
          { id: "hang-up", type: "hangup", call_id: "claimed-call" },
          { id: "dial", type: "dial", call_id: "dialled-call" },
        ]
      : [],
  );
  const node = new SimulatedEdgeNode(
    client,
    5,
    () => A_LONG_TALK,
    (error) => {
      throw error;
    },
  );
  node.start();
  try {
    // Well before the minute of talk: the agent's hang-up ended it.
    await until(() => sent.includes("claimed-call ended NORMAL_CLEARING"));
    await until(() => sent.includes("dialled-call answered"));
    // Handed out again until acknowledged, each command was still carried out once.
    await until(() => sent.includes("ack hang-up,dial"));
    expect(sent.filter((line) => line === "dialled-call ringing")).toHaveLength(1);
  } finally {
    node.stop();
  }
});
