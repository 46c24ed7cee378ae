import {
  decideCallEvent,
  decideDisposition,
  decideExpiry,
  decideReconcile,
} from "../src/dialer/call-decide.ts";
import { decideClaim } from "../src/dialer/claim-decide.ts";
import { decideAgentState } from "../src/modules/agents/decide.ts";
import { decideSettings, decideStats, decideStatus } from "../src/modules/campaigns/decide.ts";
import { decideMessage } from "../src/modules/messages/decide.ts";
import type { CampaignSnapshot } from "./campaign.machine.ts";
import type { CampaignCommand, CommandInputs, Decision, ReplyOf } from "./commands.ts";

/**
 * Decides any campaign command from the actor's snapshot, what was gathered for it and the
 * time: a pure step, whose refusal is thrown. Each kind of command is decided by the module
 * of its aggregate (docs/ARCHITECTURE.md has the table).
 */
export function decide<C extends CampaignCommand>(
  snapshot: CampaignSnapshot,
  command: C,
  inputs: CommandInputs,
  now: number,
): Decision<ReplyOf<C>> {
  return decideAny(snapshot, command, inputs, now) as Decision<ReplyOf<C>>;
}

function decideAny(
  snapshot: CampaignSnapshot,
  command: CampaignCommand,
  inputs: CommandInputs,
  now: number,
): Decision<unknown> {
  switch (command.type) {
    case "status":
      return decideStatus(snapshot, command, now);
    case "settings":
      return decideSettings(snapshot, command, now);
    case "message":
      return decideMessage(snapshot, command, now);
    case "stats":
      return decideStats(snapshot, inputs, now);
    case "claim":
      return decideClaim(snapshot, command, inputs, now);
    case "call.event":
      return decideCallEvent(snapshot, command, inputs);
    case "call.disposition":
      return decideDisposition(snapshot, command, inputs, now);
    case "agent.state":
      return decideAgentState(snapshot, command, inputs, now);
    case "calls.expire":
      return decideExpiry(snapshot, command, now);
    case "node.reconcile":
      return decideReconcile(snapshot, command, now);
    case "leads.recount":
      // New leads join a live campaign's counts (and its stats) once they are committed.
      return decideRecount(snapshot, inputs);
  }
}

/** Commands that need the campaign's dialing state loaded before they are decided. */
export const needsDialing = (command: CampaignCommand) =>
  command.type !== "status" &&
  command.type !== "settings" &&
  command.type !== "message" &&
  command.type !== "leads.recount";

/** New leads join a live campaign's counts (and its stats) once they are committed. */
function decideRecount(snapshot: CampaignSnapshot, inputs: CommandInputs): Decision<null> {
  const { campaign, dialing } = snapshot.context;
  const { leads } = inputs;
  return {
    writes: [],
    adopt: () => (leads && dialing ? [{ type: "dialing.leadsCounted", leads }] : []),
    effects: () => [{ type: "statsChanged", tenantId: campaign.tenantId, campaignId: campaign.id }],
    reply: () => null,
  };
}

/**
 * Commands that may be decided and committed with others of their campaign: their events do
 * not depend on what their commit reports, and they write only calls, leads and agents.
 */
export const batchable = (command: CampaignCommand) =>
  command.type === "call.event" ||
  command.type === "call.disposition" ||
  command.type === "calls.expire" ||
  command.type === "node.reconcile" ||
  command.type === "agent.state";
