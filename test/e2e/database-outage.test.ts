import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, rmSync } from "node:fs";
import net from "node:net";
import {
  type Cluster,
  crash,
  postgresInstalled,
  startAgain,
  startCluster,
  stopCluster,
} from "../../bench/lib/postgres-cluster.ts";
import {
  callServer,
  type Json,
  SERVER_TEST_TIMEOUT_MS,
  type ServerProcess,
  startServer,
} from "../helpers/server-process.ts";
import { openSocket } from "../helpers/sockets.ts";
import { awakeZone } from "../helpers/zones.ts";

/**
 * A server on its own PostgreSQL cluster, which is crashed (`pg_ctl -m immediate`) mid-run and
 * started again: every route family answers 503 within the bound while it is away, nothing
 * answered 503 took effect, and the same process serves again within 5 s of its return. Runs
 * with the PostgreSQL suite (the cluster is its own, so the suite's database is untouched).
 */
const enabled = Boolean(process.env.DATABASE_URL) && postgresInstalled();
const BOUND_MS = 2_000;
const RECOVERY_MS = 5_000;
const PASSWORD = "a configured password";

let cluster: Cluster;
let server: ServerProcess;
let token: string;
let agentToken: string;
let nodeKey: string;
let campaignId: string;
let listPath: string;
let liveCallId: string;

const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });

const api = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  callServer(server.baseUrl, method, path, token, body, headers);

const csvForm = (...phones: string[]) => {
  const form = new FormData();
  form.append("phone_column", "phone");
  form.append("timezone_column", "timezone");
  const rows = phones.map((phone) => `${phone},${awakeZone()}\n`).join("");
  form.append("file", new Blob([`phone,timezone\n${rows}`]), "leads.csv");
  return form;
};

/**
 * Stops (or resumes) every process of the cluster, as a hung server or a network dropping its
 * packets looks to its clients: connections stay open and nothing answers.
 */
function signalCluster(signal: "SIGSTOP" | "SIGCONT") {
  const postmaster = Number(
    readFileSync(`${cluster.dataDir}/postmaster.pid`, "utf8").split("\n")[0],
  );
  const children = Bun.spawnSync({ cmd: ["pgrep", "-P", String(postmaster)] })
    .stdout.toString()
    .split("\n")
    .filter(Boolean)
    .map(Number);
  for (const pid of [postmaster, ...children]) process.kill(pid, signal);
}

/** The answer and how long it took; a request still unanswered after 10 s counts as a hang. */
async function timed(request: () => Promise<{ status: number; headers: Headers; body: Json }>) {
  const started = performance.now();
  const response = await Promise.race([
    request(),
    Bun.sleep(10_000).then(() => ({ status: 0, headers: new Headers(), body: {} as Json })),
  ]);
  return { ...response, ms: performance.now() - started };
}

beforeAll(async () => {
  if (!enabled) return;
  cluster = startCluster(await freePort());
  server = await startServer({
    DATABASE_URL: cluster.url,
    AUTH_JWT_SECRET: "outage-secret-that-is-long-enough-to-use",
    BOOTSTRAP_ADMIN_EMAIL: "ops@example.test",
    BOOTSTRAP_ADMIN_PASSWORD: PASSWORD,
  });
  const login = await callServer(server.baseUrl, "POST", "/api/v1/auth/login", undefined, {
    email: "ops@example.test",
    password: PASSWORD,
  });
  token = login.body.data.token;
  const campaign = await api("POST", "/api/v1/campaigns", {
    name: "Outage",
    regulatory_profile: "none",
    dial_ratio: 3,
    calling_window: { start: "00:00", end: "23:59" },
  });
  campaignId = campaign.body.data.campaign.id;
  const list = await api("POST", `/api/v1/campaigns/${campaignId}/lead-lists`, {
    name: "L",
    caller_id: "+14155550100",
  });
  listPath = `/api/v1/campaigns/${campaignId}/lead-lists/${list.body.data.lead_list.id}`;
  const first = csvForm("+12125550123", "+12125550126", "+12125550127");
  expect((await api("POST", `${listPath}/import`, first)).status).toBe(200);
  nodeKey = (await api("POST", "/api/v1/edge-nodes", { name: "edge", max_concurrent_calls: 5 }))
    .body.data.key;
  // An agent ready for the campaign, so that a claim gets a call.
  await api("POST", "/api/v1/users", {
    email: "agent@example.test",
    password: PASSWORD,
    role: "agent",
  });
  const agentLogin = await callServer(server.baseUrl, "POST", "/api/v1/auth/login", undefined, {
    email: "agent@example.test",
    password: PASSWORD,
  });
  agentToken = agentLogin.body.data.token;
  await callServer(server.baseUrl, "POST", "/api/v1/auth/me/password", agentToken, {
    current_password: PASSWORD,
    new_password: `${PASSWORD} changed`,
  });
  expect(
    (await api("POST", `/api/v1/campaigns/${campaignId}/status`, { action: "start" })).status,
  ).toBe(200);
  const ready = await callServer(server.baseUrl, "POST", "/api/v1/agents/me/state", agentToken, {
    state: "ready",
    campaign_id: campaignId,
  });
  expect(ready.status).toBe(200);
  const claim = await callServer(server.baseUrl, "POST", "/api/v1/nodes/jobs/claim", nodeKey, {
    max: 1,
  });
  liveCallId = claim.body.data.jobs[0].call_id;
}, SERVER_TEST_TIMEOUT_MS);

afterAll(async () => {
  if (!enabled) return;
  // A server that died says why.
  if (server && server.process.exitCode !== null)
    console.error(
      `the server exited (${server.process.exitCode}):`,
      server.output().slice(-4000),
      (await new Response(server.process.stderr).text()).slice(-4000),
    );
  server?.process.kill("SIGKILL");
  if (cluster) {
    stopCluster(cluster);
    rmSync(cluster.root, { recursive: true, force: true });
  }
});

describe.skipIf(!enabled)("a PostgreSQL outage", () => {
  test(
    "every route family answers 503 within the bound, nothing answered 503 takes effect, and it heals",
    async () => {
      const historyBefore = (await api("GET", `/api/v1/campaigns/${campaignId}/history`)).body.data
        .items.length;
      const agentSocket = await openSocket(
        `${server.baseUrl.replace("http", "ws")}/ws/agent?token=${encodeURIComponent(agentToken)}`,
      );
      await agentSocket.next("agent.state");
      // Writes in flight when the database goes: their transactions lose their connections
      // mid-way, which once took the process down with a write to a closed socket.
      const burst = Array.from({ length: 40 }, (_, i) =>
        api("POST", "/api/v1/campaigns", { name: `burst-${i}` }),
      );
      await Bun.sleep(30);
      crash(cluster);
      const burstAnswers = await Promise.all(burst);

      const answers = {
        read: await timed(() => api("GET", "/api/v1/campaigns")),
        // An agent's change is made in memory before it is written: it is refused first.
        agent: await timed(() =>
          callServer(server.baseUrl, "POST", "/api/v1/agents/me/state", agentToken, {
            state: "paused",
          }),
        ),
        status: await timed(() =>
          api(
            "POST",
            `/api/v1/campaigns/${campaignId}/status`,
            { action: "pause" },
            {
              "idempotency-key": "during-outage",
            },
          ),
        ),
        claim: await timed(() =>
          callServer(server.baseUrl, "POST", "/api/v1/nodes/jobs/claim", nodeKey, { max: 1 }),
        ),
        event: await timed(() =>
          callServer(server.baseUrl, "POST", `/api/v1/nodes/calls/${liveCallId}/events`, nodeKey, {
            type: "ringing",
            at: new Date().toISOString(),
          }),
        ),
        import: await timed(() => api("POST", `${listPath}/import`, csvForm("+12125550124"))),
      };
      for (const [family, answer] of Object.entries(answers)) {
        expect([family, answer.status, answer.body.code]).toEqual([family, 503, "unavailable"]);
        expect([family, answer.ms < BOUND_MS]).toEqual([family, true]);
        expect([family, Number(answer.headers.get("retry-after")) >= 1]).toEqual([family, true]);
      }
      // Over the socket, as over HTTP.
      agentSocket.send(JSON.stringify({ type: "pause" }));
      expect(await agentSocket.next("error")).toMatchObject({ code: "unavailable" });
      // What needs no database keeps answering; readiness says not ready, and nothing more.
      expect((await timed(() => api("GET", "/api/v1/auth/me"))).status).toBe(200);
      expect((await timed(() => callServer(server.baseUrl, "GET", "/healthz"))).status).toBe(200);
      const notReady = await timed(() => callServer(server.baseUrl, "GET", "/readyz"));
      expect(notReady.status).toBe(503);
      expect(JSON.stringify(notReady.body)).not.toMatch(/postgres|ECONN|127\.0\.0\.1/i);

      startAgain(cluster);
      const back = performance.now();
      let ready = 0;
      while (performance.now() - back < RECOVERY_MS + 1_000) {
        ready = (await callServer(server.baseUrl, "GET", "/readyz")).status;
        if (ready === 200) break;
        await Bun.sleep(100);
      }
      expect(ready).toBe(200);
      expect(performance.now() - back).toBeLessThan(RECOVERY_MS);

      // Nothing answered 503 took effect.
      expect(server.process.exitCode).toBeNull();
      const agent = await callServer(server.baseUrl, "GET", "/api/v1/agents/me", agentToken);
      expect(agent.body.data.agent.state).toBe("ready");
      const told = agentSocket.messages.filter((message) => message.type === "agent.state");
      expect(told.map((message) => (message.agent as Json).state)).not.toContain("paused");
      const burstStatuses = burstAnswers.map((answer) => answer.status).sort();
      expect(burstStatuses.every((status) => status === 201 || status === 503)).toBe(true);
      const created = burstAnswers.filter((answer) => answer.status === 201).length;
      const unknown = burstAnswers.filter(
        (answer) => answer.body.code === "outcome_unknown",
      ).length;
      const burstKept = (await api("GET", "/api/v1/campaigns?limit=500")).body.data.items.filter(
        (item: Json) => String(item.name).startsWith("burst-"),
      ).length;
      expect(burstKept).toBeGreaterThanOrEqual(created);
      expect(burstKept).toBeLessThanOrEqual(created + unknown);
      const campaign = (await api("GET", `/api/v1/campaigns/${campaignId}`)).body.data.campaign;
      expect(campaign.status).toBe("running");
      const history = (await api("GET", `/api/v1/campaigns/${campaignId}/history`)).body.data.items;
      expect(history.length).toBe(historyBefore);
      const leads = (await api("GET", `${listPath}/leads`)).body.data.items;
      expect(leads.map((lead: Json) => lead.phone).sort()).toEqual([
        "+12125550123",
        "+12125550126",
        "+12125550127",
      ]);
      expect(leads.filter((lead: Json) => lead.state === "Dialing").length).toBe(1);

      // Everything answers again, and a change acknowledged now is visible.
      const paused = await api(
        "POST",
        `/api/v1/campaigns/${campaignId}/status`,
        { action: "pause" },
        {
          "idempotency-key": "after-outage",
        },
      );
      expect(paused.status).toBe(200);
      expect((await api("GET", `/api/v1/campaigns/${campaignId}`)).body.data.campaign.status).toBe(
        "paused",
      );
      const event = await callServer(
        server.baseUrl,
        "POST",
        `/api/v1/nodes/calls/${liveCallId}/events`,
        nodeKey,
        { type: "ended", at: new Date().toISOString(), hangup_cause: "NO_ANSWER" },
      );
      expect(event.status).toBe(200);
      expect((await api("POST", `${listPath}/import`, csvForm("+12125550125"))).status).toBe(200);
    },
    SERVER_TEST_TIMEOUT_MS,
  );

  test(
    "a database gone silent: requests waiting on it answer 503 once the probe finds it silent, and a write answered unavailable never happens",
    async () => {
      // The probe's bound (2 s) after its next turn (1 s), and some slack for this machine.
      const SILENT_BOUND_MS = 4_500;
      signalCluster("SIGSTOP");
      let answers: Awaited<ReturnType<typeof timed>>[];
      try {
        answers = await Promise.all([
          timed(() => api("POST", "/api/v1/campaigns", { name: "while silent" })),
          timed(() => api("GET", "/api/v1/campaigns")),
          timed(() => api("POST", `${listPath}/import`, csvForm("+12125550129"))),
        ]);
      } finally {
        signalCluster("SIGCONT");
      }
      for (const answer of answers) {
        expect([answer.status, answer.ms < SILENT_BOUND_MS]).toEqual([503, true]);
        expect(["unavailable", "outcome_unknown"]).toContain(answer.body.code);
      }
      const back = performance.now();
      while ((await callServer(server.baseUrl, "GET", "/readyz")).status !== 200) {
        expect(performance.now() - back).toBeLessThan(RECOVERY_MS);
        await Bun.sleep(100);
      }
      // Their statements reached the server before it stopped; what it did with them once it
      // went on must agree with the answers.
      await Bun.sleep(500);
      const [create, , imported] = answers;
      const names = (await api("GET", "/api/v1/campaigns?limit=500")).body.data.items.map(
        (item: Json) => item.name,
      );
      if (create?.body.code === "unavailable") expect(names).not.toContain("while silent");
      const phones = (await api("GET", `${listPath}/leads`)).body.data.items.map(
        (lead: Json) => lead.phone,
      );
      if (imported?.body.code === "unavailable") expect(phones).not.toContain("+12125550129");
      expect(server.process.exitCode).toBeNull();
    },
    SERVER_TEST_TIMEOUT_MS,
  );
});
