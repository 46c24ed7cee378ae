import * as sip from "sip";
import * as digest from "sip/digest";
import type { TrunkAddress } from "./config.ts";
import { sinkOffer, withOrigin } from "./sdp.ts";
import { createSipStack } from "./sip-stack.ts";

/**
 * SIP for the node on top of the `sip` package, which brings transactions (retransmission,
 * timers, the ACK of a failed INVITE). Dialogs are built here: the ACK of a 2xx, BYE and
 * re-INVITE inside the dialog with its route set, CANCEL with the INVITE's Via.
 */

type Message = sip.Message;

/** What one leg tells its owner. */
export interface LegEvents {
  trying(): void;
  progress(): void;
  answered(): void;
  failed(status: number, reason: string | undefined): void;
  bye(): void;
  /** A key the peer pressed, sent as SIP INFO (for phones without RFC 4733 events). */
  keyPressed?(digit: string): void;
}

/** The key in an INFO body: `application/dtmf-relay` (`Signal=9`) or `application/dtmf` (`9`). */
export function infoDigit(contentType: string | undefined, body: string): string | null {
  const type = contentType?.split(";")[0]?.trim().toLowerCase();
  const value =
    type === "application/dtmf-relay"
      ? /^\s*signal\s*=\s*(\S)/im.exec(body)?.[1]
      : type === "application/dtmf"
        ? body.trim()[0]
        : undefined;
  return value && /^[0-9*#A-D]$/i.test(value) ? value.toUpperCase() : null;
}

interface Dialog {
  callId: string;
  localTag: string;
  remoteTag: string;
  localUri: string;
  remoteUri: string;
  remoteTarget: string;
  routeSet: sip.NameAddr[];
  cseq: number;
}

const tag = () => Math.random().toString(36).slice(2, 12);

function firstContact(m: Message): string | undefined {
  const contact = m.headers.contact;
  return Array.isArray(contact) ? contact[0]?.uri : undefined;
}

function header(m: Message, name: string): string | undefined {
  const value = m.headers[name];
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return value.join(",");
  return undefined;
}

export interface SipAdapterOptions {
  address: string;
  port: number;
  trunk: TrunkAddress;
  credentials: { user: string; password: string } | null;
  log: (line: string) => void;
}

/** One leg: an INVITE and, once answered, its dialog. */
export class Leg {
  dialog: Dialog | null = null;
  /** The INVITE as last sent (after a digest challenge, the signed one), for CANCEL. */
  private invite: Message;
  private finished = false;
  private authTried = false;
  private answeredOnce = false;
  /**
   * The body of the ACK of the 2xx: empty for an INVITE that made the offer; for an offerless
   * INVITE (the agent's leg) the answer, which comes later from the other leg.
   */
  private ackBody: string | undefined = "";
  /** A 2xx came while the ACK's answer was not known yet. */
  private pendingAnswer = false;
  private byeSent = false;
  /** What this leg's peer last got from the node: its answer to a re-INVITE of the peer. */
  localSdp: string | undefined;
  remoteSdp: string | undefined;
  /** The node's origin line for this dialog: the SDP it presents keeps it, version rising. */
  readonly origin = { sessionId: String(Date.now()), version: 1 };

  constructor(
    private readonly adapter: SipAdapter,
    invite: Message,
    private readonly events: LegEvents,
  ) {
    this.invite = invite;
    this.localSdp = invite.content || undefined;
  }

  get callId(): string {
    return this.invite.headers["call-id"];
  }

  /** Where the peer reaches the node in this dialog (over TCP for a TCP trunk's leads). */
  get contact(): string {
    const contact = this.invite.headers.contact;
    return (Array.isArray(contact) && contact[0]?.uri) || this.adapter.contactUri;
  }

  send(): void {
    this.adapter.register(this);
    // The package adds its own Via; a copy keeps this one clean for a signed resend.
    const request = structuredClone(this.invite);
    this.invite = request;
    this.adapter.stack.send(request, (rs) => this.onResponse(rs));
  }

  private onResponse(rs: Message): void {
    const status = rs.status ?? 0;
    if (status < 200) {
      if (this.finished) return;
      if (status === 100) this.events.trying();
      else this.events.progress();
      return;
    }
    if (status < 300) {
      // Every 2xx (retransmissions too) gets its ACK; only the first one answers.
      if (!this.dialog) {
        this.dialog = {
          callId: this.callId,
          localTag: this.invite.headers.from.params.tag as string,
          remoteTag: (rs.headers.to.params.tag as string) ?? "",
          localUri: this.invite.headers.from.uri,
          remoteUri: rs.headers.to.uri,
          remoteTarget: firstContact(rs) ?? (this.invite.uri as string),
          routeSet: [
            ...((rs.headers["record-route"] as sip.NameAddr[] | undefined) ?? []),
          ].reverse(),
          cseq: this.invite.headers.cseq.seq,
        };
        this.remoteSdp = rs.content || undefined;
      }
      if (this.finished) {
        // Answered after the node gave up (a CANCEL crossed it): ACK it and hang up.
        this.ack();
        this.bye();
        return;
      }
      if (this.ackBody === undefined) this.pendingAnswer = true;
      else this.ack(this.ackBody);
      if (!this.answeredOnce) {
        this.answeredOnce = true;
        this.events.answered();
      }
      return;
    }
    if ((status === 401 || status === 407) && this.adapter.credentials && !this.authTried) {
      this.authTried = true;
      const signed = structuredClone(this.invite);
      signed.headers.via = [];
      signed.headers.cseq = { method: "INVITE", seq: signed.headers.cseq.seq + 1 };
      digest.signRequest({}, signed, rs, this.adapter.credentials);
      this.invite = signed;
      this.adapter.stack.send(signed, (next) => this.onResponse(next));
      return;
    }
    if (this.finished) return;
    this.finished = true;
    this.adapter.forget(this);
    // The package answers for the network when nothing did: its own 408 (timer B) or 503/404
    // (the address refused or did not resolve). Those are no verdict of the callee.
    const local = rs.headers.via === this.invite.headers.via;
    if (local)
      this.events.failed(
        status,
        status === 408 ? "Q.850;cause=102" : 'Q.850;cause=38;text="no route to the trunk"',
      );
    else this.events.failed(status, header(rs, "reason"));
  }

  /** For an offerless INVITE: hold the 2xx's ACK until the answer is known. */
  holdAck(): void {
    this.ackBody = undefined;
  }

  /** Sends the held ACK with the answer (and every later ACK of a retransmitted 2xx). */
  answerWith(sdp: string): void {
    this.ackBody = sdp;
    this.localSdp = sdp;
    if (this.pendingAnswer) this.ack(sdp);
  }

  private inDialog(method: string, seq: number, content?: string): Message {
    const d = this.dialog as Dialog;
    return {
      method,
      uri: d.remoteTarget,
      headers: {
        to: { uri: d.remoteUri, params: { tag: d.remoteTag } },
        from: { uri: d.localUri, params: { tag: d.localTag } },
        "call-id": d.callId,
        cseq: { method, seq },
        "max-forwards": 70,
        ...(d.routeSet.length > 0 ? { route: structuredClone(d.routeSet) } : {}),
        ...(content
          ? {
              "content-type": "application/sdp",
              contact: [{ uri: this.contact, params: {} }],
            }
          : {}),
      },
      ...(content ? { content } : {}),
    };
  }

  private ack(content?: string): void {
    if (!this.dialog) return;
    const ack = this.inDialog("ACK", this.dialog.cseq, content || undefined);
    ack.headers.via = [];
    this.adapter.stack.send(ack);
  }

  /** CANCEL the unanswered INVITE: same Request-URI, Call-ID, From, To, CSeq number and Via. */
  cancel(): void {
    if (this.dialog || this.finished) return;
    const via = this.invite.headers.via?.[0];
    if (!via) return;
    this.adapter.stack.send({
      method: "CANCEL",
      uri: this.invite.uri as string,
      headers: {
        via: [structuredClone(via)],
        to: this.invite.headers.to,
        from: this.invite.headers.from,
        "call-id": this.invite.headers["call-id"],
        cseq: { method: "CANCEL", seq: this.invite.headers.cseq.seq },
        "max-forwards": 70,
      },
    });
  }

  /** Stops caring about an INVITE that never got a response; a late 2xx is ACKed and hung up. */
  abandon(): void {
    this.finished = true;
  }

  /** Ends the leg: BYE once answered, CANCEL before. */
  hangUp(): void {
    if (this.dialog) this.bye();
    else this.cancel();
    this.finished = true;
  }

  private bye(): void {
    if (!this.dialog || this.byeSent) return;
    this.byeSent = true;
    this.dialog.cseq += 1;
    this.adapter.stack.send(this.inDialog("BYE", this.dialog.cseq), () =>
      this.adapter.forget(this),
    );
    this.finished = true;
  }

  /** A re-INVITE carrying `offer`; resolves with the answer of its 2xx. */
  reinvite(offer: string): Promise<string> {
    return new Promise((resolve, reject) => {
      if (!this.dialog) return reject(new Error("no dialog"));
      this.dialog.cseq += 1;
      const seq = this.dialog.cseq;
      const request = this.inDialog("INVITE", seq, offer);
      this.localSdp = offer;
      let done = false;
      this.adapter.stack.send(request, (rs) => {
        const status = rs.status ?? 0;
        if (status < 200) return;
        if (status < 300) {
          const ack = this.inDialog("ACK", seq);
          ack.headers.via = [];
          this.adapter.stack.send(ack);
          if (done) return;
          done = true;
          if (rs.content) resolve(rs.content);
          else reject(new Error("re-INVITE answered without SDP"));
          return;
        }
        if (done) return;
        done = true;
        reject(new Error(`re-INVITE refused: ${status}`));
      });
    });
  }

  /** The peer's BYE (or a re-INVITE of its own) inside this leg's dialog. */
  onRequest(rq: Message): void {
    if (rq.method === "BYE") {
      this.adapter.stack.send(sip.makeResponse(rq, 200, "OK"));
      this.adapter.forget(this);
      if (this.finished) return;
      this.finished = true;
      this.events.bye();
      return;
    }
    if (rq.method === "INVITE") {
      // A refresh from the peer: the node keeps the media as it is (RFC 3725 §6 leaves
      // changes to the controller), so it answers with what it last offered this leg.
      this.adapter.stack.send(
        sip.makeResponse(rq, 200, "OK", {
          headers: {
            contact: [{ uri: this.contact, params: {} }],
            "content-type": "application/sdp",
          },
          content: this.localSdp ? withOrigin(this.localSdp, this.bumpOrigin()) : "",
        }),
      );
      return;
    }
    if (rq.method === "INFO") {
      const digit = infoDigit(header(rq, "content-type"), rq.content ?? "");
      if (digit) this.events.keyPressed?.(digit);
    }
    if (rq.method !== "ACK") this.adapter.stack.send(sip.makeResponse(rq, 200, "OK"));
  }

  bumpOrigin(): { sessionId: string; version: number } {
    this.origin.version += 1;
    return this.origin;
  }
}

/** The node's SIP endpoint: one UDP (or TCP) socket, legs by Call-ID. */
export class SipAdapter {
  stack!: sip.Stack;
  private readonly legs = new Map<string, Leg>();
  readonly contactUri: string;

  constructor(private readonly options: SipAdapterOptions) {
    this.contactUri = `sip:edge@${options.address}:${options.port}`;
  }

  get credentials() {
    return this.options.credentials;
  }

  get legCount(): number {
    return this.legs.size;
  }

  start(): void {
    this.stack = createSipStack(
      {
        address: this.options.address,
        port: this.options.port,
        udp: true,
        tcp: this.options.trunk.transport === "tcp",
        logger: { error: (e) => this.options.log(`sip: ${String(e)}`) },
      },
      (rq) => this.onRequest(rq),
    );
  }

  stop(): void {
    this.stack?.destroy();
  }

  register(leg: Leg): void {
    this.legs.set(leg.callId, leg);
  }

  forget(leg: Leg): void {
    if (this.legs.get(leg.callId) === leg) this.legs.delete(leg.callId);
  }

  private onRequest(rq: Message): void {
    const leg = this.legs.get(rq.headers["call-id"]);
    if (leg && rq.headers.to.params.tag) {
      leg.onRequest(rq);
      return;
    }
    if (rq.method === "ACK") return;
    if (rq.method === "OPTIONS") {
      this.stack.send(sip.makeResponse(rq, 200, "OK"));
      return;
    }
    if (rq.method === "INVITE" && !rq.headers.to.params.tag) {
      this.stack.send(sip.makeResponse(rq, 403, "Outbound Only"));
      return;
    }
    this.stack.send(sip.makeResponse(rq, 481, "Call/Transaction Does Not Exist"));
  }

  trunkUri(user: string): string {
    const { host, port, transport } = this.options.trunk;
    return `sip:${user}@${host}:${port}${transport === "tcp" ? ";transport=tcp" : ""}`;
  }

  private newInvite(o: {
    uri: string;
    toUri: string;
    fromUser: string;
    content?: string;
    tcp?: boolean;
  }): Message {
    const { address, port } = this.options;
    const fromUri = `sip:${o.fromUser}@${address}:${port}`;
    return {
      method: "INVITE",
      uri: o.uri,
      headers: {
        to: { uri: o.toUri, params: {} },
        from: { uri: fromUri, params: { tag: tag() } },
        "call-id": `${crypto.randomUUID()}@${address}`,
        cseq: { method: "INVITE", seq: 1 },
        contact: [{ uri: `${this.contactUri}${o.tcp ? ";transport=tcp" : ""}`, params: {} }],
        "max-forwards": 70,
        "p-asserted-identity": `<${fromUri}>`,
        allow: "INVITE, ACK, CANCEL, BYE, OPTIONS, INFO",
        ...(o.content ? { "content-type": "application/sdp" } : {}),
      },
      ...(o.content ? { content: o.content } : {}),
    };
  }

  /** INVITEs a lead's number through the trunk, as `callerId`, offering the node's sink. */
  callLead(o: { phone: string; callerId: string; rtpPort: number }, events: LegEvents): Leg {
    const sessionId = String(Date.now());
    const content = sinkOffer({
      address: this.options.address,
      port: o.rtpPort,
      sessionId,
      version: 1,
    });
    const uri = this.trunkUri(o.phone);
    const leg = new Leg(
      this,
      this.newInvite({
        uri,
        toUri: uri.split(";")[0] as string,
        fromUser: o.callerId || "anonymous",
        content,
        tcp: this.options.trunk.transport === "tcp",
      }),
      events,
    );
    leg.origin.sessionId = sessionId;
    leg.send();
    return leg;
  }

  /** INVITEs an agent's phone without an offer (RFC 3725 flow I): its 2xx will carry one. */
  callAgent(o: { agentUri: string; leadPhone: string }, events: LegEvents): Leg {
    const leg = new Leg(
      this,
      this.newInvite({ uri: o.agentUri, toUri: o.agentUri, fromUser: o.leadPhone || "anonymous" }),
      events,
    );
    leg.holdAck();
    leg.send();
    return leg;
  }
}
