import { encodeAlaw, encodeMulaw } from "../../src/media/g711.ts";
import { buildRtp } from "./rtp.ts";

/** The static payload types of G.711 (RFC 3551): 0 PCMU (µ-law), 8 PCMA (A-law). */
export type G711PayloadType = 0 | 8;

/** What pacing needs of time: a monotonic clock in milliseconds and one-shot timers. */
export interface PacingClock {
  now(): number;
  setTimeout(run: () => void, ms: number): unknown;
  clearTimeout(timer: unknown): void;
}

const systemClock: PacingClock = {
  now: () => performance.now(),
  setTimeout: (run, ms) => setTimeout(run, ms),
  clearTimeout: (timer) => clearTimeout(timer as ReturnType<typeof setTimeout>),
};

const SAMPLE_RATE = 8000;
export const PACKET_MS = 20;
export const SAMPLES_PER_PACKET = (SAMPLE_RATE / 1000) * PACKET_MS;

export interface RtpSenderOptions {
  payloadType: G711PayloadType;
  ssrc: number;
  send: (packet: Uint8Array) => void;
  clock?: PacingClock;
  /** The first sequence number and timestamp; random by default, as RFC 3550 §5.1 asks. */
  sequence?: number;
  timestamp?: number;
}

function randomUint32(): number {
  return crypto.getRandomValues(new Uint32Array(1))[0] as number;
}

/** How a sound ended: played to the end, or cut off (with the error when a send threw). */
export type PlaybackDone = (playedToEnd: boolean, error?: unknown) => void;

interface Playback {
  samples: Int16Array;
  count: number;
  sent: number;
  startedAt: number;
  timer: unknown;
  onDone: PlaybackDone;
}

/**
 * One outgoing G.711 stream of 8 kHz audio in 20 ms packets. Each sound is a talk spurt: its
 * first packet carries the marker, and sequence numbers and timestamps run on across spurts.
 */
export class RtpSender {
  private readonly encode: (samples: Int16Array) => Uint8Array;
  private readonly clock: PacingClock;
  private sequence: number;
  private timestamp: number;
  /** When the last packet sent was due, so that a silence advances the timestamp by its length. */
  private lastPacketDueAt: number | undefined;
  private playback: Playback | undefined;

  constructor(private readonly options: RtpSenderOptions) {
    this.encode = options.payloadType === 0 ? encodeMulaw : encodeAlaw;
    this.clock = options.clock ?? systemClock;
    this.sequence = (options.sequence ?? randomUint32()) & 0xffff;
    this.timestamp = (options.timestamp ?? randomUint32()) >>> 0;
  }

  get playing(): boolean {
    return this.playback !== undefined;
  }

  /**
   * The packets of a talk spurt, at once, for a caller that paces them itself; the last one
   * is padded with silence. They take up sequence numbers and timestamps as if sent.
   */
  packets(samples: Int16Array): Uint8Array[] {
    const count = packetCount(samples);
    return Array.from({ length: count }, (_, index) => this.packet(samples, index));
  }

  /**
   * Sends a talk spurt in real time, one packet every 20 ms, then calls `onDone` with true
   * once the last packet's audio has had its time, or with false when it is cut off by
   * `stop()`, by another `start()` or by a send that throws. Packets and `onDone` go out
   * from timers, never from within `start()`. Each packet is due at a fixed offset from the
   * first, so late timers do not add up to drift: a late tick sends every packet that is due.
   */
  start(samples: Int16Array, onDone: PlaybackDone): void {
    this.stop();
    const now = this.clock.now();
    if (this.lastPacketDueAt !== undefined) {
      const silentSamples = Math.round((now - this.lastPacketDueAt) * (SAMPLE_RATE / 1000));
      this.timestamp = (this.timestamp + Math.max(0, silentSamples - SAMPLES_PER_PACKET)) >>> 0;
    }
    const playback: Playback = {
      samples,
      count: packetCount(samples),
      sent: 0,
      startedAt: now,
      timer: undefined,
      onDone,
    };
    this.playback = playback;
    playback.timer = this.clock.setTimeout(() => this.tick(playback), 0);
  }

  /** Cuts the current sound off; nothing happens when none is playing. */
  stop(): void {
    if (this.playback) this.end(this.playback, false);
  }

  private end(playback: Playback, playedToEnd: boolean, error?: unknown): void {
    this.clock.clearTimeout(playback.timer);
    this.playback = undefined;
    playback.onDone(playedToEnd, error);
  }

  private tick(playback: Playback): void {
    const now = this.clock.now();
    const due = Math.min(playback.count, Math.floor((now - playback.startedAt) / PACKET_MS) + 1);
    while (playback.sent < due) {
      const packet = this.packet(playback.samples, playback.sent);
      this.lastPacketDueAt = playback.startedAt + playback.sent * PACKET_MS;
      playback.sent++;
      try {
        this.options.send(packet);
      } catch (error) {
        // A closed socket ends the sound instead of throwing out of a timer.
        if (this.playback === playback) this.end(playback, false, error);
        return;
      }
      // A send that stops this sender or starts another sound ends this playback.
      if (this.playback !== playback) return;
    }
    // The next packet's deadline or, after the last, the end of its audio.
    const next = playback.startedAt + playback.sent * PACKET_MS;
    if (playback.sent === playback.count && now >= next) {
      this.end(playback, true);
      return;
    }
    playback.timer = this.clock.setTimeout(() => this.tick(playback), Math.max(0, next - now));
  }

  private encoded(samples: Int16Array): Uint8Array {
    return encodedOnce(samples, this.options.payloadType, this.encode);
  }

  private packet(samples: Int16Array, index: number): Uint8Array {
    const encoded = this.encoded(samples);
    const packet = buildRtp({
      payloadType: this.options.payloadType,
      marker: index === 0,
      sequence: this.sequence,
      timestamp: this.timestamp,
      ssrc: this.options.ssrc,
      payload: encoded.subarray(index * SAMPLES_PER_PACKET, (index + 1) * SAMPLES_PER_PACKET),
    });
    this.sequence = (this.sequence + 1) & 0xffff;
    this.timestamp = (this.timestamp + SAMPLES_PER_PACKET) >>> 0;
    return packet;
  }
}

/**
 * A sound encoded once per payload type, padded with silence to whole packets: the same
 * message plays on many calls at once.
 */
const encodings = new WeakMap<Int16Array, Map<G711PayloadType, Uint8Array>>();

function encodedOnce(
  samples: Int16Array,
  payloadType: G711PayloadType,
  encode: (samples: Int16Array) => Uint8Array,
): Uint8Array {
  let byType = encodings.get(samples);
  if (!byType) {
    byType = new Map();
    encodings.set(samples, byType);
  }
  let encoded = byType.get(payloadType);
  if (!encoded) {
    const padded = new Int16Array(packetCount(samples) * SAMPLES_PER_PACKET);
    padded.set(samples);
    encoded = encode(padded);
    byType.set(payloadType, encoded);
  }
  return encoded;
}

function packetCount(samples: Int16Array): number {
  return Math.ceil(samples.length / SAMPLES_PER_PACKET);
}
