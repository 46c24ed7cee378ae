import {
  ACTION_EVENTS,
  adoptedCampaign,
  type CampaignRecord,
  type CampaignSnapshot,
  type CampaignStatus,
  type StatusAction,
  statusAfter,
} from "../../../actors/campaign.machine.ts";
import { dialingDone } from "../../../actors/dialing.ts";
import {
  bodyHashOf,
  IDEMPOTENCY_WINDOW_MS,
  type IdempotencyEntry,
  type IdempotencyWindow,
} from "../../../actors/idempotency.ts";
import type { CampaignDecision } from "../../../actors/ports.ts";
import type { CampaignSettings } from "../../../db/queries/campaigns.ts";
import { ok } from "../../envelope.ts";
import { ApiError, badRequest } from "../../errors.ts";
import type { AuditInput } from "../../identity/audit.ts";
import { errorEnvelope } from "../../plugins/errors.ts";
import { campaignView } from "./model.ts";

/**
 * A campaign's own commands as pure steps: each decides, from the actor's snapshot and the
 * time alone, what to write, what the actor adopts once it is written and what to answer.
 * The port that commits the writes is `campaignPort` (service.ts); `CampaignRegistry.execute`
 * runs the two in the campaign's queue.
 */

/** Who made a change, as the history and the audit log record it. */
export interface ChangeActor {
  actorType: AuditInput["actorType"];
  actorId: string | null;
}

export type CampaignCommand =
  | {
      type: "status";
      action: StatusAction;
      key: string | undefined;
      actor: ChangeActor;
      requestId: string;
    }
  /** Completes the campaign if its dialing state says it is done. */
  | { type: "complete" }
  | {
      type: "settings";
      /** The version the client based its change on. */
      version: number;
      settings: Partial<CampaignSettings>;
      /** The change as the client sent it, for the audit log. */
      changes: Record<string, unknown>;
      actor: ChangeActor;
      requestId: string;
    };

export type CampaignWrite =
  /** A new status, its history row and the reply under the request's key, in one statement. */
  | {
      type: "status";
      campaign: CampaignRecord;
      to: CampaignStatus;
      action: string;
      actor: ChangeActor;
      requestId: string | null;
      at: Date;
      entry: IdempotencyEntry | undefined;
    }
  /** A refused change's reply, kept under its key. */
  | { type: "reply"; campaignId: string; entry: IdempotencyEntry }
  /** New settings, with their audit record; refused if the campaign is not at its version. */
  | {
      type: "settings";
      campaign: CampaignRecord;
      settings: Partial<CampaignSettings>;
      changes: Record<string, unknown>;
      actor: ChangeActor;
      requestId: string;
      at: Date;
    };

/** What committing reported: whether other processes heard of a status change in its commit, and the row written. */
export interface CommitFacts {
  relayed: boolean;
  campaign?: CampaignRecord | undefined;
}

/** A status reply as JSON text: serialised once, then sent, kept under its key and replayed. */
export interface StatusReply {
  status: number;
  text: string;
  replayed: boolean;
}

export interface CampaignReplies {
  status: StatusReply;
  complete: undefined;
  settings: { campaign: ReturnType<typeof campaignView> };
}

type Decision<R> = CampaignDecision<CampaignWrite, CommitFacts, R>;

/** Decides a campaign command; a refusal is thrown. */
export function campaignStep<C extends CampaignCommand>(
  snapshot: CampaignSnapshot,
  command: C,
  now: number,
): Decision<CampaignReplies[C["type"]]> {
  switch (command.type) {
    case "status":
      return statusStep(snapshot, command, now) as Decision<CampaignReplies[C["type"]]>;
    case "complete":
      return completeStep(snapshot, now) as Decision<CampaignReplies[C["type"]]>;
    case "settings":
      return settingsStep(snapshot, command, now) as Decision<CampaignReplies[C["type"]]>;
  }
  throw new Error("unknown campaign command");
}

/** The digest of each of the three possible bodies, `{"action": …}`, computed once. */
export const ACTION_DIGESTS = Object.fromEntries(
  Object.keys(ACTION_EVENTS).map((action) => [action, bodyHashOf({ action })]),
) as Record<StatusAction, string>;

const nothing = <R>(reply: R): Decision<R> => ({
  writes: [],
  adopt: () => [],
  reply: () => reply,
});

function statusStep(
  snapshot: CampaignSnapshot,
  command: Extract<CampaignCommand, { type: "status" }>,
  now: number,
): Decision<StatusReply> {
  const { key, action } = command;
  const bodyHash = ACTION_DIGESTS[action];
  const { campaign, idempotency } = snapshot.context;
  if (key !== undefined) {
    const earlier = earlierReply(idempotency, key, bodyHash, now);
    if (earlier) return nothing(earlier);
  }
  const remember = (status: number, text: string): IdempotencyEntry | undefined =>
    key === undefined
      ? undefined
      : { key, bodyHash, status, text, expiresAt: now + IDEMPOTENCY_WINDOW_MS };

  const committed = { version: campaign.version + 1, updatedAt: new Date(now).toISOString() };
  const event = { type: ACTION_EVENTS[action], ...committed };
  const to = statusAfter(snapshot, event);
  if (to === undefined) {
    const refusal = new ApiError(
      409,
      "invalid_transition",
      `cannot ${action} a campaign that is ${campaign.status}`,
    );
    const entry = remember(409, JSON.stringify(errorEnvelope(refusal, command.requestId)));
    if (!entry) throw refusal;
    return {
      writes: [{ type: "reply", campaignId: campaign.id, entry }],
      adopt: () => [{ type: "idempotency.recorded", entry }],
      reply: () => ({ status: entry.status, text: entry.text, replayed: false }),
    };
  }
  const text = JSON.stringify(
    ok({ campaign: campaignView(adoptedCampaign(campaign, to, committed)) }),
  );
  const reply = remember(200, text);
  return {
    writes: [
      {
        type: "status",
        campaign,
        to,
        action,
        actor: command.actor,
        requestId: command.requestId,
        at: new Date(now),
        entry: reply,
      },
    ],
    adopt: ({ relayed }) => [{ ...event, reply, relayed }],
    reply: () => ({ status: 200, text, replayed: false }),
  };
}

/** The reply kept under `key`, or undefined when the key is new; another body is 422. */
export function earlierReply(
  window: IdempotencyWindow,
  key: string,
  bodyHash: string,
  now: number,
): StatusReply | undefined {
  const found = window.lookup(key, bodyHash, now);
  if (found.kind === "miss") return undefined;
  if (found.kind === "mismatch") {
    throw new ApiError(
      422,
      "idempotency_key_reused",
      "Idempotency-Key was already used with a different body",
    );
  }
  return { status: found.entry.status, text: found.entry.text, replayed: true };
}

/**
 * A running campaign completes once every lead is final (Completed, Exhausted, DoNotCall) and
 * no call is in flight, as its dialing state counts them. One without leads stays running.
 */
function completeStep(snapshot: CampaignSnapshot, now: number): Decision<undefined> {
  const { campaign, dialing } = snapshot.context;
  if (campaign.status !== "running" || !dialing || !dialingDone(dialing)) return nothing(undefined);
  const committed = { version: campaign.version + 1, updatedAt: new Date(now).toISOString() };
  const event = { type: "campaign.complete" as const, ...committed };
  const to = statusAfter(snapshot, event);
  if (to === undefined) return nothing(undefined);
  return {
    writes: [
      {
        type: "status",
        campaign,
        to,
        action: "complete",
        actor: { actorType: "system", actorId: null },
        requestId: null,
        at: new Date(now),
        entry: undefined,
      },
    ],
    adopt: ({ relayed }) => [{ ...event, relayed }],
    reply: () => undefined,
  };
}

export function assertWindowOrder(start: string, end: string) {
  // "HH:MM" strings compare in time order.
  if (start >= end) {
    throw badRequest("invalid request body", [
      { field: "calling_window.start", message: "must be before calling_window.end" },
    ]);
  }
}

function settingsStep(
  snapshot: CampaignSnapshot,
  command: Extract<CampaignCommand, { type: "settings" }>,
  now: number,
): Decision<CampaignReplies["settings"]> {
  const current = snapshot.context.campaign;
  if (command.version !== current.version) {
    throw new ApiError(
      409,
      "version_conflict",
      `version mismatch: the campaign is at version ${current.version}`,
    );
  }
  const { settings } = command;
  assertWindowOrder(
    settings.callingWindowStart ?? current.callingWindowStart,
    settings.callingWindowEnd ?? current.callingWindowEnd,
  );
  const written = (facts: CommitFacts) => facts.campaign as CampaignRecord;
  return {
    writes: [
      {
        type: "settings",
        campaign: current,
        settings,
        changes: command.changes,
        actor: command.actor,
        requestId: command.requestId,
        at: new Date(now),
      },
    ],
    adopt: (facts) => [{ type: "campaign.updated", campaign: written(facts) }],
    reply: (facts) => ({ campaign: campaignView(written(facts)) }),
  };
}
