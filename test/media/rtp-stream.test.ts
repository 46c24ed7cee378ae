import { describe, expect, test } from "bun:test";
import { parseRtp, type RtpPacket } from "../../edge/media/rtp.ts";
import {
  PACKET_MS,
  type PacingClock,
  RtpSender,
  SAMPLES_PER_PACKET,
} from "../../edge/media/rtp-stream.ts";
import { encodeAlaw, encodeMulaw } from "../../src/media/g711.ts";

/** Timers that fire only when the test moves time, each `lateness()` ms after it was due. */
class ManualTimers implements PacingClock {
  time = 0;
  private nextId = 0;
  private readonly timers = new Map<number, { at: number; run: () => void }>();

  constructor(private readonly lateness: () => number = () => 0) {}

  now() {
    return this.time;
  }

  setTimeout(run: () => void, ms: number) {
    this.nextId++;
    this.timers.set(this.nextId, { at: this.time + ms + this.lateness(), run });
    return this.nextId;
  }

  clearTimeout(timer: unknown) {
    this.timers.delete(timer as number);
  }

  get pending() {
    return this.timers.size;
  }

  /** Runs every timer due by `until` in the order they fall due, then moves time there. */
  runUntil(until: number) {
    for (;;) {
      const next = [...this.timers].sort(([, a], [, b]) => a.at - b.at)[0];
      if (!next || next[1].at > until) break;
      this.timers.delete(next[0]);
      this.time = Math.max(this.time, next[1].at);
      next[1].run();
    }
    this.time = Math.max(this.time, until);
  }
}

/** A sender over manual timers that records what it sends and when. */
function harness(options: { payloadType?: 0 | 8; lateness?: () => number } = {}) {
  const clock = new ManualTimers(options.lateness);
  const sent: { at: number; packet: RtpPacket }[] = [];
  const done: { at: number; playedToEnd: boolean }[] = [];
  const sender = new RtpSender({
    payloadType: options.payloadType ?? 0,
    ssrc: 0x11223344,
    sequence: 100,
    timestamp: 1000,
    clock,
    send: (bytes) => {
      const packet = parseRtp(bytes);
      if (!packet) throw new Error("sent a packet that does not parse");
      sent.push({ at: clock.now(), packet });
    },
  });
  const onDone = (playedToEnd: boolean) => done.push({ at: clock.now(), playedToEnd });
  return { clock, sender, sent, done, onDone };
}

/** A ramp, so that every packet's payload differs. */
const ramp = (length: number) => Int16Array.from({ length }, (_, i) => (i * 37) % 20000);

describe("packets", () => {
  test("a spurt in 20 ms packets: marker first, sequence and timestamp counting up", () => {
    const { sender } = harness();
    const packets = sender.packets(ramp(400)).map(parseRtp);
    expect(packets.map((p) => [p?.marker, p?.sequence, p?.timestamp])).toEqual([
      [true, 100, 1000],
      [false, 101, 1160],
      [false, 102, 1320],
    ]);
    for (const p of packets) {
      expect(p?.payloadType).toBe(0);
      expect(p?.ssrc).toBe(0x11223344);
      expect(p?.payload.length).toBe(SAMPLES_PER_PACKET);
    }
  });

  test("payloads are the µ-law of the samples, the last padded with silence", () => {
    const { sender } = harness();
    const samples = ramp(400);
    const payloads = sender.packets(samples).map((bytes) => parseRtp(bytes)?.payload);
    expect(payloads[0]).toEqual(encodeMulaw(samples.subarray(0, 160)));
    expect(payloads[1]).toEqual(encodeMulaw(samples.subarray(160, 320)));
    expect(payloads[2]?.subarray(0, 80)).toEqual(encodeMulaw(samples.subarray(320)));
    expect(payloads[2]?.subarray(80)).toEqual(new Uint8Array(80).fill(0xff));
  });

  test("PCMA carries A-law, padded with A-law's silence", () => {
    const { sender } = harness({ payloadType: 8 });
    const samples = ramp(170);
    const [first, second] = sender.packets(samples).map(parseRtp);
    expect(first?.payloadType).toBe(8);
    expect(first?.payload).toEqual(encodeAlaw(samples.subarray(0, 160)));
    expect(second?.payload).toEqual(
      Uint8Array.from([...encodeAlaw(samples.subarray(160)), ...new Array(150).fill(0xd5)]),
    );
  });

  test("a whole number of packets needs no padding, and no samples no packets", () => {
    const { sender } = harness();
    expect(sender.packets(ramp(320))).toHaveLength(2);
    expect(sender.packets(new Int16Array(0))).toEqual([]);
    // The empty spurt took no sequence numbers.
    expect(parseRtp(sender.packets(ramp(1))[0] as Uint8Array)?.sequence).toBe(102);
  });

  test("the next spurt carries the marker again and counts on", () => {
    const { sender } = harness();
    sender.packets(ramp(320));
    const [next] = sender.packets(ramp(160)).map(parseRtp);
    expect([next?.marker, next?.sequence, next?.timestamp]).toEqual([true, 102, 1320]);
  });

  test("sequence numbers and timestamps wrap", () => {
    const sender = new RtpSender({
      payloadType: 0,
      ssrc: 1,
      sequence: 65535,
      timestamp: 2 ** 32 - 160,
      send: () => {},
    });
    const packets = sender.packets(ramp(480)).map(parseRtp);
    expect(packets.map((p) => [p?.sequence, p?.timestamp])).toEqual([
      [65535, 2 ** 32 - 160],
      [0, 0],
      [1, 160],
    ]);
  });

  test("starts at random sequence numbers and timestamps unless told", () => {
    const sender = new RtpSender({ payloadType: 0, ssrc: 1, send: () => {} });
    const packet = parseRtp(sender.packets(ramp(1))[0] as Uint8Array);
    expect(packet?.sequence).toBeGreaterThanOrEqual(0);
    expect(packet?.sequence).toBeLessThan(65536);
    expect(Number.isInteger(packet?.timestamp)).toBe(true);
  });
});

describe("start", () => {
  test("sends a packet every 20 ms, then reports the end once the last one's audio is over", () => {
    const { clock, sender, sent, done, onDone } = harness();
    sender.start(ramp(8000), onDone);
    expect(sent).toHaveLength(0);
    expect(sender.playing).toBe(true);
    clock.runUntil(999);
    expect(sent.map((s) => s.at)).toEqual(Array.from({ length: 50 }, (_, i) => i * PACKET_MS));
    expect(sent.map((s) => s.packet.sequence)).toEqual(
      Array.from({ length: 50 }, (_, i) => 100 + i),
    );
    expect(done).toEqual([]);
    clock.runUntil(1000);
    expect(done).toEqual([{ at: 1000, playedToEnd: true }]);
    expect(sender.playing).toBe(false);
    expect(clock.pending).toBe(0);
  });

  test("late timers do not drift: each packet goes out within the lateness of its due time", () => {
    let seed = 7;
    const lateness = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % 8;
    };
    const { clock, sender, sent, done, onDone } = harness({ lateness });
    sender.start(ramp(8000 * 10), onDone);
    clock.runUntil(20_000);
    expect(sent).toHaveLength(500);
    sent.forEach(({ at }, i) => {
      expect(at - i * PACKET_MS).toBeGreaterThanOrEqual(0);
      expect(at - i * PACKET_MS).toBeLessThan(8);
    });
    expect(done).toHaveLength(1);
    expect(done[0]?.playedToEnd).toBe(true);
    expect(done[0]?.at).toBeGreaterThanOrEqual(10_000);
    expect(done[0]?.at).toBeLessThan(10_008);
  });

  test("after a stall, the packets that fell due go out at once and the schedule holds", () => {
    let call = 0;
    const { clock, sender, sent, onDone } = harness({ lateness: () => (++call === 3 ? 95 : 0) });
    sender.start(ramp(160 * 10), onDone);
    clock.runUntil(300);
    expect(sent.map((s) => s.at)).toEqual([0, 20, 135, 135, 135, 135, 135, 140, 160, 180]);
    expect(sent.map((s) => s.packet.sequence)).toEqual([
      100, 101, 102, 103, 104, 105, 106, 107, 108, 109,
    ]);
  });

  test("stop cuts the sound off and reports it once", () => {
    const { clock, sender, sent, done, onDone } = harness();
    sender.start(ramp(8000), onDone);
    clock.runUntil(100);
    sender.stop();
    sender.stop();
    clock.runUntil(2000);
    expect(sent).toHaveLength(6);
    expect(done).toEqual([{ at: 100, playedToEnd: false }]);
    expect(sender.playing).toBe(false);
    expect(clock.pending).toBe(0);
  });

  test("a new sound cuts off the one playing, as a new spurt on the same count", () => {
    const { clock, sender, sent, done, onDone } = harness();
    sender.start(ramp(8000), onDone);
    clock.runUntil(50);
    sender.start(ramp(320), onDone);
    expect(done).toEqual([{ at: 50, playedToEnd: false }]);
    clock.runUntil(500);
    expect(sent.map((s) => [s.at, s.packet.marker, s.packet.sequence])).toEqual([
      [0, true, 100],
      [20, false, 101],
      [40, false, 102],
      [50, true, 103],
      [70, false, 104],
    ]);
    expect(done[1]).toEqual({ at: 90, playedToEnd: true });
  });

  test("a sound after a silence starts at the timestamp the silence has reached", () => {
    const { clock, sender, sent, onDone } = harness();
    sender.start(ramp(320), onDone);
    clock.runUntil(1000);
    sender.start(ramp(160), onDone);
    clock.runUntil(1100);
    expect(sent.map((s) => s.packet.timestamp)).toEqual([1000, 1160, 1000 + 8 * 1000]);
  });

  test("a send that stops the sender ends the sound there", () => {
    const clock = new ManualTimers();
    let sends = 0;
    const done: boolean[] = [];
    const sender: RtpSender = new RtpSender({
      payloadType: 0,
      ssrc: 1,
      clock,
      send: () => {
        if (++sends === 2) sender.stop();
      },
    });
    sender.start(ramp(8000), (playedToEnd) => done.push(playedToEnd));
    clock.runUntil(1000);
    expect(sends).toBe(2);
    expect(done).toEqual([false]);
  });

  test("a send that throws ends the sound with its error, instead of throwing from a timer", () => {
    const clock = new ManualTimers();
    const closed = new Error("socket closed");
    let sends = 0;
    const done: [boolean, unknown][] = [];
    const sender = new RtpSender({
      payloadType: 0,
      ssrc: 1,
      clock,
      send: () => {
        if (++sends === 3) throw closed;
      },
    });
    sender.start(ramp(8000), (playedToEnd, error) => done.push([playedToEnd, error]));
    clock.runUntil(1000);
    expect(sends).toBe(3);
    expect(done).toEqual([[false, closed]]);
    expect(sender.playing).toBe(false);
    expect(clock.pending).toBe(0);
  });

  test("a sound started when the last one ends follows on without a gap", () => {
    const { clock, sender, sent } = harness();
    sender.start(ramp(320), () => sender.start(ramp(320), () => {}));
    clock.runUntil(1000);
    expect(sent.map((s) => [s.at, s.packet.marker, s.packet.sequence, s.packet.timestamp])).toEqual(
      [
        [0, true, 100, 1000],
        [20, false, 101, 1160],
        [40, true, 102, 1320],
        [60, false, 103, 1480],
      ],
    );
  });

  test("an empty sound ends at once, though never within start", () => {
    const { clock, sender, sent, done, onDone } = harness();
    sender.start(new Int16Array(0), onDone);
    expect(done).toEqual([]);
    clock.runUntil(0);
    expect(done).toEqual([{ at: 0, playedToEnd: true }]);
    expect(sent).toEqual([]);
  });

  test("paces on the real clock by default", async () => {
    const sent: number[] = [];
    const sender = new RtpSender({ payloadType: 8, ssrc: 1, send: () => sent.push(1) });
    const playedToEnd = await new Promise<boolean>((resolve) => sender.start(ramp(480), resolve));
    expect(playedToEnd).toBe(true);
    expect(sent).toHaveLength(3);
  });
});
