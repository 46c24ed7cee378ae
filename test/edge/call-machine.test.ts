import { describe, expect, test } from "bun:test";
import { createActor, SimulatedClock } from "xstate";
import { type CallCommand, type CallEvent, callMachine } from "../../edge/call.machine.ts";

/** An event by type, stamped `at` ms after the call started (at 1,000,000). */
type Step =
  | {
      send: CallEvent["type"];
      at: number;
      status?: number;
      reason?: string;
      agentUri?: string | null;
      message?: { kind: string; version: number } | null;
      verdict?: { result: string; confidence: number; ms: number };
    }
  | { wait: number };

const START = 1_000_000;

function play(steps: Step[], detect = false) {
  const clock = new SimulatedClock();
  const actor = createActor(callMachine, {
    clock,
    input: { callId: "c1", ringTimeoutMs: 30_000, startedAt: START, detect },
  });
  const commands: string[] = [];
  actor.on("*", (command) => {
    const c = command as CallCommand;
    if (c.type === "report") {
      const { type, at, hangup_cause, node_bridge_ms, detecting, result } = c.report;
      const offset = Date.parse(at) - START;
      commands.push(
        [
          `report ${type}@${offset}`,
          hangup_cause,
          node_bridge_ms === undefined ? undefined : `bridge=${node_bridge_ms}`,
          detecting ? "detecting" : undefined,
          result,
        ]
          .filter(Boolean)
          .join(" "),
      );
    } else if (c.type === "sip.callAgent") commands.push(`callAgent ${c.agentUri}`);
    else if (c.type === "media.play") commands.push(`play ${c.message.kind}`);
    else commands.push(c.type);
  });
  actor.start();
  for (const step of steps) {
    if ("wait" in step) clock.increment(step.wait);
    else {
      const { send, at, ...rest } = step;
      actor.send({ type: send, at: START + at, ...rest } as CallEvent);
    }
  }
  return { state: String(actor.getSnapshot().value), commands };
}

const ABANDON = { kind: "abandon", version: 1 };
const VOICEMAIL = { kind: "voicemail", version: 2 };
const VERDICT = (result: string) => ({ result, confidence: 0.9, ms: 1_800 });

const rows: {
  name: string;
  detect?: boolean;
  steps: Step[];
  state: string;
  commands: string[];
}[] = [
  {
    name: "abandoned: the message plays, then the node hangs up",
    steps: [
      { send: "sip.answered", at: 1_000 },
      { send: "service.hangup", at: 1_050, message: ABANDON },
      { send: "media.done", at: 9_000 },
    ],
    state: "ended",
    commands: [
      "report answered@1000",
      "play abandon",
      "sip.hangupLead",
      "report ended@9000 NORMAL_CLEARING",
    ],
  },
  {
    name: "abandoned: the lead hangs up during the message, which stops",
    steps: [
      { send: "sip.answered", at: 1_000 },
      { send: "service.hangup", at: 1_050, message: ABANDON },
      { send: "lead.bye", at: 3_000 },
    ],
    state: "ended",
    commands: [
      "report answered@1000",
      "play abandon",
      "media.stop",
      "report ended@3000 NORMAL_CLEARING",
    ],
  },
  {
    name: "abandoned without a message: hung up at once",
    steps: [
      { send: "sip.answered", at: 1_000 },
      { send: "service.hangup", at: 1_050, message: null },
    ],
    state: "ended",
    commands: ["report answered@1000", "sip.hangupLead", "report ended@1050 NORMAL_CLEARING"],
  },
  {
    name: "detection: a person is put through after the verdict",
    detect: true,
    steps: [
      { send: "sip.answered", at: 1_000 },
      { send: "service.detect", at: 1_040 },
      { send: "media.verdict", at: 2_800, verdict: VERDICT("human") },
      { send: "service.bridge", at: 2_850, agentUri: "sip:agent@pbx" },
      { send: "agent.connected", at: 3_100 },
    ],
    state: "bridged",
    commands: [
      "report answered@1000 detecting",
      "media.detect",
      "report amd@2800 human",
      "callAgent sip:agent@pbx",
    ],
  },
  {
    name: "detection: a machine gets the voicemail message, then the hang-up",
    detect: true,
    steps: [
      { send: "sip.answered", at: 1_000 },
      { send: "media.verdict", at: 2_800, verdict: VERDICT("machine") },
      { send: "service.hangup", at: 2_850, message: VOICEMAIL },
      { send: "media.done", at: 20_000 },
    ],
    state: "ended",
    commands: [
      "report answered@1000 detecting",
      "media.detect",
      "report amd@2800 machine",
      "play voicemail",
      "sip.hangupLead",
      "report ended@20000 NORMAL_CLEARING",
    ],
  },
  {
    name: "detection: the lead hangs up before the verdict, and detection stops",
    detect: true,
    steps: [
      { send: "sip.answered", at: 1_000 },
      { send: "lead.bye", at: 1_500 },
      { send: "media.verdict", at: 2_800, verdict: VERDICT("human") },
    ],
    state: "ended",
    commands: [
      "report answered@1000 detecting",
      "media.detect",
      "media.stop",
      "report ended@1500 NORMAL_CLEARING",
    ],
  },
  {
    name: "answered, bridged, the lead hangs up",
    steps: [
      { send: "sip.trying", at: 10 },
      { send: "sip.progress", at: 200 },
      { send: "sip.progress", at: 300 },
      { send: "sip.answered", at: 5_000 },
      { send: "service.bridge", at: 5_050, agentUri: "sip:a@h" },
      { send: "agent.connected", at: 5_300 },
      { send: "lead.bye", at: 65_000 },
    ],
    state: "ended",
    commands: [
      "report ringing@200",
      "report answered@5000",
      "callAgent sip:a@h",
      "sip.hangupAgent",
      "report ended@65000 NORMAL_CLEARING bridge=300",
    ],
  },
  {
    name: "bridged, the agent hangs up",
    steps: [
      { send: "sip.answered", at: 1_000 },
      { send: "service.bridge", at: 1_010, agentUri: "sip:a@h" },
      { send: "agent.connected", at: 1_100 },
      { send: "agent.bye", at: 9_000 },
    ],
    state: "ended",
    commands: [
      "report answered@1000",
      "callAgent sip:a@h",
      "sip.hangupLead",
      "report ended@9000 NORMAL_CLEARING bridge=100",
    ],
  },
  {
    name: "no agent free: the lead is hung up at once (abandoned)",
    steps: [
      { send: "sip.answered", at: 1_000 },
      { send: "service.hangup", at: 1_020 },
    ],
    state: "ended",
    commands: ["report answered@1000", "sip.hangupLead", "report ended@1020 NORMAL_CLEARING"],
  },
  {
    name: "an agent without a phone: the bridge fails, the lead is hung up",
    steps: [
      { send: "sip.answered", at: 1_000 },
      { send: "service.bridge", at: 1_010, agentUri: null },
      { send: "agent.failed", at: 1_011 },
    ],
    state: "ended",
    commands: [
      "report answered@1000",
      "callAgent null",
      "sip.hangupLead",
      "report ended@1011 NORMAL_CLEARING",
    ],
  },
  {
    name: "the lead hangs up while the agent's phone is called",
    steps: [
      { send: "sip.answered", at: 1_000 },
      { send: "service.bridge", at: 1_010, agentUri: "sip:a@h" },
      { send: "lead.bye", at: 1_500 },
    ],
    state: "ended",
    commands: [
      "report answered@1000",
      "callAgent sip:a@h",
      "sip.hangupAgent",
      "report ended@1500 NORMAL_CLEARING",
    ],
  },
  {
    name: "busy: 486",
    steps: [
      { send: "sip.trying", at: 10 },
      { send: "sip.failed", at: 900, status: 486 },
    ],
    state: "ended",
    commands: ["report ended@900 USER_BUSY"],
  },
  {
    name: "a Reason header wins over the status",
    steps: [{ send: "sip.failed", at: 900, status: 603, reason: 'Q.850;cause=17;text="busy"' }],
    state: "ended",
    commands: ["report ended@900 USER_BUSY"],
  },
  {
    name: "rings past the timeout: CANCEL, then the 487 ends it as NO_ANSWER",
    steps: [
      { send: "sip.progress", at: 100 },
      { wait: 30_000 },
      { send: "sip.failed", at: 30_020, status: 487 },
    ],
    state: "ended",
    commands: ["report ringing@100", "sip.cancel", "report ended@30020 NO_ANSWER"],
  },
  {
    name: "a 200 that crossed the CANCEL is hung up, still NO_ANSWER",
    steps: [
      { send: "sip.progress", at: 100 },
      { wait: 30_000 },
      { send: "sip.answered", at: 30_010 },
    ],
    state: "ended",
    commands: [
      "report ringing@100",
      "sip.cancel",
      "sip.hangupLead",
      "report ended@30010 NO_ANSWER",
    ],
  },
  {
    name: "a CANCEL never answered ends after 64·T1",
    steps: [{ send: "sip.trying", at: 5 }, { wait: 30_000 }, { wait: 32_000 }],
    state: "ended",
    commands: ["sip.cancel", "sip.abandon", "report ended@30000 NO_ANSWER"],
  },
  {
    name: "nothing heard back by the timeout: an unreachable trunk",
    steps: [{ wait: 30_000 }],
    state: "ended",
    commands: ["sip.abandon", "report ended@30000 RECOVERY_ON_TIMER_EXPIRE"],
  },
  {
    name: "a machine answers (the dry run's detection)",
    steps: [
      { send: "sip.progress", at: 100 },
      { send: "lead.machine", at: 7_000 },
    ],
    state: "ended",
    commands: [
      "report ringing@100",
      "report machine@7000",
      "sip.hangupLead",
      "report ended@7000 NORMAL_CLEARING",
    ],
  },
  {
    name: "the node hangs up a bridged call at its drain limit",
    steps: [
      { send: "sip.answered", at: 1_000 },
      { send: "service.bridge", at: 1_010, agentUri: "sip:a@h" },
      { send: "agent.connected", at: 1_400 },
      { send: "node.hangup", at: 50_000 },
    ],
    state: "ended",
    commands: [
      "report answered@1000",
      "callAgent sip:a@h",
      "sip.hangupLead",
      "sip.hangupAgent",
      "report ended@50000 NORMAL_CLEARING bridge=400",
    ],
  },
  {
    name: "the node hangs up a ringing call: CANCEL",
    steps: [
      { send: "sip.progress", at: 100 },
      { send: "node.hangup", at: 2_000 },
      { send: "sip.failed", at: 2_010, status: 487 },
    ],
    state: "ended",
    commands: ["report ringing@100", "sip.cancel", "report ended@2010 NO_ANSWER"],
  },
  {
    name: "events that do not apply change nothing: a BYE before the answer, a late 180",
    steps: [
      { send: "lead.bye", at: 10 },
      { send: "sip.answered", at: 1_000 },
      { send: "sip.progress", at: 1_100 },
      { send: "agent.connected", at: 1_200 },
    ],
    state: "answered",
    commands: ["report answered@1000"],
  },
];

describe("call machine", () => {
  for (const row of rows) {
    test(row.name, () => {
      const { state, commands } = play(row.steps, row.detect);
      expect(state).toBe(row.state);
      expect(commands).toEqual(row.commands);
    });
  }
});
