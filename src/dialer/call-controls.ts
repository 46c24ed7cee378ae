import type { CampaignSnapshot } from "../../actors/campaign.machine.ts";
import type {
  CallControlCommand,
  CallEventCommand,
  CallReply,
  CampaignEffect,
  CommandInputs,
  Decision,
} from "../../actors/commands.ts";
import type { LiveCall } from "../../actors/dialing.ts";
import type { CallRow } from "../../db/queries/dialer.ts";
import type { CallTransfer } from "../../db/schema/columns.ts";
import { conflict, forbidden, notFound, unprocessable } from "../errors.ts";
import { type AgentPresence, freeForTransfer } from "./agents.ts";
import { rowOf } from "./call-decide.ts";
import { callView } from "./model.ts";
import { nodeCommandOf } from "./node-commands.ts";

/**
 * Call control as pure steps: an agent's (or a supervisor's) hang-up or blind transfer of a
 * call, each a command for the call's node, and what the node reports of a transfer. The node
 * carries a command out and reports what follows as for any call: a hang-up ends with its
 * `ended`; a transfer with `transferred` (the lead is with the new agent or number) or
 * `transfer_failed` (the lead is still with its agent).
 */

type CallDecision = Decision<CallReply>;

/** The call a control names: live in the campaign, and the caller's to control. */
function controlled(
  snapshot: CampaignSnapshot,
  command: CallControlCommand,
  inputs: CommandInputs,
): LiveCall {
  const call = snapshot.context.dialing?.calls.get(command.callId);
  const agentId = call ? call.agentId : inputs.call?.agentId;
  if (!call && !inputs.call) throw notFound("call");
  // Who may control it first: another agent learns nothing of the call, not even its end.
  if (!command.by.supervising && agentId !== command.by.actorId)
    throw forbidden("only the call's agent or a supervisor may control it");
  if (!call) throw conflict("the call is over");
  // Sent on to a number, the conversation is no longer the agent's to end or send again.
  const transfer = call.media?.transfer;
  if (transfer?.status === "done" && transfer.to_phone !== null)
    throw conflict(
      `the call was transferred to ${transfer.to_phone} and goes on without its agent`,
    );
  return call;
}

export function decideCallControl(
  snapshot: CampaignSnapshot,
  command: CallControlCommand,
  inputs: CommandInputs,
  now: number,
): CallDecision {
  const call = controlled(snapshot, command, inputs);
  const { control } = command;
  const hangingUp = call.media?.hangup_requested_at !== undefined;
  if (control.kind === "hangup") {
    // Asked again (a second click, a retried request): the node already has its command.
    if (hangingUp) return unchanged(call);
    const row: CallRow = {
      ...rowOf(call),
      media: { ...call.media, hangup_requested_at: new Date(now).toISOString() },
      updatedAt: new Date(now),
    };
    const live: LiveCall = { ...row, lead: call.lead };
    return {
      writes: [
        { type: "save", row },
        { type: "nodeCommand", command: commandFor(call, inputs, "hangup", {}, now) },
      ],
      adopt: () => [{ type: "dialing.callChanged", call: live }],
      effects: () => [{ type: "announce", call: live, event: "hangup_requested" }],
      reply: () => ({ call: callView(row) }),
    };
  }
  if (hangingUp) throw conflict("the call is being hung up");
  if (!call.bridged || call.status !== "answered")
    throw conflict("only a call connected to an agent can be transferred");
  if (call.media?.transfer?.status === "pending")
    throw conflict("a transfer of this call is under way");
  const target = transferTarget(call, control, inputs);
  const transfer: CallTransfer = {
    from_agent_id: call.agentId,
    to_agent_id: target.agent?.userId ?? null,
    to_phone: control.phone,
    requested_at: new Date(now).toISOString(),
    status: "pending",
    at: null,
    reason: null,
  };
  const row: CallRow = {
    ...rowOf(call),
    media: { ...call.media, transfer },
    updatedAt: new Date(now),
  };
  const live: LiveCall = { ...row, lead: call.lead };
  const to = { agent_id: transfer.to_agent_id, agent_uri: target.uri, phone: control.phone };
  const receiving = target.agent?.userId;
  const offered = receiving !== undefined && snapshot.context.dialing?.previews.has(receiving);
  return {
    writes: [
      { type: "save", row },
      { type: "nodeCommand", command: commandFor(call, inputs, "transfer", { to }, now) },
    ],
    adopt: () => [
      { type: "dialing.callChanged", call: live },
      ...(offered
        ? [{ type: "dialing.previewEnded" as const, agentId: receiving, back: true }]
        : []),
    ],
    effects: () => [
      ...(target.agent
        ? [
            {
              type: "agent" as const,
              agent: { ...target.agent, state: "reserved" as const, callId: call.id },
              at: now,
            },
          ]
        : []),
      { type: "announce", call: live, event: "transfer_requested", agentMessage: "call.transfer" },
    ],
    reply: () => ({ call: callView(row) }),
  };
}

/** A control that changes nothing: the call as it is. */
const unchanged = (call: LiveCall): CallDecision => {
  const row = rowOf(call);
  return {
    writes: [],
    adopt: () => [],
    effects: () => [],
    reply: () => ({ call: callView(row) }),
  };
};

function commandFor(
  call: LiveCall,
  inputs: CommandInputs,
  type: "hangup" | "transfer",
  payload: Record<string, unknown>,
  now: number,
) {
  return nodeCommandOf({
    id: inputs.newId(),
    tenantId: call.tenantId,
    nodeId: call.edgeNodeId,
    callId: call.id,
    type,
    payload,
    at: now,
  });
}

/** Where a transfer goes: a ready agent of the campaign with a phone, or an allowed number. */
function transferTarget(
  call: LiveCall,
  control: Extract<CallControlCommand["control"], { kind: "transfer" }>,
  inputs: CommandInputs,
): { agent: AgentPresence | null; uri: string | null } {
  const known = inputs.transferTarget;
  if (control.agentId !== null) {
    const agent = inputs.agents.get(control.agentId);
    const ready =
      agent &&
      agent.tenantId === call.tenantId &&
      agent.campaignId === call.campaignId &&
      freeForTransfer(agent) &&
      agent.userId !== call.agentId;
    if (!ready)
      throw unprocessable("agent_id", "is not another agent of this campaign free to take a call");
    const uri = known && "phoneUri" in known ? known.phoneUri : null;
    if (!uri) throw unprocessable("agent_id", "has no phone (phone_uri) to transfer the call to");
    return { agent, uri };
  }
  const numbers = known && "numbers" in known ? known.numbers : [];
  if (control.phone === null || !numbers.includes(control.phone))
    throw unprocessable("phone", "is not one of the workspace's transfer numbers");
  return { agent: null, uri: null };
}

/**
 * The node's word on a transfer: the lead is with its new agent (who is now on the call, the
 * first free after the campaign's breath), or with a number (its agent wraps the call up); or
 * the transfer failed, the lead is still with its agent and the agent asked for is free again.
 * A report with no transfer under way (a repeat) changes nothing.
 */
export function transferReported(
  snapshot: CampaignSnapshot,
  call: LiveCall,
  command: CallEventCommand,
  inputs: CommandInputs,
): CallDecision {
  const transfer = call.media?.transfer;
  if (transfer?.status !== "pending") return unchanged(call);
  const row = rowOf(call);
  const at = new Date(command.at);
  const done = command.event === "transferred";
  const receiving = transfer.to_agent_id ? inputs.agents.get(transfer.to_agent_id) : undefined;
  const holdsIt = receiving?.callId === call.id;
  const changed: CallRow = {
    ...row,
    agentId: done && transfer.to_agent_id ? transfer.to_agent_id : row.agentId,
    media: {
      ...call.media,
      transfer: {
        ...transfer,
        status: done ? "done" : "failed",
        at: at.toISOString(),
        reason: done ? null : (command.reason ?? "the transfer failed"),
      },
    },
    updatedAt: at,
  };
  const live: LiveCall = { ...changed, lead: call.lead };
  const { campaign } = snapshot.context;
  const agents: CampaignEffect[] = [];
  if (!done) {
    agents.push(...freedFromTransfer(call, command.at));
  } else {
    if (receiving && holdsIt)
      agents.push({
        type: "agent",
        agent: { ...receiving, state: "on_call", callId: call.id },
        at: command.at,
      });
    if (call.agentId) {
      // Sent to an agent, the call is theirs to disposition; sent to a number, it is still ours.
      const handedOver = transfer.to_agent_id !== null;
      agents.push({
        type: "agentLeaves",
        userId: call.agentId,
        callId: call.id,
        state: handedOver ? "ready" : "wrap_up",
        breathMs: handedOver ? campaign.afterCallPauseSeconds * 1000 : 0,
        at: command.at,
      });
    }
  }
  return {
    writes: [{ type: "save", row: changed }],
    adopt: () => [{ type: "dialing.callChanged", call: live }],
    effects: () => [
      ...agents,
      {
        type: "announce",
        call: live,
        event: command.event,
        agentMessage: done && transfer.to_agent_id ? "call.connected" : "call.transfer",
      },
    ],
    reply: () => ({ call: callView(changed) }),
  };
}

/** The agent a transfer under way was to go to is free again (the call ended, or it failed). */
export function freedFromTransfer(call: CallRow, at: number): CampaignEffect[] {
  const transfer = call.media?.transfer;
  if (transfer?.status !== "pending" || !transfer.to_agent_id) return [];
  return [
    {
      type: "agentLeaves",
      userId: transfer.to_agent_id,
      callId: call.id,
      state: "ready",
      breathMs: 0,
      at,
    },
  ];
}
