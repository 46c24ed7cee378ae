import type { LeadMedia } from "./media/lead-media.ts";
import type { LegEvents } from "./sip-adapter.ts";

/** The lead's leg as the node's calls see it, over SIP or in the dry run. */
export interface LeadLeg {
  cancel(): void;
  abandon(): void;
  hangUp(): void;
  /** The lead's audio until the bridge; null where the node has none (the dry run). */
  media: LeadMedia | null;
}

/** The agent's leg, once the bridge is up or on its way. */
export interface AgentLeg {
  hangUp(): void;
}

export interface LeadEvents extends LegEvents {
  machine(): void;
}

/** Places calls: SIP through a trunk, or the simulator's model in the dry run. */
export interface Placer {
  callLead(job: { phone: string; callerId: string }, events: LeadEvents): Promise<LeadLeg>;
  /**
   * Calls the agent's phone and moves the lead's media to it; resolves once both legs send
   * their media to each other. `onBye` hears the agent hang up afterwards.
   */
  bridge(
    lead: LeadLeg,
    agentUri: string | null,
    onBye: () => void,
    signal: AbortSignal,
  ): Promise<AgentLeg>;
  /** Where a number outside the workspace is reached, for a transfer: through the trunk. */
  numberUri(phone: string): string;
  /** Frees what the lead's leg held (its RTP port). */
  release(lead: LeadLeg): void;
}
