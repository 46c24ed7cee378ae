import { createSocket, type Socket } from "node:dgram";
import * as sip from "sip";
import * as digest from "sip/digest";
import { audioTarget } from "../../edge/sdp.ts";
import { createSipStack } from "../../edge/sip-stack.ts";
import { encodeMulaw } from "../../src/media/g711.ts";
import { portBlock } from "./ports.ts";

/**
 * A small scripted SIP user agent on loopback, written on the same `sip` package: it plays
 * leads behind a trunk (answer, busy, no answer, hang up) and agents' phones (answer an
 * offerless INVITE with an offer). Each call has an RTP socket that sends a packet every
 * 20 ms to wherever the latest SDP points and counts what arrives, and from where.
 */

export type Behaviour =
  | {
      kind: "answer";
      afterMs?: number;
      hangUpAfterMs?: number;
      /** What the phone says once answered (8 kHz samples, sent as PCMU); silence after it. */
      speaks?: Int16Array;
    }
  | { kind: "busy"; afterMs?: number }
  | { kind: "reject"; status: number; afterMs?: number; reason?: string }
  | { kind: "ring" };

export interface PhoneCall {
  user: string;
  callId: string;
  from: string;
  rtpPort: number;
  /** Where its RTP goes now. */
  target: { address: string; port: number } | undefined;
  /** RTP packets received, by sender `address:port`. */
  received: Map<string, number>;
  /** The RTP packets received, with `performance.now()` of their arrival and their sender `address:port` (the first 10,000). */
  heard: { at: number; from: string; packet: Buffer }[];
  /** `performance.now()` of the 200 OK that answered the call. */
  answeredAt: number | null;
  /** Presses a key as RFC 4733 telephone events (payload type 101) on the call's media. */
  pressKey(digit: string): void;
  invites: number;
  /** The CSeq of the last INVITE handled in this dialog. */
  lastSeq: number;
  answered: boolean;
  /** `performance.now()` of the first INVITE, and of the ACK that carried an answer (a bridge). */
  invitedAt: number;
  answerAckedAt: number | null;
  ended: "bye-sent" | "bye-received" | "cancelled" | "rejected" | null;
  hangUp(): void;
}

type Message = sip.Message;

/** A bare RTP header (RFC 3550) for the phone's own packets. */
function rtpHeader(payloadType: number, sequence: number, timestamp: number, marker: boolean) {
  const header = Buffer.alloc(12);
  header[0] = 0x80;
  header[1] = (marker ? 0x80 : 0) | payloadType;
  header.writeUInt16BE(sequence & 0xffff, 2);
  header.writeUInt32BE(timestamp >>> 0, 4);
  header.writeUInt32BE(0x5eed, 8);
  return header;
}

function bindRtp(): Promise<{ socket: Socket; port: number }> {
  return new Promise((resolve, reject) => {
    const tryPort = (attempt: number) => {
      const [port] = portBlock(2);
      const socket = createSocket("udp4");
      socket.once("error", () => {
        socket.close();
        if (attempt > 50) reject(new Error("no RTP port"));
        else tryPort(attempt + 1);
      });
      socket.bind(port, "127.0.0.1", () => resolve({ socket, port }));
    };
    tryPort(0);
  });
}

const sdpOf = (port: number, version: number) =>
  [
    "v=0",
    `o=phone 1 ${version} IN IP4 127.0.0.1`,
    "s=phone",
    "c=IN IP4 127.0.0.1",
    "t=0 0",
    `m=audio ${port} RTP/AVP 0 101`,
    "a=rtpmap:0 PCMU/8000",
    "a=rtpmap:101 telephone-event/8000",
    "a=sendrecv",
    "",
  ].join("\r\n");

export class SipPhone {
  private stack!: sip.Stack;
  readonly calls: PhoneCall[] = [];
  private readonly byCallId = new Map<string, PhoneCall & { close(): void }>();
  readonly port: number;
  private contact = "";
  /** Behaviour by the called user (the lead's number); the default answers. */
  behaviours = new Map<string, Behaviour>();
  defaultBehaviour: Behaviour = { kind: "answer", afterMs: 200 };
  /** When set, a new INVITE must carry these digest credentials (401 until it does). */
  requireAuth: { realm: string; user: string; password: string } | undefined;
  challenges = 0;
  private readonly authContexts = new Map<string, Record<string, unknown>>();
  /** 2xx to INVITEs sent again (T1 doubling to T2) until their ACK comes, as RFC 3261 §13.3.1.4 says. */
  private readonly unacked = new Map<string, ReturnType<typeof setTimeout>>();

  private send2xx(rs: Message): void {
    const key = `${rs.headers["call-id"]} ${rs.headers.cseq.seq}`;
    this.stack.send(rs);
    let wait = 500;
    const again = () => {
      this.stack.send(rs);
      wait = Math.min(4_000, wait * 2);
      this.unacked.set(key, setTimeout(again, wait));
    };
    clearTimeout(this.unacked.get(key));
    this.unacked.set(key, setTimeout(again, wait));
    setTimeout(() => {
      clearTimeout(this.unacked.get(key));
      this.unacked.delete(key);
    }, 32_000);
  }
  /** Off, the phone answers but sends no RTP (a benchmark of signalling alone). */
  sendRtp = true;
  /** Off, the phone keeps no copy of the RTP it hears (a benchmark's hundreds of calls). */
  recordRtp = true;

  private constructor(port: number) {
    this.port = port;
  }

  /** Over TCP instead of UDP with `tcp`: its Contact then says `transport=tcp`. */
  static async start(port: number, options: { tcp?: boolean } = {}): Promise<SipPhone> {
    const phone = new SipPhone(port);
    phone.contact = `sip:phone@127.0.0.1:${port}${options.tcp ? ";transport=tcp" : ""}`;
    phone.stack = createSipStack(
      { address: "127.0.0.1", port, udp: !options.tcp, tcp: Boolean(options.tcp) },
      (rq) => void phone.onRequest(rq),
    );
    return phone;
  }

  stop(): void {
    for (const timer of this.unacked.values()) clearTimeout(timer);
    for (const call of this.byCallId.values()) call.close();
    this.stack.destroy();
  }

  live(): PhoneCall[] {
    return this.calls.filter((call) => call.answered && call.ended === null);
  }

  private async onRequest(rq: Message): Promise<void> {
    const callId = rq.headers["call-id"];
    const known = this.byCallId.get(callId);
    if (rq.method === "ACK") {
      const key = `${callId} ${rq.headers.cseq.seq}`;
      clearTimeout(this.unacked.get(key));
      this.unacked.delete(key);
      if (known && rq.content) {
        known.target = audioTarget(rq.content) ?? known.target;
        known.answerAckedAt ??= performance.now();
      }
      return;
    }
    if (rq.method === "BYE") {
      this.stack.send(sip.makeResponse(rq, 200, "OK"));
      if (known && known.ended === null) {
        known.ended = "bye-received";
        known.close();
      }
      return;
    }
    if (rq.method === "CANCEL") {
      this.stack.send(sip.makeResponse(rq, 200, "OK"));
      if (known && !known.answered && known.ended === null) {
        known.ended = "cancelled";
        known.close();
        const invite = (known as unknown as { invite: Message }).invite;
        this.stack.send(sip.makeResponse(invite, 487, "Request Terminated"));
      }
      return;
    }
    if (rq.method !== "INVITE") {
      this.stack.send(sip.makeResponse(rq, 200, "OK"));
      return;
    }
    if (known) {
      // A re-INVITE: the media moves to where its offer points.
      if (rq.headers.cseq.seq <= known.lastSeq) return; // a retransmission, answered already
      known.lastSeq = rq.headers.cseq.seq;
      known.invites += 1;
      if (rq.content) known.target = audioTarget(rq.content) ?? known.target;
      this.send2xx(
        sip.makeResponse(rq, 200, "OK", {
          headers: {
            contact: [{ uri: this.contact, params: {} }],
            "content-type": "application/sdp",
          },
          content: sdpOf(known.rtpPort, known.invites),
        }),
      );
      return;
    }
    if (this.requireAuth) {
      const { realm, ...creds } = this.requireAuth;
      const ctx = this.authContexts.get(callId) ?? { realm };
      this.authContexts.set(callId, ctx);
      if (!digest.authenticateRequest(ctx, rq, creds)) {
        this.challenges += 1;
        this.stack.send(digest.challenge(ctx, sip.makeResponse(rq, 401, "Unauthorized")));
        return;
      }
    }
    await this.newCall(rq);
  }

  private async newCall(rq: Message): Promise<void> {
    const user = sip.parseUri(rq.uri as string).user ?? "";
    const behaviour = this.behaviours.get(user) ?? this.defaultBehaviour;
    const { socket, port } = await bindRtp();
    const localTag = Math.random().toString(36).slice(2);
    rq.headers.to.params.tag = localTag;
    let timer: ReturnType<typeof setInterval> | undefined;
    const call: PhoneCall & { close(): void; invite: Message } = {
      user,
      callId: rq.headers["call-id"],
      from: sip.parseUri(rq.headers.from.uri).user ?? "",
      rtpPort: port,
      target: rq.content ? audioTarget(rq.content) : undefined,
      received: new Map(),
      heard: [],
      answeredAt: null,
      pressKey: (digit) => {
        const target = call.target;
        if (!target) return;
        const event = "0123456789*#".indexOf(digit);
        // Three packets of the event, then three of its end, all with the event's timestamp.
        for (let i = 0; i < 6; i++) {
          const end = i >= 3;
          const payload = Buffer.alloc(4);
          payload[0] = event;
          payload[1] = end ? 0x8a : 0x0a;
          payload.writeUInt16BE((i + 1) * 160, 2);
          const packet = Buffer.concat([rtpHeader(101, sequence++, 160_000, i === 0), payload]);
          socket.send(packet, target.port, target.address);
        }
      },
      invites: 1,
      lastSeq: rq.headers.cseq.seq,
      answered: false,
      invitedAt: performance.now(),
      answerAckedAt: null,
      ended: null,
      invite: rq,
      hangUp: () => {
        if (!call.answered || call.ended !== null) return;
        call.ended = "bye-sent";
        call.close();
        const contact = rq.headers.contact;
        const target = Array.isArray(contact) && contact[0] ? contact[0].uri : rq.headers.from.uri;
        this.stack.send({
          method: "BYE",
          uri: target,
          headers: {
            to: rq.headers.from,
            from: rq.headers.to,
            "call-id": rq.headers["call-id"],
            cseq: { method: "BYE", seq: 1 },
            "max-forwards": 70,
          },
        });
      },
      close: () => {
        clearInterval(timer);
        try {
          socket.close();
        } catch {}
      },
    };
    socket.on("message", (data, from) => {
      const key = `${from.address}:${from.port}`;
      call.received.set(key, (call.received.get(key) ?? 0) + 1);
      if (call.heard.length < 10_000)
        call.heard.push({ at: performance.now(), from: key, packet: data });
    });
    let sequence = 1;
    this.calls.push(call);
    this.byCallId.set(call.callId, call);
    this.stack.send(sip.makeResponse(rq, 100, "Trying"));
    if (behaviour.kind !== "busy" && behaviour.kind !== "reject")
      this.stack.send(sip.makeResponse(rq, 180, "Ringing"));
    const after = (ms: number | undefined, run: () => void) => setTimeout(run, ms ?? 0);
    switch (behaviour.kind) {
      case "ring":
        return;
      case "busy":
      case "reject":
        after(behaviour.afterMs, () => {
          call.ended = "rejected";
          call.close();
          const status = behaviour.kind === "busy" ? 486 : behaviour.status;
          const headers =
            behaviour.kind === "reject" && behaviour.reason ? { reason: behaviour.reason } : {};
          this.stack.send(sip.makeResponse(rq, status, "Refused", { headers }));
        });
        return;
      case "answer":
        after(behaviour.afterMs, () => {
          if (call.ended !== null) return;
          call.answered = true;
          call.answeredAt = performance.now();
          this.send2xx(
            sip.makeResponse(rq, 200, "OK", {
              headers: {
                contact: [{ uri: this.contact, params: {} }],
                "content-type": "application/sdp",
              },
              content: sdpOf(port, 1),
            }),
          );
          const silence = Buffer.alloc(172);
          const speech = behaviour.speaks ? encodeMulaw(behaviour.speaks) : undefined;
          let frame = 0;
          if (this.sendRtp)
            timer = setInterval(() => {
              if (!call.target || call.target.port <= 0) return;
              // A greeting goes out as PCMU, then µ-law silence; without one, zeros that are no
              // RTP at all.
              let packet = silence;
              if (speech) {
                const payload = Buffer.alloc(160, 0xff);
                payload.set(speech.subarray(frame * 160, frame * 160 + 160));
                packet = Buffer.concat([
                  rtpHeader(0, sequence++, frame * 160, frame === 0),
                  payload,
                ]);
              }
              frame++;
              socket.send(packet, call.target.port, call.target.address);
            }, 20);
          if (behaviour.hangUpAfterMs !== undefined) after(behaviour.hangUpAfterMs, call.hangUp);
        });
        return;
    }
  }
}
