/**
 * `npm run demo`: the server on the embedded database (in memory unless DATA_DIR says
 * otherwise), a demo workspace with its sign-ins printed, a running campaign with imported
 * leads, a simulated edge node and simulated agents placing and taking calls on the real
 * clock. Sign in as you@demo.test to take calls in the browser beside them.
 */
import { randomBytes } from "node:crypto";
import { standInMessage } from "../media/stand-in-message.ts";
import { drawCall } from "../simulator/outcome-model.ts";
import { Random } from "../simulator/random.ts";
import { SimulatedAgent } from "./agents.ts";
import { DEMO_MODEL, SimulatedEdgeNode } from "./edge-node.ts";
import { DemoClient } from "./http.ts";
import { demoLeads, leadsCsv } from "./leads.ts";

const ROOT = new URL("../..", import.meta.url).pathname;
const PASSWORD = "demo password 2026";
const FIRST_PASSWORD = "first password 2026";
const SIMULATED_AGENTS = 4;
const random = new Random(Number(process.env.DEMO_SEED ?? 20261125));

async function startServer(): Promise<{ baseUrl: string; stop: () => void }> {
  // Always the embedded database: the demo seeds a workspace of its own.
  const { DATABASE_URL: _external, ...inherited } = process.env;
  const child = Bun.spawn([process.execPath, "src/index.ts"], {
    cwd: ROOT,
    env: {
      HOST: "127.0.0.1",
      PORT: "3000",
      DATA_DIR: "memory://",
      LOG_LEVEL: "info",
      AUTH_JWT_SECRET: randomBytes(32).toString("hex"),
      ...inherited,
      BOOTSTRAP_ADMIN_EMAIL: "platform@demo.test",
      BOOTSTRAP_ADMIN_PASSWORD: PASSWORD,
    },
    stdout: "pipe",
    stderr: "inherit",
  });
  const reader = child.stdout.getReader();
  const decoder = new TextDecoder();
  let printed = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the server stopped before listening:\n${printed}`);
    printed += decoder.decode(value);
    const address = /listening on (http:\/\/[^\s"]+)/.exec(printed)?.[1];
    if (address) {
      void (async () => {
        for (;;) if ((await reader.read()).done) return;
      })();
      return {
        baseUrl: address.replace("0.0.0.0", "127.0.0.1"),
        stop: () => child.kill("SIGTERM"),
      };
    }
  }
}

async function user(admin: DemoClient, email: string, role: string, finalPassword?: string) {
  await admin.call("POST", "/users", { email, password: FIRST_PASSWORD, role });
  if (!finalPassword) return undefined;
  const { token } = await admin.call<{ token: string }>("POST", "/auth/login", {
    email,
    password: FIRST_PASSWORD,
    tenant_domain: "demo.test",
  });
  const client = admin.as(token);
  await client.call("POST", "/auth/me/password", {
    current_password: FIRST_PASSWORD,
    new_password: finalPassword,
  });
  return client;
}

async function seed(base: DemoClient) {
  const { token: platformToken } = await base.call<{ token: string }>("POST", "/auth/login", {
    email: "platform@demo.test",
    password: PASSWORD,
  });
  const platform = base.as(platformToken);
  const { tenant } = await platform.call<{ tenant: { id: string } }>("POST", "/tenants", {
    name: "Demo Insurance",
    domain: "demo.test",
  });
  await platform.call("POST", `/users?tenant_id=${tenant.id}`, {
    email: "admin@demo.test",
    password: FIRST_PASSWORD,
    role: "admin",
  });
  const { token: firstToken } = await base.call<{ token: string }>("POST", "/auth/login", {
    email: "admin@demo.test",
    password: FIRST_PASSWORD,
    tenant_domain: "demo.test",
  });
  await base.as(firstToken).call("POST", "/auth/me/password", {
    current_password: FIRST_PASSWORD,
    new_password: PASSWORD,
  });
  const { token: adminToken } = await base.call<{ token: string }>("POST", "/auth/login", {
    email: "admin@demo.test",
    password: PASSWORD,
    tenant_domain: "demo.test",
  });
  const admin = base.as(adminToken);
  await user(admin, "supervisor@demo.test", "supervisor", PASSWORD);
  await user(admin, "you@demo.test", "agent");
  const agents: DemoClient[] = [];
  for (let i = 1; i <= SIMULATED_AGENTS; i++) {
    agents.push((await user(admin, `sim${i}@demo.test`, "agent", PASSWORD)) as DemoClient);
  }

  // The campaign's own window spans the day; the workspace's `us` profile keeps each lead to
  // its legal hours, and its governor holds the ratio while the abandon budget is low.
  const leads = demoLeads();
  const { campaign } = await admin.call<{ campaign: { id: string } }>("POST", "/campaigns", {
    name: "Policy renewals",
    regulatory_profile: leads.profile,
    dial_mode: "progressive",
    dial_ratio: 2,
    calling_window: { start: "00:00", end: "23:59" },
    max_attempts: 3,
    retry_delay_seconds: 300,
  });
  await admin.call("PUT", `/campaigns/${campaign.id}/messages/abandon`, undefined, {
    type: "audio/wav",
    bytes: standInMessage(),
  });
  await admin.call("POST", "/campaigns", { name: "Winter outreach (draft)", dial_mode: "preview" });
  const { lead_list: list } = await admin.call<{ lead_list: { id: string } }>(
    "POST",
    `/campaigns/${campaign.id}/lead-lists`,
    { name: "Renewals due", caller_id: "+14155550100" },
  );
  const form = new FormData();
  form.append("phone_column", "phone");
  form.append("timezone_column", "timezone");
  form.append(
    "file",
    new Blob([leadsCsv(leads.numbers, random)], { type: "text/csv" }),
    "renewals.csv",
  );
  const report = await admin.call<{ import: { imported: number } }>(
    "POST",
    `/campaigns/${campaign.id}/lead-lists/${list.id}/import`,
    undefined,
    form,
  );
  const { key: nodeKey } = await admin.call<{ key: string }>("POST", "/edge-nodes", {
    name: "Simulated edge",
    max_concurrent_calls: 20,
  });
  await admin.call("POST", `/campaigns/${campaign.id}/status`, { action: "start" });
  return { campaignId: campaign.id, agents, nodeKey, imported: report.import.imported };
}

const running: { stop(): void }[] = [];
const stop = () => {
  for (const part of running.reverse()) part.stop();
  setTimeout(() => process.exit(0), 500);
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);

const server = await startServer();
running.push(server);
const base = new DemoClient(server.baseUrl);
const world = await seed(base);
const problems = (error: unknown) => {
  if (process.env.DEMO_VERBOSE) console.error(error);
};
const node = new SimulatedEdgeNode(
  base.as(world.nodeKey),
  20,
  () => drawCall(DEMO_MODEL, random, 12),
  problems,
);
node.start();
const simulated = world.agents.map(
  (client) => new SimulatedAgent(client, world.campaignId, random),
);
for (const agent of simulated) agent.start();

console.log(`
Dialer demo at ${server.baseUrl}
  ${world.imported} leads in "Policy renewals", ${SIMULATED_AGENTS} simulated agents and a simulated edge node calling.

Sign in (workspace demo.test):
  supervisor  supervisor@demo.test  ${PASSWORD}   → the wallboard
  admin       admin@demo.test       ${PASSWORD}   → campaigns, leads, users, keys
  agent       you@demo.test         ${FIRST_PASSWORD}  → take calls (choose your own password first)
  platform    platform@demo.test    ${PASSWORD}   (no workspace) → tenants

Ctrl-C stops it; the demo's database lives in memory.
`);
