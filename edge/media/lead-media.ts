import type { Socket } from "node:dgram";
import { decodeAlaw, decodeMulaw } from "../../src/media/g711.ts";
import { eventDigit, parseRtp, parseTelephoneEvent } from "./rtp.ts";
import {
  type G711PayloadType,
  type PacingClock,
  RtpSender,
  SAMPLES_PER_PACKET,
} from "./rtp-stream.ts";

/** The lead's audio as the node hears it, and the sounds the node plays to the lead. */
export interface LeadMedia {
  /** Starts reading and sending once the lead's answer says where its media goes. */
  start(answer: MediaAnswer | undefined): void;
  /** Hears 20 ms frames of 8 kHz audio from the lead (null: stop). */
  onFrame(listener: ((frame: Int16Array) => void) | null): void;
  /** Hears the keys the lead presses (RFC 4733, or SIP INFO through `keyPressed`). */
  onDigit(listener: ((digit: string) => void) | null): void;
  /** A key pressed as the signalling reported it (SIP INFO). */
  keyPressed(digit: string): void;
  /** Plays 8 kHz audio to the lead; true when it played to its end, false when cut off. */
  play(samples: Int16Array): Promise<boolean>;
  stopPlaying(): void;
  close(): void;
}

/** Where and how the lead wants its audio, from its SDP answer. */
export interface MediaAnswer {
  address: string;
  port: number;
  payloadType: G711PayloadType;
  /** The payload type of telephone events, when the lead offered them. */
  telephoneEvent: number | null;
}

/** What the node's media dropped, across its calls. */
export interface MediaCounters {
  packets: number;
  malformed: number;
  unknownPayload: number;
}

export const newMediaCounters = (): MediaCounters => ({
  packets: 0,
  malformed: 0,
  unknownPayload: 0,
});

/**
 * A lead's media over RTP on the node's own port, until a bridge takes it elsewhere: G.711
 * in, decoded into 20 ms frames; telephone events in, one digit per event; G.711 out, in
 * 20 ms packets. A packet that is not RTP, or of a payload type the answer did not name, is
 * dropped and counted.
 */
export class RtpLeadMedia implements LeadMedia {
  private answer: MediaAnswer | undefined;
  private sender: RtpSender | undefined;
  private frameListener: ((frame: Int16Array) => void) | null = null;
  private digitListener: ((digit: string) => void) | null = null;
  /** Samples waiting to fill a frame, for packets of another length than 20 ms. */
  private pending = new Int16Array(SAMPLES_PER_PACKET);
  private pendingLength = 0;
  /** The RTP timestamp of the last telephone event heard: its repeats are the same key. */
  private lastEvent: number | undefined;

  constructor(
    private readonly socket: Socket,
    private readonly counters: MediaCounters,
    /** The node's one clock for every call's packets. */
    private readonly clock: PacingClock,
  ) {
    socket.on("message", (packet) => this.receive(packet));
  }

  start(answer: MediaAnswer | undefined): void {
    if (!answer || this.answer) return;
    this.answer = answer;
    const ssrc = crypto.getRandomValues(new Uint32Array(1))[0] as number;
    this.sender = new RtpSender({
      payloadType: answer.payloadType,
      ssrc,
      clock: this.clock,
      send: (packet) => {
        try {
          this.socket.send(packet, answer.port, answer.address);
        } catch {
          // The socket closed under a playback cut short: nothing left to send to.
        }
      },
    });
  }

  onFrame(listener: ((frame: Int16Array) => void) | null): void {
    this.frameListener = listener;
    this.pendingLength = 0;
  }

  onDigit(listener: ((digit: string) => void) | null): void {
    this.digitListener = listener;
  }

  keyPressed(digit: string): void {
    this.digitListener?.(digit);
  }

  play(samples: Int16Array): Promise<boolean> {
    const sender = this.sender;
    if (!sender) return Promise.reject(new Error("the lead's answer named no media to send to"));
    return new Promise((resolve) => sender.start(samples, resolve));
  }

  stopPlaying(): void {
    this.sender?.stop();
  }

  close(): void {
    this.stopPlaying();
    this.frameListener = null;
    this.digitListener = null;
  }

  private receive(bytes: Buffer): void {
    this.counters.packets++;
    // The header's version and payload type first: most packets (while nobody listens, or a
    // message plays) go no further, and cost no parse.
    if (bytes.length < 12 || (bytes[0] as number) >> 6 !== 2) {
      this.counters.malformed++;
      return;
    }
    const answer = this.answer;
    if (!answer) return;
    const payloadType = (bytes[1] as number) & 0x7f;
    if (payloadType !== answer.telephoneEvent && payloadType !== answer.payloadType) {
      this.counters.unknownPayload++;
      return;
    }
    if (payloadType === answer.payloadType && !this.frameListener) return;
    const packet = parseRtp(bytes);
    if (!packet) {
      this.counters.malformed++;
      return;
    }
    if (packet.payloadType === answer.telephoneEvent) {
      const event = parseTelephoneEvent(packet.payload);
      if (!event) {
        this.counters.malformed++;
        return;
      }
      if (packet.timestamp === this.lastEvent) return;
      this.lastEvent = packet.timestamp;
      const digit = eventDigit(event.event);
      if (digit) this.digitListener?.(digit);
      return;
    }
    const samples =
      answer.payloadType === 0 ? decodeMulaw(packet.payload) : decodeAlaw(packet.payload);
    this.framed(samples);
  }

  /** Cuts the samples into 20 ms frames for the listener. */
  private framed(samples: Int16Array): void {
    let offset = 0;
    while (offset < samples.length) {
      const take = Math.min(SAMPLES_PER_PACKET - this.pendingLength, samples.length - offset);
      this.pending.set(samples.subarray(offset, offset + take), this.pendingLength);
      this.pendingLength += take;
      offset += take;
      if (this.pendingLength === SAMPLES_PER_PACKET) {
        const frame = this.pending;
        this.pending = new Int16Array(SAMPLES_PER_PACKET);
        this.pendingLength = 0;
        this.frameListener?.(frame);
      }
    }
  }
}
