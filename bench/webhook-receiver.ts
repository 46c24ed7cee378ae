/**
 * A webhook receiver for the benchmarks, in its own process as a receiver would be: it answers
 * every POST with 204 at once and records what it got. It listens on 127.0.0.1 only, on a
 * free port (or `PORT`), and prints "listening on http://127.0.0.1:PORT" when it does.
 *
 *   bun bench/webhook-receiver.ts
 *
 * For each POST it keeps the `webhook-id`, the time of receipt (epoch milliseconds, from
 * `performance.timeOrigin + performance.now()`, the clock the benchmark reads too), the
 * payload's `type` and `timestamp`, and the `bench` field that bench/webhooks.ts writes into
 * its events' data (a sequence number and an order key). Every `SAMPLE_EVERY`-th request is
 * also kept whole (headers and body), for the benchmark to check its signature.
 *
 * Control routes: `GET /__count` (requests so far), `GET /__records` (everything recorded),
 * `POST /__reset` (forget it all).
 */

/** A received event: webhook-id, receipt time, type, payload timestamp, bench seq and key. */
export type ReceivedRecord = [string, number, string, string, number | null, string | null];

export interface ReceivedSample {
  headers: Record<string, string>;
  body: string;
}

export interface ReceiverRecords {
  records: ReceivedRecord[];
  samples: ReceivedSample[];
  /** Requests whose body was not a JSON event. */
  malformed: number;
}

const SAMPLE_EVERY = Number(process.env.SAMPLE_EVERY ?? "50");
const now = () => performance.timeOrigin + performance.now();

let records: ReceivedRecord[] = [];
let samples: ReceivedSample[] = [];
let malformed = 0;

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: Number(process.env.PORT ?? "0"),
  async fetch(request) {
    const receivedAt = now();
    const path = new URL(request.url).pathname;
    if (path === "/__count") return Response.json({ count: records.length });
    if (path === "/__records") return Response.json({ records, samples, malformed });
    if (path === "/__reset") {
      records = [];
      samples = [];
      malformed = 0;
      return new Response(null, { status: 204 });
    }
    if (request.method !== "POST") return new Response(null, { status: 405 });
    const body = await request.text();
    const id = request.headers.get("webhook-id") ?? "";
    try {
      const event = JSON.parse(body) as {
        type: string;
        timestamp: string;
        data?: { bench?: { seq?: number; key?: string } };
      };
      const bench = event.data?.bench;
      records.push([
        id,
        receivedAt,
        event.type,
        event.timestamp,
        bench?.seq ?? null,
        bench?.key ?? null,
      ]);
    } catch {
      malformed++;
    }
    if (records.length % SAMPLE_EVERY === 1) {
      const headers: Record<string, string> = {};
      request.headers.forEach((value, name) => {
        headers[name] = value;
      });
      samples.push({ headers, body });
    }
    return new Response(null, { status: 204 });
  },
});

console.log(`listening on http://127.0.0.1:${server.port}`);
