/**
 * The CPU a webhook post costs its sender: the deliveries' own client
 * (src/webhooks/connections.ts) against `fetch`, each posting as the dispatcher does, in bursts
 * every 50 ms at `--rate` posts a second, to the benchmarks' receiver in its own process.
 *
 *   bun bench/webhook-post.ts [--rate 1550] [--seconds 8] [--rounds 3]
 *
 * Each round runs both in turn, each in a process of its own (so neither warms the other's
 * code or connections), which posts for `--seconds` not counted, then as long again reading
 * its CPU (user and system, every thread). Reported per client: microseconds of CPU a post, and cores at the rate, the
 * medians of the rounds. The body is a call's event of some 1,000 bytes, signed headers and
 * all; the receiver answers 204.
 */
import { median, option, round, table } from "./campaigns-import-common.ts";
import { startReceiver } from "./lib/webhooks.ts";

const args = process.argv.slice(2);
const RATE = Number(option(args, "rate", "1550"));
const SECONDS = Number(option(args, "seconds", "8"));
const ROUNDS = Number(option(args, "rounds", "3"));
const TICK_MS = 50;

const body = JSON.stringify({
  type: "call.ended",
  timestamp: new Date().toISOString(),
  data: { cdr: { note: "x".repeat(900) } },
});
const headers = {
  "content-type": "application/json",
  "user-agent": "dialer-engine-webhooks",
  "webhook-id": "msg_0123456789abcdef0123456789abcdef",
  "webhook-timestamp": "1790000000",
  "webhook-signature": "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=",
};
const limits = { timeoutMs: 10_000, maxBytes: 64 * 1024, keepBytes: 1024 };

type Client = "ours" | "fetch";

/** One client's run, in this process: posts at the rate, returns CPU µs a post and cores. */
async function measure(client: Client, url: string) {
  const { post } = await import("../src/webhooks/connections.ts");
  const send =
    client === "ours"
      ? () => post(new URL(url), headers, body, limits)
      : async () => {
          const response = await fetch(url, {
            method: "POST",
            headers,
            body,
            redirect: "manual",
            signal: AbortSignal.timeout(limits.timeoutMs),
          });
          await response.arrayBuffer();
        };
  const perTick = Math.round((RATE * TICK_MS) / 1000);
  const pace = async (seconds: number) => {
    const started = performance.now();
    const sent: Promise<unknown>[] = [];
    for (let tick = 0; tick < (seconds * 1000) / TICK_MS; tick++) {
      for (let n = 0; n < perTick; n++) sent.push(send());
      await Bun.sleep(Math.max(0, started + (tick + 1) * TICK_MS - performance.now()));
    }
    await Promise.all(sent);
    return { posts: sent.length, seconds: (performance.now() - started) / 1000 };
  };
  // Warm-up, as long again, not counted: connections opened and code compiled.
  await pace(SECONDS);
  const before = process.cpuUsage();
  const { posts, seconds } = await pace(SECONDS);
  const cpu = process.cpuUsage(before);
  const micros = cpu.user + cpu.system;
  return { perPost: micros / posts, cores: micros / 1e6 / seconds };
}

if (process.env.WEBHOOK_POST_CLIENT) {
  const result = await measure(
    process.env.WEBHOOK_POST_CLIENT as Client,
    process.env.WEBHOOK_POST_URL ?? "",
  );
  console.log(JSON.stringify(result));
  process.exit(0);
}

const receiver = await startReceiver(1_000_000_000);
const results: Record<Client, { perPost: number; cores: number }[]> = { ours: [], fetch: [] };
for (let r = 1; r <= ROUNDS; r++) {
  for (const client of ["ours", "fetch"] as const) {
    const child = Bun.spawn([process.execPath, import.meta.path, ...args], {
      env: { ...process.env, WEBHOOK_POST_CLIENT: client, WEBHOOK_POST_URL: receiver.url },
      stdout: "pipe",
      stderr: "inherit",
    });
    const output = await new Response(child.stdout).text();
    if ((await child.exited) !== 0) throw new Error(`the ${client} run failed`);
    const result = JSON.parse(output.trim().split("\n").at(-1) ?? "{}");
    results[client].push(result);
    console.log(`round ${r} ${client}: ${round(result.perPost, 1)} µs a post`);
  }
}
await receiver.stop();
console.log(
  table(
    ["client", "CPU µs a post (median)", `cores at ${RATE}/s`],
    (["ours", "fetch"] as const).map((client) => [
      client,
      String(round(median(results[client].map((x) => x.perPost)), 1)),
      String(round(median(results[client].map((x) => x.cores)), 3)),
    ]),
  ),
);
