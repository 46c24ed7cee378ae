import {
  CLUSTER_ADMIN_EMAIL,
  CLUSTER_ADMIN_PASSWORD,
  type Cluster,
  type Json,
  type Message,
  type Reply,
} from "./cluster.ts";
import { awakeZone } from "./zones.ts";

/**
 * What the world does to a cluster of dialer processes: a workspace set up through the API,
 * agents taking calls, an edge node placing them, supervisors watching, a campaign paused and
 * resumed. Every loop is bounded in time and records what it was told, for the checks after.
 */

type Client = Pick<Cluster, "request" | "live" | "openSocket">;

const jitter = (min: number, max: number) => min + Math.random() * (max - min);
const sleepBetween = (min: number, max: number) => Bun.sleep(jitter(min, max));

/** A 2xx reply's body or an error naming the request, for set-up steps that must work. */
export async function must(client: Client, method: string, path: string, options: Json = {}) {
  let reply = await client.request(method, path, options);
  // A password just changed through one process reaches the others' caches a moment later.
  for (let retry = 0; retry < 20 && reply.body.code === "password_change_required"; retry++) {
    await Bun.sleep(100);
    reply = await client.request(method, path, options);
  }
  if (reply.status < 200 || reply.status >= 300) {
    throw new Error(`${method} ${path} answered ${reply.status}: ${reply.text}`);
  }
  return reply.body;
}

/** Whether a reply means "try again": the database or the owner was away, nothing was refused. */
const transient = (reply: Reply) => reply.status === 502 || reply.status === 503;

// ---------------------------------------------------------------- set-up

export interface SignedIn {
  email: string;
  password: string;
  token: string;
  userId: string;
}

export async function signIn(
  client: Client,
  credentials: { email: string; password: string; tenantDomain?: string },
): Promise<SignedIn> {
  const body = await must(client, "POST", "/api/v1/auth/login", {
    body: {
      email: credentials.email,
      password: credentials.password,
      ...(credentials.tenantDomain ? { tenant_domain: credentials.tenantDomain } : {}),
    },
  });
  return {
    email: credentials.email,
    password: credentials.password,
    token: body.data.token,
    userId: body.data.user.id,
  };
}

/** Creates a user and signs it in, its first password changed as the service requires. */
export async function createUser(
  client: Client,
  options: { token: string; tenantId?: string; domain: string; email: string; role: string },
): Promise<SignedIn> {
  const first = "a first password to change";
  const password = "the password of a user";
  const query = options.tenantId ? `?tenant_id=${options.tenantId}` : "";
  await must(client, "POST", `/api/v1/users${query}`, {
    token: options.token,
    body: { email: options.email, password: first, role: options.role },
  });
  const initial = await signIn(client, {
    email: options.email,
    password: first,
    tenantDomain: options.domain,
  });
  await must(client, "POST", "/api/v1/auth/me/password", {
    token: initial.token,
    body: { current_password: first, new_password: password },
  });
  return { ...initial, password };
}

/** A campaign that dials all day in the leads' zones, with the shortest retry delay allowed. */
export async function createCampaign(
  client: Client,
  options: {
    token: string;
    name: string;
    maxAttempts?: number;
    dialRatio?: number;
    /** The process to send to; any, taken in turn, if not given. */
    via?: number | undefined;
  },
): Promise<Json> {
  const body = await must(client, "POST", "/api/v1/campaigns", {
    token: options.token,
    via: options.via,
    body: {
      name: options.name,
      regulatory_profile: "none",
      calling_window: { start: "00:00", end: "23:59" },
      max_attempts: options.maxAttempts ?? 2,
      retry_delay_seconds: 60,
      dial_ratio: options.dialRatio ?? 1,
    },
  });
  return body.data.campaign;
}

/** Imports `count` leads (US numbers, UTC) into a new lead list of the campaign. */
export async function importLeads(
  client: Client,
  options: {
    token: string;
    campaignId: string;
    count: number;
    firstNumber?: number;
    /** The process to send to; any, taken in turn, if not given. */
    via?: number | undefined;
  },
) {
  const list = (
    await must(client, "POST", `/api/v1/campaigns/${options.campaignId}/lead-lists`, {
      token: options.token,
      via: options.via,
      body: { name: "Leads", caller_id: "+14155550100" },
    })
  ).data.lead_list;
  const first = options.firstNumber ?? 2000;
  const zone = awakeZone();
  const rows = Array.from(
    { length: options.count },
    // Numbers counted from +1 415 555 0000: past 9999 they run into the next exchanges.
    (_, index) => `+1${4_155_550_000 + first + index},${zone},Lead ${index}`,
  );
  const form = new FormData();
  form.append("phone_column", "phone");
  form.append("timezone_column", "timezone");
  form.append("file", new Blob([`phone,timezone,name\n${rows.join("\n")}\n`]), "leads.csv");
  const report = (
    await must(
      client,
      "POST",
      `/api/v1/campaigns/${options.campaignId}/lead-lists/${list.id}/import`,
      { token: options.token, body: form, timeoutMs: 60_000, via: options.via },
    )
  ).data.import;
  return { listId: list.id as string, imported: report.imported as number };
}

export interface Workspace {
  domain: string;
  tenantId: string;
  admin: SignedIn;
  supervisor: SignedIn;
  agents: SignedIn[];
  nodeKey: string;
}

/**
 * A workspace made as a customer would make it, through the API and spread over the
 * processes: the platform admin creates the tenant and its admin; the admin its supervisor,
 * agents and an edge node.
 */
export async function createWorkspace(
  client: Client,
  options: { domain: string; agents: number; nodeMaxCalls?: number },
): Promise<Workspace> {
  const platform = await signIn(client, {
    email: CLUSTER_ADMIN_EMAIL,
    password: CLUSTER_ADMIN_PASSWORD,
  });
  const tenant = (
    await must(client, "POST", "/api/v1/tenants", {
      token: platform.token,
      body: { name: options.domain, domain: options.domain },
    })
  ).data.tenant;
  const admin = await createUser(client, {
    token: platform.token,
    tenantId: tenant.id,
    domain: options.domain,
    email: `admin@${options.domain}`,
    role: "admin",
  });
  const supervisor = await createUser(client, {
    token: admin.token,
    domain: options.domain,
    email: `supervisor@${options.domain}`,
    role: "supervisor",
  });
  const agents: SignedIn[] = [];
  // Two at a time: each creation and sign-in hashes a password.
  for (let index = 0; index < options.agents; index += 2) {
    const batch = [index, index + 1].filter((n) => n < options.agents);
    agents.push(
      ...(await Promise.all(
        batch.map((n) =>
          createUser(client, {
            token: admin.token,
            domain: options.domain,
            email: `agent-${n}@${options.domain}`,
            role: "agent",
          }),
        ),
      )),
    );
  }
  const nodeKey = (
    await must(client, "POST", "/api/v1/edge-nodes", {
      token: admin.token,
      body: { name: "edge", max_concurrent_calls: options.nodeMaxCalls ?? 50 },
    })
  ).data.key as string;
  return { domain: options.domain, tenantId: tenant.id, admin, supervisor, agents, nodeKey };
}

// ---------------------------------------------------------------- supervisors

export interface SupervisorWatch {
  process: number;
  openedAt: number;
  closedAt?: number;
  messages: { at: number; message: Message }[];
  close(): void;
}

/** A supervisor socket on process `index` that records every message it gets. */
export async function watchAsSupervisor(
  client: Client,
  options: { process: number; token: string },
): Promise<SupervisorWatch> {
  const opened = await client.openSocket(options.process, "/ws/supervisor", options.token);
  const watch: SupervisorWatch = {
    process: options.process,
    openedAt: Date.now(),
    messages: [],
    close: () => opened.socket.close(),
  };
  for (const frame of opened.frames)
    watch.messages.push({ at: Date.now(), message: JSON.parse(frame) });
  opened.socket.addEventListener("message", (event) => {
    watch.messages.push({ at: Date.now(), message: JSON.parse(String(event.data)) });
  });
  opened.socket.addEventListener("close", () => {
    watch.closedAt = Date.now();
  });
  return watch;
}

// ---------------------------------------------------------------- agents

export interface AgentRun {
  userId: string;
  email: string;
  /** Every `agent.state` this agent's sockets carried, in order. */
  states: { at: number; state: string; process: number; afterReady: boolean }[];
  /** Calls connected to this agent. */
  connected: string[];
  dispositions: { callId: string; status: number | "error"; via?: number; text?: string }[];
  sockets: { process: number; openedAt: number; closedAt?: number }[];
  errors: string[];
  /** Closes the socket and waits for the dispositions under way; the loop ends. */
  stop(): Promise<void>;
}

/**
 * An agent at a desk: signs in (already done: `agent`), opens /ws/agent on process `process`,
 * goes ready on the campaign, and for each connected call dispositions it once the call is
 * over (or after a short while), through any process. A socket that dies is opened again on
 * another live process; if that process says the agent is offline, the agent goes ready again
 * (and that offline is recorded: the agent was signed out).
 */
export function startAgent(
  client: Client,
  options: { agent: SignedIn; campaignId: string; process: number; deadline: number },
): AgentRun {
  const run: AgentRun = {
    userId: options.agent.userId,
    email: options.agent.email,
    states: [],
    connected: [],
    dispositions: [],
    sockets: [],
    errors: [],
    stop: async () => {},
  };
  let stopped = false;
  let readied = false;
  let current: WebSocket | undefined;
  const ended = new Set<string>();
  const pending = new Set<Promise<void>>();

  const disposition = async (callId: string) => {
    // Dispositions follow the hang-up; a call.ended may come through another process's
    // socket, or not at all, so the agent also gives up waiting after a while.
    const waitUntil = Date.now() + 2_500;
    while (!ended.has(callId) && Date.now() < waitUntil) await Bun.sleep(25);
    await sleepBetween(100, 300);
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        const reply = await client.request("POST", `/api/v1/calls/${callId}/disposition`, {
          token: options.agent.token,
          body: { disposition: "completed" },
          timeoutMs: 10_000,
        });
        // 409 while the call is still up: wait for the hang-up. 5xx: try again.
        if ((reply.status === 409 && attempt < 4) || transient(reply)) {
          await Bun.sleep(500);
          continue;
        }
        run.dispositions.push({ callId, status: reply.status, via: reply.via, text: reply.text });
        return;
      } catch (error) {
        if (attempt === 4) {
          run.dispositions.push({ callId, status: "error", text: String(error) });
          return;
        }
        await Bun.sleep(300);
      }
    }
  };

  const onMessage = (process: number, message: Message) => {
    if (message.type === "agent.state") {
      const state = message.agent?.state as string;
      run.states.push({ at: Date.now(), state, process, afterReady: readied });
      if (state === "offline" && readied && !stopped) current?.send(readyMessage());
    } else if (message.type === "ack" && message.for === "ready") {
      readied = true;
    } else if (message.type === "call.connected") {
      const callId = message.call?.id as string;
      run.connected.push(callId);
      const task = disposition(callId).finally(() => pending.delete(task));
      pending.add(task);
    } else if (message.type === "call.ended") {
      ended.add(message.call?.id as string);
    } else if (message.type === "error") {
      run.errors.push(JSON.stringify(message));
    }
  };
  const readyMessage = () => JSON.stringify({ type: "ready", campaign_id: options.campaignId });

  const connect = async (preferred: number) => {
    let target = preferred;
    while (!stopped && Date.now() < options.deadline) {
      try {
        const opened = await client.openSocket(target, "/ws/agent", options.agent.token);
        const record: AgentRun["sockets"][number] = { process: target, openedAt: Date.now() };
        run.sockets.push(record);
        current = opened.socket;
        const process = target;
        for (const frame of opened.frames) onMessage(process, JSON.parse(frame));
        opened.socket.addEventListener("message", (event) =>
          onMessage(process, JSON.parse(String(event.data))),
        );
        opened.socket.addEventListener("close", () => {
          record.closedAt = Date.now();
          if (stopped) return;
          const others = client.live().filter((index) => index !== process);
          const next = others[Math.floor(Math.random() * others.length)] ?? process;
          void connect(next);
        });
        if (!readied) opened.socket.send(readyMessage());
        return;
      } catch (error) {
        run.errors.push(`socket on ${target}: ${String(error)}`);
        const up = client.live();
        target = up[Math.floor(Math.random() * up.length)] ?? target;
        await Bun.sleep(300);
      }
    }
  };

  void connect(options.process);
  run.stop = async () => {
    stopped = true;
    current?.close();
    await Promise.all([...pending]);
  };
  return run;
}

// ---------------------------------------------------------------- the edge node

export interface EndedCall {
  callId: string;
  campaignId: string;
  leadId: string;
  outcome: string;
  at: number;
}

export interface NodeRun {
  claims: {
    at: number;
    via?: number;
    key: string;
    status: number | "error";
    jobs: { call_id: string; campaign_id: string; lead_id: string }[];
  }[];
  ended: EndedCall[];
  /** Calls whose events the node could not deliver to the end. */
  lost: { callId: string; step: string; detail: string }[];
  heartbeats: { at: number; status: number | "error" }[];
  /** Resolves when the node has stopped claiming and every call it placed is over. */
  done: Promise<void>;
  /** Stops claiming now (instead of at the deadline); `done` then resolves. */
  stop(): Promise<void>;
}

/**
 * A simulated edge node: claims jobs through any process (each claim with an Idempotency-Key,
 * repeated with the same key when its answer was lost), plays each call out (ringing, then
 * answered or no answer, then ended, a few hundred milliseconds apart), and heartbeats the
 * calls it holds. It stops claiming at `deadline` and finishes the calls it has.
 */
export function startNode(
  client: Client,
  options: {
    key: string;
    deadline: number;
    maxInFlight?: number;
    answerRate?: number;
    claimWaitMs?: number;
    /** Called on each claim that returned jobs, e.g. to time a failover. */
    onJobs?: (jobs: Json[], via: number) => void;
  },
): NodeRun {
  const maxInFlight = options.maxInFlight ?? 4;
  const answerRate = options.answerRate ?? 0.6;
  const run: NodeRun = {
    claims: [],
    ended: [],
    lost: [],
    heartbeats: [],
    done: Promise.resolve(),
    stop: async () => {},
  };
  const inFlight = new Set<string>();
  const calls = new Set<Promise<void>>();
  let deadline = options.deadline;
  // Calls under way at the deadline get this long to finish.
  const hardStop = () => deadline + 30_000;
  const at = () => new Date().toISOString();

  const event = async (callId: string, body: Json): Promise<Reply | undefined> => {
    for (let attempt = 0; attempt < 6 && Date.now() < hardStop(); attempt++) {
      try {
        const reply = await client.request("POST", `/api/v1/nodes/calls/${callId}/events`, {
          token: options.key,
          body,
          timeoutMs: 10_000,
        });
        if (!transient(reply)) return reply;
      } catch {
        // The answer was lost; events are idempotent, so send it again.
      }
      await Bun.sleep(300);
    }
    return undefined;
  };

  const play = async (job: Json) => {
    const callId = job.call_id as string;
    const step = async (name: string, body: Json) => {
      const reply = await event(callId, body);
      if (reply?.status !== 200) {
        run.lost.push({
          callId,
          step: name,
          detail: reply ? `${reply.status} ${reply.text}` : "no answer",
        });
        return undefined;
      }
      return reply;
    };
    try {
      await sleepBetween(50, 200);
      if (!(await step("ringing", { type: "ringing", at: at() }))) return;
      await sleepBetween(200, 500);
      let hangupCause = "NO_ANSWER";
      if (Math.random() < answerRate) {
        const answered = await step("answered", { type: "answered", at: at() });
        if (!answered) return;
        hangupCause = "NORMAL_CLEARING";
        if (answered.body.data?.call?.action !== "hangup") await sleepBetween(300, 800);
      }
      const ended = await step("ended", { type: "ended", at: at(), hangup_cause: hangupCause });
      if (!ended) return;
      run.ended.push({
        callId,
        campaignId: job.campaign_id,
        leadId: job.lead_id,
        outcome: ended.body.data?.call?.outcome,
        at: Date.now(),
      });
    } finally {
      inFlight.delete(callId);
    }
  };

  const claim = async () => {
    const key = crypto.randomUUID();
    const max = maxInFlight - inFlight.size;
    for (let attempt = 0; attempt < 4 && Date.now() < deadline; attempt++) {
      try {
        const reply = await client.request("POST", "/api/v1/nodes/jobs/claim", {
          token: options.key,
          body: { max, wait_ms: options.claimWaitMs ?? 1_000 },
          headers: { "idempotency-key": key },
          timeoutMs: 15_000,
        });
        const jobs = (reply.body.data?.jobs ?? []) as Json[];
        run.claims.push({
          at: Date.now(),
          via: reply.via,
          key,
          status: reply.status,
          jobs: jobs.map((job) => ({
            call_id: job.call_id,
            campaign_id: job.campaign_id,
            lead_id: job.lead_id,
          })),
        });
        if (transient(reply)) {
          await Bun.sleep(200);
          continue;
        }
        if (reply.status !== 200) await Bun.sleep(500);
        if (jobs.length > 0) options.onJobs?.(jobs, reply.via);
        for (const job of jobs) {
          inFlight.add(job.call_id);
          const task = play(job).finally(() => calls.delete(task));
          calls.add(task);
        }
        return;
      } catch (error) {
        // The claim may have placed jobs that never reached us: ask again with the same key.
        run.claims.push({ at: Date.now(), key, status: "error", jobs: [] });
        if (String(error).includes("no live process")) await Bun.sleep(500);
        else await Bun.sleep(100);
      }
    }
  };

  const heartbeats = (async () => {
    while (Date.now() < hardStop() && (Date.now() < deadline || inFlight.size > 0)) {
      try {
        const reply = await client.request("POST", "/api/v1/nodes/heartbeat", {
          token: options.key,
          body: { active_calls: inFlight.size, active_call_ids: [...inFlight] },
          timeoutMs: 5_000,
        });
        run.heartbeats.push({ at: Date.now(), status: reply.status });
      } catch {
        run.heartbeats.push({ at: Date.now(), status: "error" });
      }
      await Bun.sleep(1_500);
    }
  })();

  run.done = (async () => {
    while (Date.now() < deadline) {
      if (inFlight.size >= maxInFlight) {
        await Bun.sleep(50);
        continue;
      }
      await claim();
    }
    await Promise.all([...calls]);
    await heartbeats;
  })();
  run.stop = () => {
    deadline = Math.min(deadline, Date.now());
    return run.done;
  };
  return run;
}

// ---------------------------------------------------------------- status changes

export interface StatusAck {
  key: string;
  requestId: string;
  action: string;
  status: number;
  to: string;
  text: string;
  via: number;
  at: number;
}

/**
 * Sends one status change with an Idempotency-Key through any process, repeating it with the
 * same key (and request id) while its outcome is unknown. The last reply, or undefined.
 */
export async function changeStatus(
  client: Client,
  options: {
    token: string;
    campaignId: string;
    action: string;
    key?: string;
    via?: number;
    deadline?: number;
  },
): Promise<(Reply & { key: string; requestId: string }) | undefined> {
  const key = options.key ?? crypto.randomUUID();
  const requestId = `status-${key}`;
  const deadline = options.deadline ?? Date.now() + 30_000;
  while (Date.now() < deadline) {
    try {
      const reply = await client.request("POST", `/api/v1/campaigns/${options.campaignId}/status`, {
        token: options.token,
        body: { action: options.action },
        headers: { "idempotency-key": key, "x-request-id": requestId },
        via: options.via,
        timeoutMs: Math.max(1_000, Math.min(15_000, deadline - Date.now())),
      });
      if (!transient(reply) && reply.body.code !== "outcome_unknown") {
        return { ...reply, key, requestId };
      }
    } catch {
      // Lost on the way: the same key settles it.
    }
    await Bun.sleep(200);
  }
  return undefined;
}

export interface StatusRun {
  acks: StatusAck[];
  /** Replies that were not 2xx (409s when this loop's idea of the status was stale). */
  refused: { key: string; status: number; text: string }[];
  /** Request ids of changes whose outcome stayed unknown (no answer before the deadline). */
  unresolved: string[];
  done: Promise<void>;
}

/** Pauses and resumes a campaign until `deadline`, recording every acknowledged change. */
export function startStatusChanges(
  client: Client,
  options: { token: string; campaignId: string; deadline: number; intervalMs?: number },
): StatusRun {
  const run: StatusRun = { acks: [], refused: [], unresolved: [], done: Promise.resolve() };
  run.done = (async () => {
    let status = "running";
    while (Date.now() < options.deadline) {
      const action = status === "running" ? "pause" : "start";
      const key = crypto.randomUUID();
      const reply = await changeStatus(client, {
        token: options.token,
        campaignId: options.campaignId,
        action,
        key,
        deadline: options.deadline + 20_000,
      });
      if (!reply) run.unresolved.push(`status-${key}`);
      if (reply && reply.status >= 200 && reply.status < 300) {
        status = reply.body.data.campaign.status;
        run.acks.push({
          key: reply.key,
          requestId: reply.requestId,
          action,
          status: reply.status,
          to: status,
          text: reply.text,
          via: reply.via,
          at: Date.now(),
        });
      } else if (reply) {
        run.refused.push({ key: reply.key, status: reply.status, text: reply.text });
        try {
          const now = await client.request("GET", `/api/v1/campaigns/${options.campaignId}`, {
            token: options.token,
          });
          status = now.body.data?.campaign?.status ?? status;
        } catch {
          // Guess again next time.
        }
      }
      await sleepBetween((options.intervalMs ?? 800) * 0.5, (options.intervalMs ?? 800) * 1.5);
    }
  })();
  return run;
}
