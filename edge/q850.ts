/**
 * SIP final responses to the Q.850 cause names edge servers such as FreeSWITCH report, after
 * RFC 3398 §8.2.6.1. A `Reason: Q.850;cause=N` header, when the response carries one, wins.
 */

/** Q.850 cause values by the names the service's `hangup_cause` uses. */
export const Q850_NAMES: Readonly<Record<number, string>> = {
  1: "UNALLOCATED_NUMBER",
  2: "NO_ROUTE_TRANSIT_NET",
  3: "NO_ROUTE_DESTINATION",
  6: "CHANNEL_UNACCEPTABLE",
  16: "NORMAL_CLEARING",
  17: "USER_BUSY",
  18: "NO_USER_RESPONSE",
  19: "NO_ANSWER",
  20: "SUBSCRIBER_ABSENT",
  21: "CALL_REJECTED",
  22: "NUMBER_CHANGED",
  23: "REDIRECTION_TO_NEW_DESTINATION",
  25: "EXCHANGE_ROUTING_ERROR",
  27: "DESTINATION_OUT_OF_ORDER",
  28: "INVALID_NUMBER_FORMAT",
  29: "FACILITY_REJECTED",
  31: "NORMAL_UNSPECIFIED",
  34: "NORMAL_CIRCUIT_CONGESTION",
  38: "NETWORK_OUT_OF_ORDER",
  41: "NORMAL_TEMPORARY_FAILURE",
  42: "SWITCH_CONGESTION",
  44: "REQUESTED_CHAN_UNAVAIL",
  47: "RESOURCE_UNAVAILABLE",
  50: "FACILITY_NOT_SUBSCRIBED",
  55: "INCOMING_CALL_BARRED",
  57: "BEARERCAPABILITY_NOTAUTH",
  58: "BEARERCAPABILITY_NOTAVAIL",
  63: "SERVICE_UNAVAILABLE",
  65: "BEARERCAPABILITY_NOTIMPL",
  79: "SERVICE_NOT_IMPLEMENTED",
  88: "INCOMPATIBLE_DESTINATION",
  102: "RECOVERY_ON_TIMER_EXPIRE",
  111: "PROTOCOL_ERROR",
  127: "INTERWORKING",
};

/** RFC 3398 §8.2.6.1: a SIP final response to the ISDN cause value it maps to. */
const SIP_TO_Q850: Readonly<Record<number, number>> = {
  400: 41,
  401: 21,
  402: 21,
  403: 21,
  404: 1,
  405: 63,
  406: 79,
  407: 21,
  408: 102,
  410: 22,
  413: 127,
  414: 127,
  415: 79,
  416: 127,
  420: 127,
  421: 127,
  423: 127,
  480: 18,
  481: 41,
  482: 25,
  483: 25,
  484: 28,
  485: 1,
  486: 17,
  487: 127,
  488: 127,
  500: 41,
  501: 79,
  502: 38,
  503: 41,
  504: 102,
  505: 127,
  513: 127,
  580: 47,
  600: 17,
  603: 21,
  604: 1,
  606: 58,
};

/** The cause value of a `Reason` header's `Q.850` entry, if it has one. */
export function reasonCause(reason: string | undefined): number | undefined {
  if (!reason) return undefined;
  const match = /(?:^|,)\s*Q\.850\s*;[^,]*?\bcause\s*=\s*"?(\d{1,3})/i.exec(reason);
  return match?.[1] === undefined ? undefined : Number(match[1]);
}

/**
 * The Q.850 name for a failed INVITE's final response. Classes without an entry fall back
 * as RFC 3398 says for unlisted codes of their class: 4xx, 5xx and 6xx alike to
 * `INTERWORKING`, except that a 5xx is a temporary failure.
 */
export function causeOfResponse(status: number, reason?: string): string {
  const fromReason = reasonCause(reason);
  if (fromReason !== undefined && Q850_NAMES[fromReason]) return Q850_NAMES[fromReason];
  const mapped = SIP_TO_Q850[status];
  if (mapped !== undefined) return Q850_NAMES[mapped] ?? "INTERWORKING";
  if (status >= 500 && status < 600) return "NORMAL_TEMPORARY_FAILURE";
  return "INTERWORKING";
}
