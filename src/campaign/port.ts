import type { CampaignRecord, CampaignSnapshot } from "../../actors/campaign.machine.ts";
import {
  agentAfter,
  type CampaignCommand,
  type CampaignEffect,
  type CampaignWrite,
  type CommandInputs,
  type CommitFacts,
} from "../../actors/commands.ts";
import { HOPPER_SIZE, hopperRefill, noLeads } from "../../actors/dialing.ts";
import type { IdempotencyEntry } from "../../actors/idempotency.ts";
import type { CommandPort } from "../../actors/ports.ts";
import type { RawClient } from "../../db/client.ts";
import {
  commitStatusChanges,
  findTenantCampaign,
  insertIdempotencyKey,
  type StatusChange,
  updateCampaignSettings,
} from "../../db/queries/campaigns.ts";
import {
  bridgeCall,
  claimLeads,
  endCall,
  findNodeCall,
  findTenantCall,
  readHopper,
  recordOptOut,
  saveLiveCall,
  settleDisposition,
} from "../../db/queries/dialer.ts";
import { findDialLead, nodeWithRoom } from "../../db/queries/dials.ts";
import { countLeadsByState } from "../../db/queries/leads.ts";
import { writeMessage } from "../../db/queries/messages.ts";
import { insertNodeCommand } from "../../db/queries/node-commands.ts";
import { LeaseLostError } from "../cluster/leases.ts";
import { profileInForce, windowBounds } from "../compliance/lead-rules.ts";
import type { ServiceDeps } from "../deps.ts";
import { rowOf } from "../dialer/call-decide.ts";
import { callView, previewView } from "../dialer/model.ts";
import { wakeNode } from "../dialer/node-commands.ts";
import { paceCampaign } from "../dialer/pacing.ts";
import { screenPopUrl } from "../dialer/screen-pop.ts";
import { ApiError } from "../errors.ts";
import { auditedWrite, recordAudit } from "../identity/audit.ts";
import { isUuid } from "../identity/tenant-scope.ts";
import { GroupCommit } from "../lib/group-commit.ts";
import { campaignView } from "../modules/campaigns/model.ts";
import { recountCampaigns } from "../modules/campaigns/service.ts";
import { campaignRecordOf } from "../modules/campaigns/store.ts";
import { endListedLeads } from "../modules/dnc/service.ts";
import { NODE_OFFLINE_AFTER_MS } from "../modules/edge-nodes/model.ts";
import { campaignStatusMessage } from "../realtime/hub.ts";

/**
 * The one port of a campaign's commands: the reads a command is decided on, the commit of
 * the writes a step decided (each a statement written once, fenced by the campaign's lease),
 * and what follows once the actor has adopted them: agents' next states on the board and the
 * pushes to supervisors and agents.
 */
export function campaignPort(deps: ServiceDeps): CommandPort {
  return {
    gather: (snapshot, command, now) => gather(deps, snapshot, command, now),
    async commit(writes) {
      const facts: CommitFacts = {};
      // A batch's calls (each written once at most) go side by side, pipelined on the pool's
      // connections; the rest follow. A transaction would hold a connection for its round trips.
      const calls = writes.filter(isCallWrite);
      const listed = await Promise.all(calls.map((write) => commitCall(deps, deps.rawDb, write)));
      if (listed.some(Boolean))
        facts.listedLeads = new Set(calls.filter((_, at) => listed[at]).map(leadOfCallWrite));
      for (const write of writes) if (!isCallWrite(write)) await commitOne(deps, write, facts);
      return facts;
    },
    carryOut: (effects) => carryOut(deps, effects),
  };
}

async function gather(
  deps: ServiceDeps,
  snapshot: CampaignSnapshot,
  command: CampaignCommand,
  now: number,
): Promise<CommandInputs> {
  const inputs: CommandInputs = {
    agents: deps.dialer.agents,
    pacer: deps.dialer.pacer,
    newId: () => Bun.randomUUIDv7(),
  };
  const { campaign, dialing } = snapshot.context;
  switch (command.type) {
    case "claim": {
      // The hopper is read again when empty or stale, and only for a campaign that may dial.
      const refill = dialing && campaign.status === "running" && hopperRefill(dialing, now);
      if (!dialing || !refill) break;
      const agents = deps.dialer.agents.inCampaign(campaign.id);
      if (paceCampaign(campaign, dialing, agents, now, deps.dialer.pacer).calls <= 0) break;
      // The database cuts by the widest hours the campaign and its profile allow; each lead's
      // own rules (its states, every zone it may be in) are applied when it is taken.
      const bounds = windowBounds(profileInForce(campaign.regulatoryProfile, now), {
        start: campaign.callingWindowStart,
        end: campaign.callingWindowEnd,
      });
      if (!bounds) break;
      const leads = await readHopper(deps.db, {
        campaignId: campaign.id,
        now: new Date(now),
        windowStart: bounds.start,
        windowEnd: bounds.end,
        maxAttempts: campaign.maxAttempts,
        limit: HOPPER_SIZE,
        fresh: refill === "all",
      });
      inputs.hopper = { leads, dueOnly: refill === "due" };
      break;
    }
    case "call.event": {
      // A call no longer in flight (a repeat of its end) is answered as the database holds it.
      const live = dialing?.calls.get(command.callId);
      if (!live || live.edgeNodeId !== command.nodeId)
        inputs.call = await findNodeCall(deps.db, command);
      break;
    }
    case "call.disposition": {
      // A call in flight or in wrap-up is known; one the campaign no longer keeps is read.
      const live = dialing?.calls.get(command.callId);
      const known = live ? rowOf(live) : dialing?.wrapping.get(command.callId);
      const call =
        known ??
        (await findTenantCall(deps.db, { tenantId: campaign.tenantId, callId: command.callId }));
      inputs.call = call?.campaignId === campaign.id ? call : undefined;
      break;
    }
    case "call.dial": {
      const since = new Date(now - NODE_OFFLINE_AFTER_MS);
      const { leadId } = command;
      const [node, lead] = await Promise.all([
        nodeWithRoom(deps.db, { tenantId: campaign.tenantId, since }),
        leadId !== null && isUuid(leadId)
          ? findDialLead(deps.db, { campaignId: campaign.id, leadId })
          : undefined,
      ]);
      inputs.dialNode = node;
      inputs.dialLead = lead;
      break;
    }
    case "call.control": {
      const { tenantId } = campaign;
      if (!dialing?.calls.has(command.callId)) {
        const call = await findTenantCall(deps.db, { tenantId, callId: command.callId });
        inputs.call = call?.campaignId === campaign.id ? call : undefined;
        break;
      }
      const { control } = command;
      if (control.kind !== "transfer") break;
      if (control.agentId !== null) {
        const user = isUuid(control.agentId)
          ? await deps.tenants.user(tenantId, control.agentId)
          : undefined;
        inputs.transferTarget = { phoneUri: user?.phoneUri ?? null };
      } else {
        inputs.transferTarget = {
          numbers: (await deps.tenants.tenant(tenantId))?.transferNumbers ?? [],
        };
      }
      break;
    }
    case "agent.state": {
      const named = command.campaignId;
      if (named !== null && named !== campaign.id) {
        inputs.namedCampaignKnown =
          isUuid(named) &&
          (await findTenantCampaign(deps.db, {
            tenantId: campaign.tenantId,
            campaignId: named,
          })) !== undefined;
      }
      break;
    }
    case "leads.recount":
      if (!dialing) break;
      inputs.leads = noLeads();
      for (const { state, total } of await countLeadsByState(deps.db, campaign.id))
        inputs.leads[state] = total;
      break;
  }
  return inputs;
}

async function commitOne(deps: ServiceDeps, write: CampaignWrite, facts: CommitFacts) {
  const raw = deps.rawDb;
  const fenceOf = (campaignId: string) => deps.campaigns.leases.fenceOf(campaignId);
  switch (write.type) {
    case "status":
      facts.relayed = await commitStatus(deps, write);
      return;
    case "reply":
      await insertIdempotencyKey(
        deps.db,
        entryRow(write.campaignId, write.entry),
        fenceOf(write.campaignId),
      );
      return;
    case "settings":
      facts.campaign = await commitSettings(deps, write);
      return;
    case "message": {
      const written = await commitMessage(deps, write);
      facts.campaign = written.campaign;
      facts.message = written.message;
      return;
    }
    case "claim":
      ({ marked: facts.marked, unplaced: facts.unplaced } = await claimLeads(raw, {
        claim: write.claim,
        fence: fenceOf(write.claim.campaignId),
      }));
      return;
    case "nodeCommand":
      if (write.onlyIfMarked && !facts.marked?.some((mark) => mark.id === write.onlyIfMarked))
        return;
      await insertNodeCommand(deps.db, write.command);
      wakeNode(deps, write.command.edgeNodeId);
      return;
    default:
      return commitCall(deps, deps.rawDb, write);
  }
}

type CallWrite = Extract<CampaignWrite, { type: "save" | "bridge" | "end" | "settle" | "optOut" }>;

const isCallWrite = (write: CampaignWrite): write is CallWrite =>
  write.type === "save" ||
  write.type === "optOut" ||
  write.type === "bridge" ||
  write.type === "end" ||
  write.type === "settle";

const leadOfCallWrite = (write: CallWrite) =>
  (write.type === "end" ? write.ended : write.type === "settle" ? write.call : write.row).leadId;

/**
 * A call's change, its CDR and its lead's next state, as the call's step decided them. Answers
 * whether the lead ended `DoNotCall` instead, its number listed while the call was in flight.
 */
async function commitCall(deps: ServiceDeps, raw: RawClient, write: CallWrite): Promise<boolean> {
  const fenceOf = (campaignId: string) => deps.campaigns.leases.fenceOf(campaignId);
  switch (write.type) {
    case "save":
      await saveLiveCall(raw, { call: write.row, fence: fenceOf(write.row.campaignId) });
      return false;
    case "bridge":
      await bridgeCall(raw, { call: write.row, fence: fenceOf(write.row.campaignId) });
      return false;
    case "end":
      return endCall(raw, {
        ...write,
        cdrId: Bun.randomUUIDv7(),
        fence: fenceOf(write.ended.campaignId),
      });
    case "settle":
      return settleDisposition(raw, { ...write, fence: fenceOf(write.call.campaignId) });
    case "optOut":
      await recordOptOut(raw, {
        call: write.row,
        at: write.at,
        fence: fenceOf(write.row.campaignId),
      });
      return false;
  }
}

/** Status changes in batches of at most this many (one statement each). */
const STATUS_BATCH = 200;
/** Batches written at once: while one commits, the next is already on its way. */
const STATUS_BATCHES_AT_ONCE = 2;

/**
 * Commits status changes of different campaigns together when they arrive while earlier
 * ones are being written: at thousands of changes a second, one statement and one commit
 * carry tens of them. A change to one campaign is never in a batch with another change to the
 * same campaign (its commands run one at a time), and each caller hears of its own change
 * only once its batch has committed.
 */
export const statusCommitsOn = (raw: RawClient) =>
  new GroupCommit<StatusChange, boolean>(
    async (changes) => {
      const updated = await commitStatusChanges(raw, changes);
      return changes.map((change) => updated.has(change.campaignId));
    },
    STATUS_BATCHES_AT_ONCE,
    STATUS_BATCH,
  );

/**
 * Writes a status change with others of other campaigns in one statement; returns whether its
 * commit told other processes' supervisors of it.
 */
async function commitStatus(
  deps: ServiceDeps,
  write: Extract<CampaignWrite, { type: "status" }>,
): Promise<boolean> {
  const { campaign, entry } = write;
  const { token } = deps.campaigns.leases.fenceOf(campaign.id);
  const push = deps.realtime.campaignMessageInCommit(
    campaign.tenantId,
    campaign.id,
    campaignStatusMessage(campaign.id, campaign.status, write.to),
  );
  const updated = await deps.statusCommits.submit({
    campaignId: campaign.id,
    leaseToken: token,
    tenantId: campaign.tenantId,
    expectedVersion: campaign.version,
    action: write.action,
    from: campaign.status,
    to: write.to,
    ...write.by,
    requestId: write.requestId,
    at: write.at,
    idempotency: entry && entryRow(campaign.id, entry),
    push,
  });
  if (updated) return push !== undefined;
  // Only another owner writes a campaign: this process's lease has been taken over.
  if (deps.campaigns.leases.shared) throw new LeaseLostError(campaign.id);
  throw new Error(`campaign ${campaign.id} changed outside its actor`);
}

/** Writes new settings with their audit record; returns the campaign as written. */
async function commitSettings(
  deps: ServiceDeps,
  write: Extract<CampaignWrite, { type: "settings" }>,
): Promise<CampaignRecord> {
  const { campaign } = write;
  const row = await auditedWrite(
    deps.db,
    (tx) =>
      updateCampaignSettings(tx, {
        id: campaign.id,
        fence: deps.campaigns.leases.fenceOf(campaign.id),
        expectedVersion: campaign.version,
        settings: write.settings,
        updatedAt: write.at,
      }),
    {
      tenantId: campaign.tenantId,
      actor: write.by,
      action: "campaign.updated",
      targetType: "campaign",
      requestId: write.requestId,
      at: write.at,
      details: { changes: write.changes },
    },
  );
  if (!row) throw new ApiError(409, "version_conflict", "the campaign changed meanwhile");
  return campaignRecordOf(row);
}

/**
 * Stores a message (or removes its audio), sets the campaign's version of it and records the
 * change, in one transaction; returns both as written.
 */
async function commitMessage(
  deps: ServiceDeps,
  write: Extract<CampaignWrite, { type: "message" }>,
) {
  const { campaign, audio } = write;
  const written = await deps.db.transaction(async (tx) => {
    const stored = await writeMessage(tx, {
      campaignId: campaign.id,
      tenantId: campaign.tenantId,
      kind: write.kind,
      audio: audio && { ...audio, bytes: Buffer.from(audio.base64, "base64") },
      updatedBy: write.by.actorId,
      at: write.at,
      fence: deps.campaigns.leases.fenceOf(campaign.id),
    });
    if (!stored) return undefined;
    await recordAudit(tx, {
      tenantId: campaign.tenantId,
      ...write.by,
      action: audio ? "campaign.message_recorded" : "campaign.message_removed",
      targetType: "campaign",
      targetId: campaign.id,
      requestId: write.requestId,
      details: {
        kind: write.kind,
        version: stored.message.version,
        ...(audio && { duration_ms: audio.durationMs, sha256: audio.sha256 }),
      },
      at: write.at,
    });
    return stored;
  });
  if (written) return { campaign: campaignRecordOf(written.campaign), message: written.message };
  if (deps.campaigns.leases.shared) throw new LeaseLostError(campaign.id);
  throw new Error(`campaign ${campaign.id} changed outside its actor`);
}

const entryRow = (campaignId: string, entry: IdempotencyEntry) => ({
  campaignId,
  key: entry.key,
  bodyHash: entry.bodyHash,
  responseStatus: entry.status,
  responseBody: entry.text,
  expiresAt: new Date(entry.expiresAt),
});

/**
 * Carries out what a decision left to the world once its actor adopted it: agents' states
 * (an agent leaves a call only if still on it), pushes, the pacing kept for charts. Returns
 * the commit of agents' rows that a reply must wait for, if any.
 */
function carryOut(deps: ServiceDeps, effects: CampaignEffect[]): Promise<unknown> | undefined {
  const agents = deps.dialer.agents;
  let settled: Promise<unknown> | undefined;
  for (const effect of effects) {
    switch (effect.type) {
      case "agent":
      case "agentLeaves":
      case "agentWrappedUp": {
        const userId = effect.type === "agent" ? effect.agent.userId : effect.userId;
        const next = agentAfter(effect, agents.get(userId));
        if (next) agents.set(next, effect.at);
        break;
      }
      case "agentPersisted":
        settled = agents.persisted(effect.userId);
        break;
      case "statusToAgents": {
        const user =
          effect.by.actorType === "user" && effect.by.actorId
            ? deps.tenants.loadedUser(effect.tenantId, effect.by.actorId)
            : undefined;
        const message = {
          ...campaignStatusMessage(effect.campaignId, effect.from, effect.to),
          by: {
            actor_type: effect.by.actorType,
            actor_id: effect.by.actorId,
            email: user?.email ?? null,
          },
        };
        for (const agent of agents.inCampaign(effect.campaignId))
          deps.realtime.toAgent(effect.tenantId, agent.userId, message);
        break;
      }
      case "statsChanged":
        deps.realtime.statsChanged(effect.tenantId, effect.campaignId);
        break;
      case "recount":
        // Not awaited: the recount is the campaign's next command, after this one.
        void recountCampaigns(deps, effect.tenantId, [effect.campaignId]);
        break;
      case "listed":
        // The caller hears back once the number's other leads have ended.
        settled = Promise.all([settled, endListedLeads(deps, effect.tenantId, [effect.phone])]);
        break;
      case "settingsChanged": {
        const { campaign } = effect;
        deps.realtime.toCampaign(campaign.tenantId, campaign.id, {
          type: "campaign.updated",
          campaign: campaignView(campaign),
        });
        deps.realtime.statsChanged(campaign.tenantId, campaign.id);
        break;
      }
      case "previewOffered": {
        const campaignId = agents.get(effect.agentId)?.campaignId;
        if (!campaignId) break;
        deps.realtime.toAgent(effect.tenantId, effect.agentId, {
          type: "preview.offered",
          preview: previewView(campaignId, effect, effect.offeredAt, effect.expiresAt),
        });
        break;
      }
      case "paced":
        deps.dialer.paced.set(effect.campaignId, { ...effect.pacing, at: effect.at });
        break;
      case "announce":
        announce(deps, effect);
        break;
    }
  }
  return settled;
}

/**
 * Tells supervisors of a call's change, and its agent when the change is theirs. Built from
 * the actor's state alone: a push never reads the database.
 */
function announce(deps: ServiceDeps, effect: Extract<CampaignEffect, { type: "announce" }>) {
  const { call, event, agentMessage } = effect;
  const view = callView(call);
  deps.realtime.toCampaign(call.tenantId, call.campaignId, {
    type: "call.event",
    event,
    call: view,
  });
  deps.realtime.statsChanged(call.tenantId, call.campaignId);
  if (!agentMessage || !call.agentId) return;
  const lead = agentMessage !== "call.ended" && "lead" in call ? call.lead : undefined;
  const template = deps.campaigns.peek(call.campaignId)?.campaign.screenPopUrl;
  const screenPop =
    agentMessage === "call.connected" && lead && template
      ? { screen_pop_url: screenPopUrl(template, { call: view, lead }) }
      : {};
  deps.realtime.toAgent(call.tenantId, call.agentId, {
    type: agentMessage,
    call: view,
    ...(lead ? { lead } : {}),
    ...screenPop,
  });
}
