import type { CALL_OUTCOMES } from "../../db/schema/calls.ts";

export type CallOutcome = (typeof CALL_OUTCOMES)[number];

/** Q.850 causes an edge server reports when nobody picked up. */
const NO_ANSWER_CAUSES = new Set(["NO_ANSWER", "NO_USER_RESPONSE", "ORIGINATOR_CANCEL"]);

/**
 * What a finished call amounts to: bridged to an agent is `answered`; answered with no agent
 * is `abandoned`; a `machine` event is `machine`; otherwise the hang-up cause decides.
 */
export function outcomeOf(
  call: { bridged: boolean; answered: boolean; machine: boolean },
  hangupCause: string | null,
): CallOutcome {
  if (call.bridged) return "answered";
  if (call.machine) return "machine";
  if (call.answered) return "abandoned";
  const cause = (hangupCause ?? "").toUpperCase();
  if (NO_ANSWER_CAUSES.has(cause)) return "no_answer";
  if (cause === "USER_BUSY") return "busy";
  return "failed";
}
