import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import {
  buildRtp,
  eventDigit,
  parseRtp,
  parseTelephoneEvent,
  type RtpPacket,
} from "../../edge/media/rtp.ts";

const bytes = (...values: number[]) => Uint8Array.from(values);
const HEADER = [0x12, 0x34, 0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04];

describe("parseRtp", () => {
  test("reads a bare header and its payload", () => {
    const packet = parseRtp(bytes(0x80, 0x00, ...HEADER, 0xaa, 0xbb));
    expect(packet).toEqual({
      payloadType: 0,
      marker: false,
      sequence: 0x1234,
      timestamp: 0xdeadbeef,
      ssrc: 0x01020304,
      payload: bytes(0xaa, 0xbb),
    });
  });

  test("reads the marker and a dynamic payload type", () => {
    const packet = parseRtp(bytes(0x80, 0xe5, ...HEADER));
    expect(packet?.marker).toBe(true);
    expect(packet?.payloadType).toBe(101);
    expect(packet?.payload).toEqual(bytes());
  });

  test("skips contributing sources", () => {
    const csrcs = [0, 0, 0, 1, 0, 0, 0, 2];
    expect(parseRtp(bytes(0x82, 0x08, ...HEADER, ...csrcs, 0xaa))?.payload).toEqual(bytes(0xaa));
  });

  test("skips a header extension by its length in words", () => {
    const extension = [0xbe, 0xde, 0x00, 0x02, 1, 2, 3, 4, 5, 6, 7, 8];
    expect(parseRtp(bytes(0x90, 0x08, ...HEADER, ...extension, 0xaa))?.payload).toEqual(
      bytes(0xaa),
    );
  });

  test("strips padding, its count byte included", () => {
    expect(parseRtp(bytes(0xa0, 0x08, ...HEADER, 0xaa, 0xbb, 0, 0, 3))?.payload).toEqual(
      bytes(0xaa, 0xbb),
    );
    expect(parseRtp(bytes(0xa0, 0x08, ...HEADER, 0, 2))?.payload).toEqual(bytes());
  });

  test("the payload is a view into the buffer, wherever the buffer starts", () => {
    const backing = bytes(0xff, 0xff, 0x80, 0x00, ...HEADER, 0xaa);
    const packet = parseRtp(backing.subarray(2));
    expect(packet?.sequence).toBe(0x1234);
    expect(packet?.payload.byteOffset).toBe(14);
  });

  test.each([
    ["too short for a header", bytes(0x80, 0x00, ...HEADER.slice(0, 9))],
    ["an empty buffer", bytes()],
    ["version 0", bytes(0x00, 0x00, ...HEADER)],
    ["version 1", bytes(0x40, 0x00, ...HEADER)],
    ["version 3", bytes(0xc0, 0x00, ...HEADER)],
    ["contributing sources past the end", bytes(0x82, 0x00, ...HEADER, 0, 0, 0, 1)],
    ["an extension header past the end", bytes(0x90, 0x00, ...HEADER, 0xbe, 0xde)],
    ["an extension body past the end", bytes(0x90, 0x00, ...HEADER, 0xbe, 0xde, 0, 2, 1, 2, 3, 4)],
    ["padding of zero bytes", bytes(0xa0, 0x00, ...HEADER, 0xaa, 0)],
    ["padding longer than the payload", bytes(0xa0, 0x00, ...HEADER, 0xaa, 3)],
    ["padding into the header", bytes(0xa0, 0x00, ...HEADER.slice(0, 9), 200)],
  ])("refuses %s", (_, buf) => {
    expect(parseRtp(buf)).toBeNull();
  });

  test("never throws, whatever the bytes", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (buf) => {
        const packet = parseRtp(buf);
        if (packet) expect(packet.payload.length).toBeLessThanOrEqual(buf.length - 12);
      }),
      { numRuns: 2000 },
    );
  });
});

describe("buildRtp", () => {
  test("writes the header byte for byte", () => {
    const packet = buildRtp({
      payloadType: 8,
      marker: true,
      sequence: 0x1234,
      timestamp: 0xdeadbeef,
      ssrc: 0x01020304,
      payload: bytes(0xd5, 0xd5),
    });
    expect(packet).toEqual(bytes(0x80, 0x88, ...HEADER, 0xd5, 0xd5));
  });

  test("wraps the sequence number and timestamp", () => {
    const packet = parseRtp(
      buildRtp({
        payloadType: 0,
        marker: false,
        sequence: 65536 + 7,
        timestamp: 2 ** 32 + 160,
        ssrc: 1,
        payload: bytes(),
      }),
    );
    expect(packet?.sequence).toBe(7);
    expect(packet?.timestamp).toBe(160);
  });

  test("refuses a payload type outside 7 bits", () => {
    const packet = { marker: false, sequence: 0, timestamp: 0, ssrc: 0, payload: bytes() };
    expect(() => buildRtp({ ...packet, payloadType: 128 })).toThrow(RangeError);
    expect(() => buildRtp({ ...packet, payloadType: -1 })).toThrow(RangeError);
  });

  test("what it builds parses back to the same fields", () => {
    const packets = fc.record<RtpPacket>({
      payloadType: fc.integer({ min: 0, max: 127 }),
      marker: fc.boolean(),
      sequence: fc.integer({ min: 0, max: 0xffff }),
      timestamp: fc.nat({ max: 0xffffffff }),
      ssrc: fc.nat({ max: 0xffffffff }),
      payload: fc.uint8Array({ maxLength: 200 }),
    });
    fc.assert(fc.property(packets, (packet) => expect(parseRtp(buildRtp(packet))).toEqual(packet)));
  });
});

describe("telephone events", () => {
  test("reads a digit's event, end bit, volume and duration", () => {
    expect(parseTelephoneEvent(bytes(0x05, 0x8a, 0x03, 0x20))).toEqual({
      event: 5,
      end: true,
      volume: 10,
      duration: 800,
    });
    expect(parseTelephoneEvent(bytes(0x0b, 0x3f, 0xff, 0xff))).toEqual({
      event: 11,
      end: false,
      volume: 63,
      duration: 65535,
    });
  });

  test("the reserved bit is ignored", () => {
    expect(parseTelephoneEvent(bytes(0x01, 0x40 | 0x07, 0, 160))).toEqual({
      event: 1,
      end: false,
      volume: 7,
      duration: 160,
    });
  });

  test("refuses a payload shorter than one event", () => {
    expect(parseTelephoneEvent(bytes())).toBeNull();
    expect(parseTelephoneEvent(bytes(0x05, 0x8a, 0x03))).toBeNull();
  });

  test("names the sixteen DTMF keys and nothing else", () => {
    const keys = Array.from({ length: 16 }, (_, event) => eventDigit(event)).join("");
    expect(keys).toBe("0123456789*#ABCD");
    for (const event of [16, 17, 255, -1, 1.5, Number.NaN]) expect(eventDigit(event)).toBeNull();
  });
});
