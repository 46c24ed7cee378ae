/**
 * Commands to a node: how long from the request that makes one (a supervisor's hang-up) until
 * the node's waiting poll hands it out, with the node polling the process that owns the
 * campaign (woken at once) and polling another process on the same PostgreSQL 15 database
 * (which looks for new commands every 50 ms).
 *
 *   bun bench/node-commands.ts [--samples 200]
 *
 * A throwaway cluster and two server processes are started; the bootstrap admin makes a running
 * campaign of one lead with one agent ready, a node claims its call and reports it answered
 * (put through to the agent, and live from then on: the node never ends it). Each sample asks the owner to hang
 * the call up while the node waits in a long poll, times the request's start to the poll's
 * answer, and acknowledges the command. The goal: p99 under 200 ms both ways.
 */
import {
  Api,
  option,
  percentile,
  progress,
  round,
  startCluster,
  startServer,
  table,
} from "./campaigns-import-common.ts";

const args = process.argv.slice(2);
const SAMPLES = Number(option(args, "samples", "200"));

const cluster = startCluster();
const url = cluster.url("postgres");
const owner = await startServer({ databaseUrl: url });
const other = await startServer({ databaseUrl: url });
try {
  const admin = await Api.login(owner.baseUrl);
  const created = await admin.call("POST", "/api/v1/campaigns", {
    name: "Commands",
    regulatory_profile: "none",
    calling_window: { start: "00:00", end: "23:59" },
  });
  const campaignId = created.data.campaign.id as string;
  const listId = await admin.createList(campaignId, "Leads");
  const form = new FormData();
  form.append("phone_column", "phone");
  form.append("timezone_column", "timezone");
  form.append("file", new Blob(["phone,timezone\n+14155552671,UTC\n"]), "leads.csv");
  await admin.call(
    "POST",
    `/api/v1/campaigns/${campaignId}/lead-lists/${listId}/import`,
    undefined,
    { body: form },
  );
  await admin.call("POST", `/api/v1/campaigns/${campaignId}/status`, { action: "start" });
  // Progressive pacing dials for ready agents: one is signed in.
  const first = "a first password 2026";
  await admin.call("POST", "/api/v1/users", {
    email: "agent@platform.local",
    password: first,
    role: "agent",
  });
  const signedIn = await Api.login(owner.baseUrl, "agent@platform.local", first);
  await signedIn.call("POST", "/api/v1/auth/me/password", {
    current_password: first,
    new_password: "the agent's own password",
  });
  const agent = await Api.login(owner.baseUrl, "agent@platform.local", "the agent's own password");
  await agent.call("POST", "/api/v1/agents/me/state", { state: "ready", campaign_id: campaignId });
  const nodeKey = (
    await admin.call("POST", "/api/v1/edge-nodes", { name: "bench", max_concurrent_calls: 10 })
  ).data.key as string;
  const node = (baseUrl: string) => new Api(baseUrl, nodeKey);
  await node(owner.baseUrl).call("POST", "/api/v1/nodes/heartbeat", { active_calls: 0 });
  let callId: string | undefined;
  for (let tries = 0; tries < 20 && !callId; tries++) {
    const claimed = await node(owner.baseUrl).call("POST", "/api/v1/nodes/jobs/claim", {
      max: 1,
      wait_ms: 1000,
    });
    callId = claimed.data.jobs[0]?.call_id;
  }
  if (!callId) throw new Error("no call was claimed");
  await node(owner.baseUrl).call("POST", `/api/v1/nodes/calls/${callId}/events`, {
    type: "answered",
    at: new Date().toISOString(),
  });

  /** One command's trip: the hang-up asked of the owner, the poll waiting on `polled`. */
  const trip = async (polled: string) => {
    const poll = node(polled).call("POST", "/api/v1/nodes/commands", { wait_ms: 5_000 });
    await Bun.sleep(20);
    const started = performance.now();
    await admin.call("POST", `/api/v1/calls/${callId}/hangup`);
    const reply = await poll;
    const took = performance.now() - started;
    const ids = (reply.data.commands as { id: string }[]).map((command) => command.id);
    await node(polled).call("POST", "/api/v1/nodes/commands", { ack: ids, wait_ms: 0 });
    return took;
  };
  const rows: (string | number)[][] = [];
  const verdicts: string[] = [];
  for (const [name, polled] of [
    ["the owner", owner.baseUrl],
    ["another process", other.baseUrl],
  ] as const) {
    progress(`${SAMPLES} commands, the node polling ${name}`);
    for (let i = 0; i < 10; i++) await trip(polled);
    const times: number[] = [];
    for (let i = 0; i < SAMPLES; i++) times.push(await trip(polled));
    const p99 = round(percentile(times, 99), 1);
    rows.push([name, round(percentile(times, 50), 1), p99, round(Math.max(...times), 1)]);
    verdicts.push(`${name}: ${p99 < 200 ? "met" : "missed"} (p99 ${p99} ms)`);
  }
  console.log(table(["node polls", "p50 ms", "p99 ms", "max ms"], rows));
  console.log(`\ngoal: a command reaches its node within 200 ms:\n  ${verdicts.join("\n  ")}`);
} finally {
  await other.stop();
  await owner.stop();
  cluster.stop();
}
