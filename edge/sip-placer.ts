import { CoalescingClock } from "./media/coalescing-clock.ts";
import { type MediaCounters, newMediaCounters, RtpLeadMedia } from "./media/lead-media.ts";
import type { AgentLeg, LeadEvents, LeadLeg, Placer } from "./placer.ts";
import type { MediaSink, RtpPorts } from "./rtp-ports.ts";
import { mediaAnswerOf, withOrigin } from "./sdp.ts";
import type { Leg, SipAdapter } from "./sip-adapter.ts";

/** How long an agent's phone may take to answer before the bridge fails. */
const AGENT_ANSWER_MS = 20_000;

interface SipLead extends LeadLeg {
  leg: Leg;
  sink: MediaSink;
  /** Shown to the agent's phone as the caller. */
  phone: string;
}

/** Real calls: the lead through the trunk, the agent's phone directly, RFC 3725 between. */
export class SipPlacer implements Placer {
  constructor(
    private readonly adapter: SipAdapter,
    private readonly ports: RtpPorts,
    /** What the leads' media dropped, across the node's calls. */
    readonly mediaCounters: MediaCounters = newMediaCounters(),
  ) {}

  /** One clock paces every call's packets. */
  private readonly mediaClock = new CoalescingClock();

  async callLead(job: { phone: string; callerId: string }, events: LeadEvents): Promise<LeadLeg> {
    const sink = await this.ports.open();
    const media = new RtpLeadMedia(sink.socket, this.mediaCounters, this.mediaClock);
    const leg = this.adapter.callLead(
      { phone: job.phone, callerId: job.callerId, rtpPort: sink.port },
      {
        ...events,
        // The answer names where the lead's media goes: the node hears and plays from then on.
        answered: () => {
          media.start(mediaAnswerOf(leg.remoteSdp));
          events.answered();
        },
        keyPressed: (digit) => media.keyPressed(digit),
      },
    );
    const lead: SipLead = {
      leg,
      sink,
      media,
      phone: job.phone,
      cancel: () => leg.cancel(),
      abandon: () => leg.abandon(),
      hangUp: () => leg.hangUp(),
    };
    return lead;
  }

  /**
   * RFC 3725 flow I: an INVITE without SDP to the agent's phone; its 2xx carries an offer,
   * which goes to the lead in a re-INVITE; the lead's answer goes back in the agent's ACK.
   * From then on media flows between the two phones, not through the node.
   */
  bridge(
    lead: LeadLeg,
    agentUri: string | null,
    onBye: () => void,
    signal: AbortSignal,
  ): Promise<AgentLeg> {
    const { leg: leadLeg, sink, phone } = lead as SipLead;
    if (!agentUri) return Promise.reject(new Error("the agent has no phone_uri to bridge to"));
    return new Promise<AgentLeg>((resolve, reject) => {
      let connected = false;
      let settled = false;
      const fail = (why: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        agent.hangUp();
        reject(new Error(why));
      };
      const agent = this.adapter.callAgent(
        { agentUri, leadPhone: phone },
        {
          trying: () => {},
          progress: () => {},
          failed: (status) => fail(`the agent's phone answered ${status}`),
          bye: () => {
            if (connected) onBye();
            else fail("the agent's phone hung up during the bridge");
          },
          answered: () => {
            clearTimeout(timer);
            const offer = agent.remoteSdp;
            if (!offer) {
              agent.answerWith("");
              return fail("the agent's phone answered without an offer");
            }
            leadLeg
              .reinvite(withOrigin(offer, leadLeg.bumpOrigin()))
              .then((answer) => {
                agent.answerWith(answer);
                if (settled) return;
                settled = true;
                connected = true;
                lead.media?.close();
                sink.close();
                resolve({ hangUp: () => agent.hangUp() });
              })
              .catch((error: Error) => {
                agent.answerWith(offer);
                fail(error.message);
              });
          },
        },
      );
      const timer = setTimeout(() => fail("the agent's phone did not answer"), AGENT_ANSWER_MS);
      signal.addEventListener("abort", () => fail("the lead hung up"), { once: true });
    });
  }

  numberUri(phone: string): string {
    return this.adapter.trunkUri(phone);
  }

  release(lead: LeadLeg): void {
    lead.media?.close();
    (lead as SipLead).sink.close();
  }
}
