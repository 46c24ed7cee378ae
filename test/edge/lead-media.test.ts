import { afterEach, describe, expect, test } from "bun:test";
import { createSocket, type Socket } from "node:dgram";
import { CoalescingClock } from "../../edge/media/coalescing-clock.ts";
import { newMediaCounters, RtpLeadMedia } from "../../edge/media/lead-media.ts";
import { buildRtp } from "../../edge/media/rtp.ts";
import { MessageCache } from "../../edge/messages.ts";
import { mediaAnswerOf } from "../../edge/sdp.ts";
import { infoDigit } from "../../edge/sip-adapter.ts";
import { encodeMulaw } from "../../src/media/g711.ts";
import { encodeWav } from "../../src/media/wav.ts";
import { until } from "../helpers/edge.ts";

/** The node's side of a lead's audio, piece by piece, over real sockets on loopback. */

const sockets: Socket[] = [];
afterEach(() => {
  for (const socket of sockets.splice(0)) socket.close();
});

async function bound(): Promise<{ socket: Socket; port: number }> {
  const socket = createSocket("udp4");
  sockets.push(socket);
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", () => resolve()));
  return { socket, port: socket.address().port };
}

const ANSWER = [
  "v=0",
  "o=lead 1 1 IN IP4 127.0.0.1",
  "s=-",
  "c=IN IP4 127.0.0.1",
  "t=0 0",
  "m=audio 40000 RTP/AVP 8 0 96",
  "a=rtpmap:8 PCMA/8000",
  "a=rtpmap:96 telephone-event/8000",
  "",
].join("\r\n");

describe("the lead's answer", () => {
  test("names where to send, the first G.711 format it took, and its telephone events", () => {
    expect(mediaAnswerOf(ANSWER)).toEqual({
      address: "127.0.0.1",
      port: 40000,
      payloadType: 8,
      telephoneEvent: 96,
    });
    expect(mediaAnswerOf(ANSWER.replace("RTP/AVP 8 0 96", "RTP/AVP 18"))).toBeUndefined();
    expect(mediaAnswerOf(undefined)).toBeUndefined();
  });

  test("SIP INFO keys: dtmf-relay and dtmf bodies, nothing else", () => {
    expect(infoDigit("application/dtmf-relay", "Signal=9\r\nDuration=160\r\n")).toBe("9");
    expect(infoDigit("application/dtmf-relay", "signal= #\r\n")).toBe("#");
    expect(infoDigit("application/dtmf", "5")).toBe("5");
    expect(infoDigit("application/dtmf-relay", "Signal=X")).toBeNull();
    expect(infoDigit("text/plain", "Signal=9")).toBeNull();
    expect(infoDigit(undefined, "9")).toBeNull();
  });
});

describe("a lead's media", () => {
  async function pair() {
    const node = await bound();
    const lead = await bound();
    const counters = newMediaCounters();
    const media = new RtpLeadMedia(node.socket, counters, new CoalescingClock());
    media.start({ address: "127.0.0.1", port: lead.port, payloadType: 0, telephoneEvent: 101 });
    const send = (bytes: Uint8Array) => lead.socket.send(bytes, node.port, "127.0.0.1");
    return { node, lead, counters, media, send };
  }

  test("frames of 20 ms reach the listener; garbage and unknown payload types are dropped and counted", async () => {
    const { counters, media, send } = await pair();
    const frames: Int16Array[] = [];
    media.onFrame((frame) => frames.push(frame));
    const speech = new Int16Array(240).fill(1000);
    // 30 ms packets: three make four and a half frames.
    for (let i = 0; i < 3; i++)
      send(
        buildRtp({
          payloadType: 0,
          marker: false,
          sequence: i,
          timestamp: i * 240,
          ssrc: 1,
          payload: encodeMulaw(speech),
        }),
      );
    send(new Uint8Array(172));
    send(new Uint8Array(5));
    send(
      buildRtp({
        payloadType: 18,
        marker: false,
        sequence: 9,
        timestamp: 0,
        ssrc: 1,
        payload: new Uint8Array(20),
      }),
    );
    await until(() => counters.packets >= 6, "every packet");
    expect(frames).toHaveLength(4);
    expect(frames.every((frame) => frame.length === 160)).toBe(true);
    expect(counters).toEqual({ packets: 6, malformed: 2, unknownPayload: 1 });
  });

  test("a key is heard once per event, however many packets repeat it", async () => {
    const { counters, media, send } = await pair();
    const keys: string[] = [];
    media.onDigit((digit) => keys.push(digit));
    for (const [event, timestamp] of [
      [9, 1000],
      [9, 1000],
      [9, 1000],
      [11, 5000],
    ] as const) {
      send(
        buildRtp({
          payloadType: 101,
          marker: false,
          sequence: timestamp,
          timestamp,
          ssrc: 1,
          payload: new Uint8Array([event, 0x0a, 0, 160]),
        }),
      );
    }
    await until(() => counters.packets >= 4, "every packet");
    expect(keys).toEqual(["9", "#"]);
  });

  test("a sound goes out as 20 ms packets and reports whether it played to its end", async () => {
    const { lead, media } = await pair();
    const heard: Buffer[] = [];
    lead.socket.on("message", (packet) => heard.push(packet));
    expect(await media.play(new Int16Array(800))).toBe(true);
    await until(() => heard.length >= 5, "the packets");
    expect(heard.map((packet) => packet.length)).toEqual([172, 172, 172, 172, 172]);
    const cut = media.play(new Int16Array(8000));
    setTimeout(() => media.stopPlaying(), 100);
    expect(await cut).toBe(false);
  });
});

describe("the message cache", () => {
  const wav = encodeWav(new Int16Array(1600).fill(100), 8000);

  test("fetches a version once, again after a failure, and keeps at most 64", async () => {
    let fetches = 0;
    let fail = true;
    const cache = new MessageCache(
      async () => {
        fetches++;
        if (fail) throw new Error("503");
        return { version: 3, wav };
      },
      () => {},
    );
    await expect(cache.get("c", "abandon", 3)).rejects.toThrow("503");
    fail = false;
    // The message, and 300 ms of silence to push it through the lead's jitter buffer.
    const samples = await cache.get("c", "abandon", 3);
    expect(samples.length).toBe(1600 + 2400);
    expect(samples.subarray(1600).every((sample) => sample === 0)).toBe(true);
    await cache.get("c", "abandon", 3);
    expect(fetches).toBe(2);
    for (let i = 0; i < 70; i++) await cache.get(`campaign-${i}`, "abandon", 3);
    await cache.get("c", "abandon", 3);
    expect(fetches).toBe(73);
  });

  test("an older version than the job names, or audio it cannot read, is refused", async () => {
    const stale = new MessageCache(
      async () => ({ version: 2, wav }),
      () => {},
    );
    await expect(stale.get("c", "abandon", 3)).rejects.toThrow("version 2");
    const garbage = new MessageCache(
      async () => ({ version: 3, wav: new Uint8Array([1, 2, 3]) }),
      () => {},
    );
    await expect(garbage.get("c", "abandon", 3)).rejects.toThrow();
  });
});
