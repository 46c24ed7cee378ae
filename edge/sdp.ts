/** The little SDP the node writes and rewrites (RFC 4566, RFC 3264). */

/** The node's own offer to a lead: a media sink until the bridge moves the media away. */
export function sinkOffer(o: {
  address: string;
  port: number;
  sessionId: string;
  version: number;
}) {
  return [
    "v=0",
    `o=edge ${o.sessionId} ${o.version} IN IP4 ${o.address}`,
    "s=edge",
    `c=IN IP4 ${o.address}`,
    "t=0 0",
    `m=audio ${o.port} RTP/AVP 0 8 101`,
    "a=rtpmap:0 PCMU/8000",
    "a=rtpmap:8 PCMA/8000",
    "a=rtpmap:101 telephone-event/8000",
    "a=fmtp:101 0-16",
    "a=sendrecv",
    "",
  ].join("\r\n");
}

/**
 * The SDP of one leg presented to the other, with the origin line of the dialog it goes
 * into: RFC 3264 §8 wants one origin per session and a version that only grows, so the lead
 * sees the agent's media under the node's origin, one version up.
 */
export function withOrigin(sdp: string, origin: { sessionId: string; version: number }): string {
  const address = /^c=IN IP[46] (\S+)/m.exec(sdp)?.[1] ?? "0.0.0.0";
  const lines = sdp.split(/\r?\n/).filter((line, i, all) => line !== "" || i < all.length - 1);
  const rewritten = lines.map((line) =>
    line.startsWith("o=") ? `o=edge ${origin.sessionId} ${origin.version} IN IP4 ${address}` : line,
  );
  return `${rewritten.filter((l) => l !== "").join("\r\n")}\r\n`;
}

/** The audio address and port an SDP asks media to be sent to. */
export function audioTarget(sdp: string): { address: string; port: number } | undefined {
  const address = /^c=IN IP[46] (\S+)/m.exec(sdp)?.[1];
  const port = /^m=audio (\d+)/m.exec(sdp)?.[1];
  return address && port ? { address, port: Number(port) } : undefined;
}

/**
 * How the node sends to and hears a lead, from the lead's answer: its address, the first
 * G.711 format it accepted, and the payload type of its telephone events, if any.
 */
export function mediaAnswerOf(sdp: string | undefined) {
  if (!sdp) return undefined;
  const target = audioTarget(sdp);
  const formats = /^m=audio \d+ RTP\/AVP ([\d ]+)/m.exec(sdp)?.[1]?.trim().split(/\s+/).map(Number);
  const payloadType = formats?.find((format) => format === 0 || format === 8);
  if (!target || payloadType === undefined) return undefined;
  const event = /^a=rtpmap:(\d+) telephone-event\/8000/im.exec(sdp)?.[1];
  return {
    ...target,
    payloadType: payloadType as 0 | 8,
    telephoneEvent: event === undefined ? null : Number(event),
  };
}
