/** RTP packets (RFC 3550) and the telephone-event payload that carries DTMF (RFC 4733). */

export interface RtpPacket {
  payloadType: number;
  marker: boolean;
  sequence: number;
  timestamp: number;
  ssrc: number;
  payload: Uint8Array;
}

const HEADER_BYTES = 12;
const RTP_VERSION = 2;

/**
 * The fields and payload of an RTP packet (the payload a view into `buf`), or null when it
 * is not one: a version other than 2, or a header, CSRC list, extension or padding that
 * does not fit. Contributing sources and header extensions are skipped.
 */
export function parseRtp(buf: Uint8Array): RtpPacket | null {
  if (buf.length < HEADER_BYTES) return null;
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const first = buf[0] as number;
  if (first >> 6 !== RTP_VERSION) return null;
  const hasPadding = (first & 0x20) !== 0;
  const hasExtension = (first & 0x10) !== 0;
  const csrcCount = first & 0x0f;

  let start = HEADER_BYTES + 4 * csrcCount;
  if (hasExtension) {
    if (start + 4 > buf.length) return null;
    start += 4 + 4 * view.getUint16(start + 2);
  }
  let end = buf.length;
  if (hasPadding) {
    // The last byte counts the padding, itself included, so it is never 0.
    const padding = buf[end - 1] as number;
    if (padding === 0) return null;
    end -= padding;
  }
  if (start > end) return null;

  const second = buf[1] as number;
  return {
    payloadType: second & 0x7f,
    marker: (second & 0x80) !== 0,
    sequence: view.getUint16(2),
    timestamp: view.getUint32(4),
    ssrc: view.getUint32(8),
    payload: buf.subarray(start, end),
  };
}

/**
 * An RTP packet with a bare 12-byte header. The sequence number and timestamp wrap (modulo
 * 2^16 and 2^32), so a sender may simply count up.
 */
export function buildRtp(packet: RtpPacket): Uint8Array {
  const { payloadType, marker, sequence, timestamp, ssrc, payload } = packet;
  if (!Number.isInteger(payloadType) || payloadType < 0 || payloadType > 127) {
    throw new RangeError(`RTP payload type ${payloadType} is not in 0-127`);
  }
  const buf = new Uint8Array(HEADER_BYTES + payload.length);
  const view = new DataView(buf.buffer);
  buf[0] = RTP_VERSION << 6;
  buf[1] = (marker ? 0x80 : 0) | payloadType;
  view.setUint16(2, sequence & 0xffff);
  view.setUint32(4, timestamp >>> 0);
  view.setUint32(8, ssrc >>> 0);
  buf.set(payload, HEADER_BYTES);
  return buf;
}

export interface TelephoneEvent {
  event: number;
  /** Set on the last packets of an event, which repeat its final duration. */
  end: boolean;
  /** The tone's power, 0 to 63, in -dBm0 (0 the loudest). */
  volume: number;
  /** In timestamp units since the event began. */
  duration: number;
}

/** The event in an RFC 4733 telephone-event payload, or null when it is shorter than one. */
export function parseTelephoneEvent(payload: Uint8Array): TelephoneEvent | null {
  if (payload.length < 4) return null;
  const flags = payload[1] as number;
  return {
    event: payload[0] as number,
    end: (flags & 0x80) !== 0,
    volume: flags & 0x3f,
    duration: ((payload[2] as number) << 8) | (payload[3] as number),
  };
}

const DTMF_DIGITS = "0123456789*#ABCD";

/** The DTMF key of a telephone event (RFC 4733 §3.2: 0-9, *, #, A-D), or null for others. */
export function eventDigit(event: number): string | null {
  return Number.isInteger(event) && event >= 0 && event < DTMF_DIGITS.length
    ? (DTMF_DIGITS[event] as string)
    : null;
}
