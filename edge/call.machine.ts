import { assign, emit, setup } from "xstate";
import { causeOfResponse } from "./q850.ts";
import type { CallReport } from "./service-client.ts";

/**
 * One call of the node: the lead's leg from INVITE to hang-up, the service's verdict on the
 * answer, the bridge to the agent's phone. Pure: it only assigns and emits. What it emits the
 * node carries out (SIP requests, reports to the service), and what comes back (responses,
 * BYEs, the service's reply) arrives as events stamped with the time they happened.
 */

/** A message the service says to play before hanging up. */
export interface MessageToPlay {
  kind: "abandon" | "voicemail";
  version: number;
}

export interface AmdVerdictReport {
  result: "human" | "machine" | "fax" | "unknown";
  confidence: number;
  ms: number;
}

export interface CallContext {
  callId: string;
  ringTimeoutMs: number;
  startedAt: number;
  /** Answering-machine detection runs on the answer (the campaign has it on). */
  detect: boolean;
  /** A response (even 100 Trying) came back, so the INVITE may be cancelled. */
  heardBack: boolean;
  ringing: boolean;
  answeredAt: number | null;
  bridgeMs: number | null;
  cause: string | null;
  endedAt: number | null;
  /** The agent hung up while a transfer was under way: if it fails, nobody is left. */
  agentGone: boolean;
}

export type CallEvent =
  | { type: "sip.trying"; at: number }
  | { type: "sip.progress"; at: number }
  | { type: "sip.answered"; at: number }
  | { type: "sip.failed"; at: number; status: number; reason?: string | undefined }
  | { type: "service.bridge"; at: number; agentUri: string | null }
  | { type: "service.hangup"; at: number; message?: MessageToPlay | null | undefined }
  /** The service waits for detection's verdict. */
  | { type: "service.detect"; at: number }
  /** Detection's verdict (or, at the end of its budget, its best guess). */
  | { type: "media.verdict"; at: number; verdict: AmdVerdictReport }
  /** The message has been played, cut off, or could not be. */
  | { type: "media.done"; at: number }
  | { type: "agent.connected"; at: number }
  | { type: "agent.failed"; at: number }
  | { type: "lead.bye"; at: number }
  | { type: "agent.bye"; at: number }
  /** Answering-machine detection said a machine picked up (the dry run's model only). */
  | { type: "lead.machine"; at: number }
  /** The node hangs up whatever is left (the drain limit at shutdown, or the service asks). */
  | { type: "node.hangup"; at: number }
  /** The service sends the connected lead on (a blind transfer) to this URI. */
  | { type: "service.transfer"; at: number; targetUri: string }
  | { type: "transfer.connected"; at: number }
  | { type: "transfer.failed"; at: number; reason: string };

export type CallCommand =
  | { type: "report"; report: CallReport }
  /** CANCEL the INVITE (RFC 3261 §9.1: with its Via). */
  | { type: "sip.cancel" }
  /** Forget an INVITE that was never answered by anything; a late 2xx is ACKed and BYEd. */
  | { type: "sip.abandon" }
  | { type: "sip.hangupLead" }
  /** Bridge to the agent's phone; without one (`null`) the bridge fails, save in the dry run. */
  | { type: "sip.callAgent"; agentUri: string | null }
  | { type: "sip.hangupAgent" }
  /** Call the transfer's target and move the lead's media to it; then drop the agent's leg. */
  | { type: "sip.transfer"; targetUri: string }
  /** Listen to the lead for a machine; the verdict comes back as `media.verdict`. */
  | { type: "media.detect" }
  /** Play a message (reporting it and any opt-out); `media.done` comes back. */
  | { type: "media.play"; message: MessageToPlay }
  /** Stop listening and playing: the call is over. */
  | { type: "media.stop" };

const iso = (at: number) => new Date(at).toISOString();
const endAt = (cause: string) => ({ type: "end" as const, params: { cause } });

export const callMachine = setup({
  types: {
    context: {} as CallContext,
    events: {} as CallEvent,
    emitted: {} as CallCommand,
    input: {} as { callId: string; ringTimeoutMs: number; startedAt: number; detect: boolean },
  },
  delays: {
    ringTimeout: ({ context }) => context.ringTimeoutMs,
    /** How long a CANCEL may wait for its 487 (RFC 3261's 64·T1). */
    cancelGrace: 32_000,
  },
  actions: {
    /** The call ends now, for this reason. */
    end: assign(({ event }, params: { cause: string }) => ({
      cause: params.cause,
      endedAt: event.at,
    })),
    /** Bridge to the agent's phone the service named. */
    callAgent: emit(({ event }) => ({
      type: "sip.callAgent" as const,
      agentUri: (event as { agentUri: string | null }).agentUri,
    })),
    /** Play the message the service named. */
    play: emit(({ event }) => ({
      type: "media.play" as const,
      message: (event as { message: MessageToPlay }).message,
    })),
  },
  guards: {
    heardBack: ({ context }) => context.heardBack,
    notRinging: ({ context }) => !context.ringing,
    detect: ({ context }) => context.detect,
    withMessage: ({ event }) => event.type === "service.hangup" && !!event.message,
  },
}).createMachine({
  id: "call",
  context: ({ input }) => ({
    ...input,
    heardBack: false,
    ringing: false,
    answeredAt: null,
    bridgeMs: null,
    cause: null,
    endedAt: null,
    agentGone: false,
  }),
  initial: "outgoing",
  states: {
    outgoing: {
      after: {
        ringTimeout: [
          { guard: "heardBack", target: "cancelling", actions: emit({ type: "sip.cancel" }) },
          {
            // Not even a 100 Trying: the trunk is unreachable (RFC 3261's timer B, shortened).
            target: "ended",
            actions: [
              assign({
                cause: "RECOVERY_ON_TIMER_EXPIRE",
                endedAt: ({ context }) => context.startedAt + context.ringTimeoutMs,
              }),
              emit({ type: "sip.abandon" }),
            ],
          },
        ],
      },
      on: {
        "sip.trying": { actions: assign({ heardBack: true }) },
        "sip.progress": {
          guard: "notRinging",
          actions: [
            assign({ heardBack: true, ringing: true }),
            emit(({ event }) => ({
              type: "report" as const,
              report: { type: "ringing" as const, at: iso(event.at) },
            })),
          ],
        },
        "sip.answered": [
          {
            guard: "detect",
            target: "detecting",
            actions: [
              assign({ answeredAt: ({ event }) => event.at }),
              emit(({ event }) => ({
                type: "report" as const,
                report: { type: "answered" as const, at: iso(event.at), detecting: true },
              })),
              emit({ type: "media.detect" }),
            ],
          },
          {
            target: "answered",
            actions: [
              assign({ answeredAt: ({ event }) => event.at }),
              emit(({ event }) => ({
                type: "report" as const,
                report: { type: "answered" as const, at: iso(event.at) },
              })),
            ],
          },
        ],
        "sip.failed": {
          target: "ended",
          actions: assign({
            cause: ({ event }) => causeOfResponse(event.status, event.reason),
            endedAt: ({ event }) => event.at,
          }),
        },
        "lead.machine": {
          target: "ended",
          actions: [
            emit(({ event }) => ({
              type: "report" as const,
              report: { type: "machine" as const, at: iso(event.at) },
            })),
            endAt("NORMAL_CLEARING"),
            emit({ type: "sip.hangupLead" }),
          ],
        },
        "node.hangup": [
          {
            guard: "heardBack",
            target: "cancelling",
            actions: emit({ type: "sip.cancel" }),
          },
          {
            target: "ended",
            actions: [endAt("ORIGINATOR_CANCEL"), emit({ type: "sip.abandon" })],
          },
        ],
      },
    },
    cancelling: {
      after: {
        cancelGrace: {
          target: "ended",
          actions: [
            assign({
              cause: "NO_ANSWER",
              endedAt: ({ context }) => context.startedAt + context.ringTimeoutMs,
            }),
            emit({ type: "sip.abandon" }),
          ],
        },
      },
      on: {
        // The 487 to our CANCEL, or any other final answer that crossed it.
        "sip.failed": { target: "ended", actions: [endAt("NO_ANSWER")] },
        // A 200 that crossed the CANCEL: the lead is ACKed and hung up at once.
        "sip.answered": {
          target: "ended",
          actions: [endAt("NO_ANSWER"), emit({ type: "sip.hangupLead" })],
        },
      },
    },
    // Listening for a machine; the service chooses nobody before the verdict.
    detecting: {
      on: {
        "media.verdict": {
          target: "answered",
          actions: emit(({ event }) => ({
            type: "report" as const,
            report: {
              type: "amd" as const,
              at: iso(event.at),
              ...(event as { verdict: AmdVerdictReport }).verdict,
            },
          })),
        },
        // A service that does not wait for the verdict (detection turned off meanwhile).
        "service.bridge": {
          target: "bridging",
          actions: [emit({ type: "media.stop" }), "callAgent"],
        },
        "service.hangup": [
          {
            guard: "withMessage",
            target: "playing",
            actions: [emit({ type: "media.stop" }), "play"],
          },
          {
            target: "ended",
            actions: [
              emit({ type: "media.stop" }),
              endAt("NORMAL_CLEARING"),
              emit({ type: "sip.hangupLead" }),
            ],
          },
        ],
        "lead.bye": {
          target: "ended",
          actions: [emit({ type: "media.stop" }), endAt("NORMAL_CLEARING")],
        },
        "node.hangup": {
          target: "ended",
          actions: [
            emit({ type: "media.stop" }),
            endAt("NORMAL_CLEARING"),
            emit({ type: "sip.hangupLead" }),
          ],
        },
      },
    },
    answered: {
      on: {
        "service.bridge": { target: "bridging", actions: "callAgent" },
        "service.hangup": [
          { guard: "withMessage", target: "playing", actions: "play" },
          {
            target: "ended",
            actions: [endAt("NORMAL_CLEARING"), emit({ type: "sip.hangupLead" })],
          },
        ],
        "lead.bye": { target: "ended", actions: [endAt("NORMAL_CLEARING")] },
        "node.hangup": {
          target: "ended",
          actions: [endAt("NORMAL_CLEARING"), emit({ type: "sip.hangupLead" })],
        },
      },
    },
    // The abandon message (or a voicemail drop after the beep), then the hang-up.
    playing: {
      on: {
        "media.done": {
          target: "ended",
          actions: [endAt("NORMAL_CLEARING"), emit({ type: "sip.hangupLead" })],
        },
        "lead.bye": {
          target: "ended",
          actions: [emit({ type: "media.stop" }), endAt("NORMAL_CLEARING")],
        },
        "node.hangup": {
          target: "ended",
          actions: [
            emit({ type: "media.stop" }),
            endAt("NORMAL_CLEARING"),
            emit({ type: "sip.hangupLead" }),
          ],
        },
      },
    },
    bridging: {
      on: {
        "agent.connected": {
          target: "bridged",
          actions: assign({
            bridgeMs: ({ context, event }) =>
              Math.max(0, Math.round(event.at - (context.answeredAt ?? event.at))),
          }),
        },
        "agent.failed": {
          target: "ended",
          actions: [endAt("NORMAL_CLEARING"), emit({ type: "sip.hangupLead" })],
        },
        "lead.bye": {
          target: "ended",
          actions: [endAt("NORMAL_CLEARING"), emit({ type: "sip.hangupAgent" })],
        },
        "node.hangup": {
          target: "ended",
          actions: [
            endAt("NORMAL_CLEARING"),
            emit({ type: "sip.hangupLead" }),
            emit({ type: "sip.hangupAgent" }),
          ],
        },
      },
    },
    bridged: {
      on: {
        "service.transfer": {
          target: "transferring",
          actions: [
            assign({ agentGone: false }),
            emit(({ event }) => ({
              type: "sip.transfer" as const,
              targetUri: (event as { targetUri: string }).targetUri,
            })),
          ],
        },
        "lead.bye": {
          target: "ended",
          actions: [endAt("NORMAL_CLEARING"), emit({ type: "sip.hangupAgent" })],
        },
        "agent.bye": {
          target: "ended",
          actions: [endAt("NORMAL_CLEARING"), emit({ type: "sip.hangupLead" })],
        },
        "node.hangup": {
          target: "ended",
          actions: [
            endAt("NORMAL_CLEARING"),
            emit({ type: "sip.hangupLead" }),
            emit({ type: "sip.hangupAgent" }),
          ],
        },
      },
    },
    // Calling the transfer's target: the lead stays with its agent until the target answers.
    transferring: {
      on: {
        "transfer.connected": {
          target: "bridged",
          actions: emit(({ event }) => ({
            type: "report" as const,
            report: { type: "transferred" as const, at: iso(event.at) },
          })),
        },
        "transfer.failed": [
          {
            guard: ({ context }) => context.agentGone,
            target: "ended",
            actions: [
              emit(({ event }) => ({
                type: "report" as const,
                report: {
                  type: "transfer_failed" as const,
                  at: iso(event.at),
                  reason: (event as { reason: string }).reason,
                },
              })),
              endAt("NORMAL_CLEARING"),
              emit({ type: "sip.hangupLead" }),
            ],
          },
          {
            target: "bridged",
            actions: emit(({ event }) => ({
              type: "report" as const,
              report: {
                type: "transfer_failed" as const,
                at: iso(event.at),
                reason: (event as { reason: string }).reason,
              },
            })),
          },
        ],
        "agent.bye": { actions: assign({ agentGone: true }) },
        "lead.bye": {
          target: "ended",
          actions: [endAt("NORMAL_CLEARING"), emit({ type: "sip.hangupAgent" })],
        },
        "node.hangup": {
          target: "ended",
          actions: [
            endAt("NORMAL_CLEARING"),
            emit({ type: "sip.hangupLead" }),
            emit({ type: "sip.hangupAgent" }),
          ],
        },
      },
    },
    ended: {
      type: "final",
      entry: emit(({ context }) => ({
        type: "report" as const,
        report: {
          type: "ended" as const,
          at: iso(context.endedAt ?? context.startedAt),
          hangup_cause: context.cause ?? "NORMAL_CLEARING",
          ...(context.bridgeMs !== null ? { node_bridge_ms: context.bridgeMs } : {}),
        },
      })),
    },
  },
});
