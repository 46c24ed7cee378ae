import { type Static, type TSchema, Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import {
  CallReplySchema,
  type CallReplyView,
  ClaimReplySchema,
  type DialJobView,
  EdgeNodeSchema,
  NodeCommandSchema,
  type NodeCommandView,
} from "../src/modules/edge-nodes/model.ts";

export type DialJob = DialJobView;
export type NodeCommand = NodeCommandView;
export type CallReply = CallReplyView;

export interface CallReport {
  type:
    | "ringing"
    | "answered"
    | "machine"
    | "ended"
    | "amd"
    | "message_played"
    | "opt_out"
    | "transferred"
    | "transfer_failed";
  /** When it happened at the node; kept as it was through every retry. */
  at: string;
  hangup_cause?: string;
  node_bridge_ms?: number;
  /** On `answered`: detection listens before anyone is put through. */
  detecting?: boolean;
  /** On `amd`. */
  result?: "human" | "machine" | "fax" | "unknown";
  confidence?: number;
  ms?: number;
  /** On `message_played` (and why on `transfer_failed`). */
  kind?: "abandon" | "voicemail" | "opt_out";
  played?: boolean;
  completed?: boolean;
  reason?: string;
  /** On `opt_out`. */
  digit?: string;
}

/** A reply the service gave that the node refuses to act on, or a final refusal (4xx). */
export class ServiceError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly retryable: boolean,
  ) {
    super(message);
  }
}

const Envelope = <T extends TSchema>(data: T) =>
  Type.Object({ status: Type.Literal("success"), data });
const ClaimEnvelope = Envelope(ClaimReplySchema);
const CallEnvelope = Envelope(Type.Object({ call: CallReplySchema }));
const HeartbeatEnvelope = Envelope(Type.Object({ edge_node: EdgeNodeSchema }));
const CommandsEnvelope = Envelope(Type.Object({ commands: Type.Array(NodeCommandSchema) }));

export interface RetryPolicy {
  firstMs: number;
  maxMs: number;
  /** Give up after this long; the event is then lost and logged. */
  giveUpAfterMs: number;
}

const DEFAULT_RETRY: RetryPolicy = { firstMs: 250, maxMs: 15_000, giveUpAfterMs: 10 * 60_000 };

/** A node may start before its service, or while the service restarts: it waits, however long. */
const FIRST_HEARTBEAT_RETRY: RetryPolicy = {
  firstMs: 1_000,
  maxMs: 30_000,
  giveUpAfterMs: Number.POSITIVE_INFINITY,
};

/** How a claim's caller cuts it short. */
export interface ClaimSignals {
  /** No attempt starts after this fires: a failure is then final, and no back-off is waited out. */
  stop?: AbortSignal;
  /** The attempt in flight is given up too, with whatever jobs it would have brought. */
  abandon?: AbortSignal;
}

/** Waits `ms`, or less if `signal` fires first. */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

/**
 * The node's side of the node protocol. Every reply is checked against the service's
 * published schemas before the node acts on it; failed posts are retried with back-off.
 */
export class ServiceClient {
  constructor(
    readonly baseUrl: string,
    private readonly nodeKey: string,
    private readonly retry: RetryPolicy = DEFAULT_RETRY,
    private readonly onRetry: (what: string, error: unknown) => void = () => {},
  ) {}

  private async post<T extends TSchema>(
    path: string,
    body: unknown,
    schema: T,
    options: { headers?: Record<string, string>; timeoutMs?: number; signal?: AbortSignal } = {},
  ): Promise<Static<T>> {
    const timeout = AbortSignal.timeout(options.timeoutMs ?? 15_000);
    const response = await fetch(`${this.baseUrl}/api/v1/nodes${path}`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${this.nodeKey}`,
        "content-type": "application/json",
        ...options.headers,
      },
      body: JSON.stringify(body),
      signal: options.signal ? AbortSignal.any([timeout, options.signal]) : timeout,
    });
    const text = await response.text();
    if (!response.ok) {
      const retryable =
        response.status >= 500 || response.status === 429 || response.status === 408;
      throw new ServiceError(
        `${path}: HTTP ${response.status} ${text.slice(0, 200)}`,
        response.status,
        retryable,
      );
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new ServiceError(`${path}: the reply is not JSON`, response.status, true);
    }
    if (!Value.Check(schema, parsed)) {
      const first = Value.Errors(schema, parsed).First();
      throw new ServiceError(
        `${path}: the reply does not match its schema at ${first?.path || "/"}: ${first?.message ?? "?"}`,
        response.status,
        false,
      );
    }
    return parsed as Static<T>;
  }

  /**
   * Runs `attempt` until it succeeds, it fails for good, the policy gives up or `signal` fires
   * (which also ends a back-off under way). Each wait is drawn between half and all of the
   * policy's step, so that nodes that failed together do not retry together.
   */
  async withRetry<R>(
    what: string,
    attempt: () => Promise<R>,
    options: {
      signal?: AbortSignal | undefined;
      policy?: RetryPolicy;
      onRetry?: (error: unknown, waitMs: number) => void;
    } = {},
  ): Promise<R> {
    const { signal, policy = this.retry } = options;
    const onRetry = options.onRetry ?? ((error: unknown) => this.onRetry(what, error));
    const started = performance.now();
    let step = policy.firstMs;
    for (;;) {
      try {
        return await attempt();
      } catch (error) {
        const retryable = !(error instanceof ServiceError) || error.retryable;
        if (!retryable || performance.now() - started + step > policy.giveUpAfterMs) throw error;
        if (signal?.aborted) throw error;
        const wait = Math.round(step * (0.5 + Math.random() / 2));
        onRetry(error, wait);
        await pause(wait, signal);
        if (signal?.aborted) throw error;
        step = Math.min(policy.maxMs, step * 2);
      }
    }
  }

  /**
   * Claims up to `max` jobs, waiting up to `waitMs`. A retry carries the same
   * `Idempotency-Key`, so a claim whose reply was lost hands out the same jobs again.
   */
  async claim(max: number, waitMs: number, signals: ClaimSignals = {}): Promise<DialJob[]> {
    const key = crypto.randomUUID();
    const { stop, abandon } = signals;
    const noMore = stop && abandon ? AbortSignal.any([stop, abandon]) : (stop ?? abandon);
    const reply = await this.withRetry(
      "claim",
      () =>
        this.post("/jobs/claim", { max, wait_ms: waitMs }, ClaimEnvelope, {
          headers: { "idempotency-key": key },
          timeoutMs: waitMs + 15_000,
          ...(abandon ? { signal: abandon } : {}),
        }),
      { signal: noMore },
    );
    return reply.data.jobs;
  }

  /**
   * A campaign's recorded message: its version and the WAV. Tried twice at most and quickly:
   * an abandoned call cannot wait for it.
   */
  async fetchMessage(
    campaignId: string,
    kind: string,
  ): Promise<{ version: number; wav: Uint8Array }> {
    const path = `/campaigns/${encodeURIComponent(campaignId)}/messages/${encodeURIComponent(kind)}`;
    let lastError: unknown;
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const response = await fetch(`${this.baseUrl}/api/v1/nodes${path}`, {
          headers: { authorization: `Bearer ${this.nodeKey}` },
          signal: AbortSignal.timeout(5_000),
        });
        if (!response.ok) {
          lastError = new ServiceError(`${path}: HTTP ${response.status}`, response.status, false);
          if (response.status < 500) break;
          continue;
        }
        const version = Number(response.headers.get("x-message-version"));
        return { version, wav: new Uint8Array(await response.arrayBuffer()) };
      } catch (error) {
        lastError = error;
      }
    }
    throw lastError;
  }

  /**
   * Acknowledges `ack` and takes the commands not yet acknowledged, waiting up to `waitMs` for
   * one. Not retried here: the caller polls again, and the service keeps every command until
   * it is acknowledged.
   */
  async commands(ack: string[], waitMs: number, signal?: AbortSignal): Promise<NodeCommand[]> {
    const reply = await this.post("/commands", { ack, wait_ms: waitMs }, CommandsEnvelope, {
      timeoutMs: waitMs + 15_000,
      ...(signal ? { signal } : {}),
    });
    return reply.data.commands;
  }

  /** Reports one event of a call, retried with its original `at`. */
  async report(callId: string, event: CallReport): Promise<CallReply> {
    const reply = await this.withRetry(`${event.type} of ${callId}`, () =>
      this.post(`/calls/${callId}/events`, event, CallEnvelope),
    );
    return reply.data.call;
  }

  /** Tells the service the node is alive and which calls it holds; returns its capacity. */
  async heartbeat(
    activeCallIds: string[],
    signal?: AbortSignal,
  ): Promise<{ maxConcurrentCalls: number }> {
    const reply = await this.post(
      "/heartbeat",
      { active_calls: activeCallIds.length, active_call_ids: activeCallIds },
      HeartbeatEnvelope,
      signal ? { signal } : {},
    );
    return { maxConcurrentCalls: reply.data.edge_node.max_concurrent_calls };
  }

  /**
   * The node's first heartbeat, sent until the service answers: while it cannot be reached
   * (or answers 5xx) it is tried again, 1 s apart doubling to 30 s, for as long as it takes. A
   * refusal (4xx: a revoked or unknown key) is final. Once `signal` fires it stops, in the
   * middle of an attempt too, and rejects with the last error.
   */
  firstHeartbeat(o: {
    signal: AbortSignal;
    onRetry: (error: unknown, waitMs: number) => void;
  }): Promise<{ maxConcurrentCalls: number }> {
    return this.withRetry("the first heartbeat", () => this.heartbeat([], o.signal), {
      signal: o.signal,
      policy: FIRST_HEARTBEAT_RETRY,
      onRetry: o.onRetry,
    });
  }
}
