import { describe, expect, test } from "bun:test";
import { causeOfResponse, reasonCause } from "../../edge/q850.ts";

describe("SIP final response → Q.850 (RFC 3398 §8.2.6.1)", () => {
  const table: [number, string][] = [
    [400, "NORMAL_TEMPORARY_FAILURE"],
    [401, "CALL_REJECTED"],
    [403, "CALL_REJECTED"],
    [404, "UNALLOCATED_NUMBER"],
    [405, "SERVICE_UNAVAILABLE"],
    [407, "CALL_REJECTED"],
    [408, "RECOVERY_ON_TIMER_EXPIRE"],
    [410, "NUMBER_CHANGED"],
    [480, "NO_USER_RESPONSE"],
    [484, "INVALID_NUMBER_FORMAT"],
    [485, "UNALLOCATED_NUMBER"],
    [486, "USER_BUSY"],
    [488, "INTERWORKING"],
    [500, "NORMAL_TEMPORARY_FAILURE"],
    [502, "NETWORK_OUT_OF_ORDER"],
    [503, "NORMAL_TEMPORARY_FAILURE"],
    [504, "RECOVERY_ON_TIMER_EXPIRE"],
    [580, "RESOURCE_UNAVAILABLE"],
    [600, "USER_BUSY"],
    [603, "CALL_REJECTED"],
    [604, "UNALLOCATED_NUMBER"],
    [606, "BEARERCAPABILITY_NOTAVAIL"],
    // Codes the table leaves out fall back by class.
    [499, "INTERWORKING"],
    [599, "NORMAL_TEMPORARY_FAILURE"],
    [699, "INTERWORKING"],
  ];
  for (const [status, cause] of table) {
    test(`${status} → ${cause}`, () => expect(causeOfResponse(status)).toBe(cause));
  }

  test("a Reason header with a Q.850 cause wins over the status", () => {
    expect(causeOfResponse(603, 'Q.850;cause=17;text="User busy"')).toBe("USER_BUSY");
    expect(causeOfResponse(480, "SIP;cause=480, Q.850 ; cause = 19")).toBe("NO_ANSWER");
    expect(causeOfResponse(500, "Q.850;cause=102")).toBe("RECOVERY_ON_TIMER_EXPIRE");
  });

  test("a Reason header without a Q.850 cause, or with an unknown one, leaves the status", () => {
    expect(causeOfResponse(486, "SIP;cause=600")).toBe("USER_BUSY");
    expect(causeOfResponse(404, "Q.850;cause=250")).toBe("UNALLOCATED_NUMBER");
    expect(causeOfResponse(404, "Q.850;text=oops")).toBe("UNALLOCATED_NUMBER");
    expect(reasonCause(undefined)).toBeUndefined();
  });
});
