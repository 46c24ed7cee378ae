/**
 * What the benchmarks that take webhooks share: the receiver process (bench/webhook-receiver.ts)
 * and the checks of what it received.
 */
import { Webhook } from "standardwebhooks";
import { WEBHOOK_EVENT_TYPES } from "../../db/schema/webhooks.ts";
import { cpuSeconds, type Server, startListening } from "../campaigns-import-common.ts";
import type { ReceiverRecords } from "../webhook-receiver.ts";

/** Every event type an endpoint can take. */
export const ALL_EVENT_TYPES: readonly string[] = WEBHOOK_EVENT_TYPES;

export interface Receiver {
  /** Where endpoints are registered: a POST to any path is recorded. */
  url: string;
  pid: number;
  count(): Promise<number>;
  records(): Promise<ReceiverRecords>;
  reset(): Promise<void>;
  cpuSeconds(): number;
  stop(): Promise<void>;
}

/** Starts the receiver as its own `bun` process on 127.0.0.1. */
export async function startReceiver(sampleEvery = 50): Promise<Receiver> {
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    PORT: "0",
    SAMPLE_EVERY: String(sampleEvery),
  };
  const server: Server = await startListening(
    [process.execPath, "bench/webhook-receiver.ts"],
    env,
    30_000,
  );
  const base = server.baseUrl;
  return {
    url: `${base}/hooks`,
    pid: server.pid,
    count: async () => ((await (await fetch(`${base}/__count`)).json()) as { count: number }).count,
    records: async () => (await (await fetch(`${base}/__records`)).json()) as ReceiverRecords,
    reset: async () => {
      await fetch(`${base}/__reset`, { method: "POST" });
    },
    cpuSeconds: () => cpuSeconds(server.pid),
    stop: () => server.stop(),
  };
}

/**
 * Checks the kept requests' signatures with the Standard Webhooks library, as a receiver
 * would; and, so that a pass means something, that a body changed by one byte fails.
 * Run it within five minutes of the signing: the library refuses older timestamps.
 */
export function verifySamples(samples: ReceiverRecords["samples"], secret: string) {
  const webhook = new Webhook(secret);
  let verified = 0;
  let refused = 0;
  for (const sample of samples) {
    try {
      webhook.verify(sample.body, sample.headers);
      verified++;
    } catch {
      refused++;
    }
  }
  let tamperedRefused = false;
  const first = samples[0];
  if (first) {
    try {
      webhook.verify(`${first.body} `, first.headers);
    } catch {
      tamperedRefused = true;
    }
  }
  return { checked: samples.length, verified, refused, tamperedRefused };
}

/** Waits until `done()` holds or `timeoutMs` passes, looking every `everyMs`. */
export async function waitUntil(done: () => Promise<boolean>, timeoutMs: number, everyMs = 200) {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (await done()) return true;
    await Bun.sleep(everyMs);
  }
  return done();
}

/** Epoch milliseconds with a fraction, the clock the receiver reads. */
export const epochNow = () => performance.timeOrigin + performance.now();
