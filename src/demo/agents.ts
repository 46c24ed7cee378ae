import { DEFAULT_MODEL } from "../simulator/outcome-model.ts";
import type { Random } from "../simulator/random.ts";
import { DEMO_MODEL } from "./edge-node.ts";
import type { DemoClient } from "./http.ts";

interface AgentMessage {
  type: string;
  agent?: { state: string; call_id: string | null };
}

/**
 * A simulated agent: on its own socket, ready for a campaign; after each call it wraps up for
 * a while drawn from the outcome model and records a disposition; now and then it takes a
 * short break. Its socket reconnects if it drops.
 */
export class SimulatedAgent {
  private socket: WebSocket | undefined;
  private stopped = false;
  private wrapping: string | undefined;

  constructor(
    private readonly client: DemoClient,
    private readonly campaignId: string,
    private readonly random: Random,
  ) {}

  start() {
    this.connect();
  }

  stop() {
    this.stopped = true;
    this.socket?.close();
  }

  private send(message: Record<string, unknown>) {
    if (this.socket?.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(message));
  }

  private connect() {
    const socket = new WebSocket(this.client.socketUrl("/ws/agent"));
    this.socket = socket;
    socket.onopen = () => this.send({ type: "ready", campaign_id: this.campaignId });
    socket.onmessage = (event) => this.handle(JSON.parse(String(event.data)) as AgentMessage);
    socket.onclose = () => {
      if (!this.stopped) setTimeout(() => this.connect(), 2_000);
    };
  }

  private handle(message: AgentMessage) {
    if (message.type !== "agent.state" || !message.agent) return;
    const { state, call_id: callId } = message.agent;
    if (state === "wrap_up" && callId && this.wrapping !== callId) {
      this.wrapping = callId;
      const wrapMs = Math.max(1_000, this.random.gamma(DEMO_MODEL.wrap.mean, DEMO_MODEL.wrap.cv));
      setTimeout(() => this.disposition(callId), wrapMs);
    }
    if (state === "paused")
      setTimeout(() => this.send({ type: "ready", campaign_id: this.campaignId }), 20_000);
  }

  private disposition(callId: string) {
    const draw = this.random.next();
    const callback = draw > DEFAULT_MODEL.completedShare && draw < 0.92;
    this.send({
      type: "disposition",
      call_id: callId,
      disposition: callback
        ? "callback"
        : draw <= DEFAULT_MODEL.completedShare
          ? "completed"
          : "no_contact",
      ...(callback ? { callback_at: new Date(Date.now() + 2 * 3_600_000).toISOString() } : {}),
    });
    // One wrap-up in ten ends in a short break instead of the next call.
    if (this.random.chance(0.1)) setTimeout(() => this.send({ type: "pause" }), 500);
  }
}
