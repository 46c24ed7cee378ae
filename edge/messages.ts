import type { MessageKind } from "../db/queries/messages.ts";
import { samples8k } from "../src/media/wav.ts";

export type { MessageKind };

/** A message as the service sends it: its version, and the WAV. */
export interface FetchedMessage {
  version: number;
  wav: Uint8Array;
}

/**
 * Silence sent after each message, as packets: a phone whose jitter buffer plays only as
 * packets arrive would otherwise keep the message's last tenths of a second when it stops.
 */
const TAIL_SAMPLES = 2_400;

/** Messages kept at most; the one used longest ago goes first. */
const MAX_MESSAGES = 64;

/**
 * The campaigns' recorded messages, fetched once per version and kept decoded (8 kHz
 * samples), so that an abandoned call hears its message as soon as the service says so.
 * Jobs name the versions: a job's messages are fetched when it arrives.
 */
export class MessageCache {
  private readonly entries = new Map<string, Promise<Int16Array>>();

  constructor(
    private readonly fetchMessage: (
      campaignId: string,
      kind: MessageKind,
    ) => Promise<FetchedMessage>,
    private readonly log: (line: string) => void,
  ) {}

  /** The samples of a message at `version` (or newer); rejects with why it cannot be had. */
  get(campaignId: string, kind: MessageKind, version: number): Promise<Int16Array> {
    const key = `${campaignId}/${kind}/${version}`;
    const cached = this.entries.get(key);
    if (cached) {
      // Used now: it goes to the back of the line.
      this.entries.delete(key);
      this.entries.set(key, cached);
      return cached;
    }
    const loading = this.fetchMessage(campaignId, kind).then((fetched) => {
      if (fetched.version < version)
        throw new Error(`the service has version ${fetched.version}, not ${version}`);
      const message = samples8k(fetched.wav);
      if (message.length === 0) throw new Error("the message is not a WAV the node can play");
      const samples = new Int16Array(message.length + TAIL_SAMPLES);
      samples.set(message);
      return samples;
    });
    this.entries.set(key, loading);
    // A failed fetch is tried again by the next call that needs it.
    loading.catch(() => {
      if (this.entries.get(key) === loading) this.entries.delete(key);
    });
    while (this.entries.size > MAX_MESSAGES) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
    return loading;
  }

  /** Fetches the messages a job names, ahead of its answer. */
  prefetch(campaignId: string, versions: Partial<Record<MessageKind, number | null>>): void {
    for (const [kind, version] of Object.entries(versions)) {
      if (!version) continue;
      this.get(campaignId, kind as MessageKind, version).catch((error) =>
        this.log(`message ${kind} of campaign ${campaignId} not fetched: ${String(error)}`),
      );
    }
  }
}
