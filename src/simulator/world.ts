import { liveUserOf } from "../../actors/tenant.machine.ts";
import type { DatabaseHandle } from "../../db/client.ts";
import { insertTenant } from "../../db/queries/tenants.ts";
import { insertUser } from "../../db/queries/users.ts";
import { createServiceDeps } from "../app.ts";
import type { ProfileName } from "../compliance/profiles.ts";
import { loadConfig } from "../config.ts";
import type { RequestMeta, ServiceDeps } from "../deps.ts";
import { hashPassword } from "../identity/passwords.ts";
import type { NodePrincipal, UserPrincipal } from "../identity/principal.ts";
import { silentLogger } from "../logger.ts";
import { standInMessage } from "../media/stand-in-message.ts";
import { changeCampaignStatus, createCampaign } from "../modules/campaigns/service.ts";
import { registerEdgeNode } from "../modules/edge-nodes/service.ts";
import { createLeadList, importLeadFile } from "../modules/leads/service.ts";
import { storeMessage } from "../modules/messages/service.ts";
import type { SimulatedLeads } from "./legal-day.ts";

/** A clock that moves only when the simulation moves it. */
export class SteppedClock {
  constructor(private current: number) {}
  now() {
    return this.current;
  }
  set(at: number) {
    this.current = at;
  }
}

export interface WorldOptions {
  database: DatabaseHandle;
  clock: SteppedClock;
  agents: number;
  leads: number;
  /** The leads' numbers and their zone: the calling hours and the hourly answer factor follow it. */
  place: SimulatedLeads;
  /** The campaign's `regulatory_profile`. */
  profile: ProfileName;
  dialMode: "progressive" | "predictive";
  dialRatio: number;
  maxAbandonRate: number;
}

/** Everything a simulated day runs against: the app's services over a real database. */
export interface World {
  deps: ServiceDeps;
  tenantId: string;
  campaignId: string;
  admin: UserPrincipal;
  agents: UserPrincipal[];
  node: NodePrincipal;
  nodeCapacity: number;
}

const META: RequestMeta = { requestId: "simulator" };
/** Nobody signs in to a simulated day; the services only need a valid secret. */
const JWT_SECRET = "simulator-secret-that-is-at-least-32-bytes";
/** Far beyond any simulated day: the principals are built here, not from tokens. */
const NEVER = Date.parse("2100-01-01T00:00:00Z");

async function user(
  deps: ServiceDeps,
  tenantId: string,
  email: string,
  role: "admin" | "agent",
  passwordHash: string,
): Promise<UserPrincipal> {
  const at = new Date(deps.clock.now());
  const row = await insertUser(deps.db, {
    id: Bun.randomUUIDv7(),
    tenantId,
    email,
    passwordHash,
    role,
    status: "active",
    mustChangePassword: false,
    createdAt: at,
    updatedAt: at,
  });
  return { kind: "user", user: liveUserOf(row), tenantId, role, tokenExpiresAt: NEVER };
}

/**
 * A workspace with an admin, `agents` agents, one running campaign (in `dialMode` at
 * `dialRatio`, under `profile`) whose leads came in through the real CSV import, and one edge node. Nothing
 * here bypasses the services the routes call.
 */
export async function buildWorld(options: WorldOptions): Promise<World> {
  const config = loadConfig({
    AUTH_JWT_SECRET: JWT_SECRET,
    DATA_DIR: "memory://",
    IMPORT_MAX_ROWS: String(Math.max(1_000_000, options.leads)),
  });
  const deps = createServiceDeps({
    database: options.database,
    config,
    clock: options.clock,
    logger: silentLogger,
    jwtSecret: JWT_SECRET,
  });
  const at = new Date(options.clock.now());
  const tenant = await insertTenant(deps.db, {
    id: Bun.randomUUIDv7(),
    name: "Simulated contact center",
    domain: `sim-${at.getTime()}.test`,
    rateLimitPerMinute: config.RATE_LIMIT_DEFAULT_PER_MINUTE,
    createdAt: at,
    updatedAt: at,
  });
  // One hash for everyone: nobody logs in, and argon2 costs 20 ms a user.
  const passwordHash = await hashPassword(crypto.randomUUID());
  const admin = await user(deps, tenant.id, "admin@sim.test", "admin", passwordHash);
  const agents: UserPrincipal[] = [];
  for (let index = 0; index < options.agents; index++)
    agents.push(await user(deps, tenant.id, `agent-${index}@sim.test`, "agent", passwordHash));

  const { campaign } = await createCampaign(
    deps,
    admin,
    tenant.id,
    {
      name: "Simulated day",
      dial_mode: options.dialMode,
      dial_ratio: options.dialRatio,
      max_abandon_rate: options.maxAbandonRate,
      regulatory_profile: options.profile,
    },
    META,
  );
  await storeMessage(
    deps,
    admin,
    tenant.id,
    { campaignId: campaign.id, kind: "abandon" },
    new Request("http://simulator/message", {
      method: "PUT",
      headers: { "content-type": "audio/wav" },
      body: standInMessage(),
    }),
    META,
  );
  const { lead_list: list } = await createLeadList(
    deps,
    admin,
    tenant.id,
    campaign.id,
    { name: "Simulated leads", caller_id: "+14155550100" },
    META,
  );
  let csv = "phone,timezone\n";
  for (let index = 0; index < options.leads; index++)
    csv += `${options.place.phone(index)},${options.place.timezone}\n`;
  const form = new FormData();
  form.append("phone_column", "phone");
  form.append("timezone_column", "timezone");
  form.append("file", new Blob([csv], { type: "text/csv" }), "leads.csv");
  const request = new Request("http://simulator/import", { method: "POST", body: form });
  const imported = await importLeadFile(
    deps,
    admin,
    tenant.id,
    campaign.id,
    list.id,
    request,
    META,
  );
  if (imported.import.imported !== options.leads)
    throw new Error(`imported ${imported.import.imported} of ${options.leads} leads`);

  // Room for five calls in flight per agent: the contract's highest dial_ratio.
  const nodeCapacity = Math.min(10_000, Math.max(10, options.agents * 6));
  const { edge_node: node } = await registerEdgeNode(
    deps,
    admin,
    tenant.id,
    { name: "simulated edge", max_concurrent_calls: nodeCapacity },
    META,
  );
  const started = await changeCampaignStatus(
    deps,
    admin,
    tenant.id,
    campaign.id,
    "start",
    undefined,
    META,
  );
  if (started.status !== 200) throw new Error(`the campaign did not start: ${started.status}`);
  return {
    deps,
    tenantId: tenant.id,
    campaignId: campaign.id,
    admin,
    agents,
    node: {
      kind: "edge_node",
      nodeId: node.id,
      tenantId: tenant.id,
      maxConcurrentCalls: nodeCapacity,
    },
    nodeCapacity,
  };
}
