import { type ActorOptions, assign, createActor, emit, type SnapshotFrom, setup } from "xstate";
import type { ProfileName } from "../src/compliance/profiles.ts";
import { applyDialing, type DialingEvent, type DialingState } from "./dialing.ts";
import { type IdempotencyEntry, IdempotencyWindow, type PersistedWindow } from "./idempotency.ts";

export type CampaignStatus = "draft" | "running" | "paused" | "stopped" | "completed";
export type StatusAction = "start" | "pause" | "stop";

/** The campaign as its actor holds it: the committed row, in domain terms. */
import type { DispositionCode } from "../src/dialer/model.ts";
export interface CampaignRecord {
  id: string;
  tenantId: string;
  name: string;
  status: CampaignStatus;
  dialMode: "preview" | "progressive" | "predictive";
  callerId: string | null;
  callingWindowStart: string;
  callingWindowEnd: string;
  maxAttempts: number;
  retryDelaySeconds: number;
  dialRatio: number;
  maxAbandonRate: number;
  regulatoryProfile: ProfileName;
  optOutDigit: string;
  amdEnabled: boolean;
  amdBudgetMs: number;
  machineAction: "hangup" | "voicemail" | "connect";
  amdSamplePercent: number;
  /** How long a wrap-up may last before the default disposition is recorded; 0: no limit. */
  wrapUpSeconds: number;
  /** What agents pick at the end of a call, each with what it does to the lead. */
  dispositionCodes: DispositionCode[];
  /** The code a wrap-up that ran out ends with. */
  defaultDisposition: string;
  /** The agent's breath between a disposition and the next call. */
  afterCallPauseSeconds: number;
  /** In preview, how long an offered lead waits for the agent's `dial`. */
  previewTimeoutSeconds: number;
  /** The CRM page for a connected call, a template (see src/dialer/screen-pop.ts); null: none. */
  screenPopUrl: string | null;
  /** The version of each recorded message, null while there is none. */
  abandonMessageVersion: number | null;
  voicemailMessageVersion: number | null;
  optOutMessageVersion: number | null;
  version: number;
  createdAt: string;
  updatedAt: string;
}

export interface CampaignContext {
  campaign: CampaignRecord;
  idempotency: IdempotencyWindow;
  /** Loaded when the campaign first dials or hears of a call, not at start. */
  dialing?: DialingState | undefined;
}

/** A context as it is restored: from rows, or from a persisted (JSON) snapshot. */
export type RestorableContext = Omit<CampaignContext, "idempotency"> & {
  idempotency: IdempotencyWindow | PersistedWindow;
};

/** What changed in the database when a command was committed; the actor adopts it. */
export interface Committed {
  version: number;
  updatedAt: string;
  /** The reply kept under the request's `Idempotency-Key`, committed with the change. */
  reply?: IdempotencyEntry | undefined;
  /** Whether the commit itself told other processes of the change (their supervisors' push). */
  relayed?: boolean | undefined;
}

export type CampaignEvent =
  | ({ type: "campaign.start" } & Committed)
  | ({ type: "campaign.pause" } & Committed)
  | ({ type: "campaign.stop" } & Committed)
  | ({ type: "campaign.complete" } & Committed)
  | { type: "campaign.updated"; campaign: CampaignRecord }
  | { type: "idempotency.recorded"; entry: IdempotencyEntry }
  | { type: "idempotency.expired"; now: number }
  | DialingEvent;

export type CampaignEmitted = {
  type: "campaign.statusChanged";
  campaignId: string;
  tenantId: string;
  from: CampaignStatus;
  to: CampaignStatus;
  /** Other processes were told in the commit: the push is for this process's sockets alone. */
  relayed: boolean;
};

export const ACTION_EVENTS = {
  start: "campaign.start",
  pause: "campaign.pause",
  stop: "campaign.stop",
} as const satisfies Record<StatusAction, CampaignEvent["type"]>;

/**
 * Entering a status: announce it, record it on the campaign with the committed version, and
 * remember the reply under the request's key, all in one step.
 */
const enter = (to: CampaignStatus) =>
  [
    { type: "announceStatus", params: { to } },
    { type: "adoptStatus", params: { to } },
    { type: "rememberReply" },
  ] as const;

/** Starting also opens the legal window of a loaded dialing state that has none yet. */
const start = [...enter("running"), { type: "noteFirstStart" }] as const;

/**
 * A campaign's status, its idempotency window and its dialing state. It does no I/O: the
 * registry commits each change to the database first and then sends the event, so this
 * machine never waits on the world.
 * Deadlines are absolute times in context (`expiresAt`), pruned as new keys are recorded,
 * because timers would not survive a restore.
 */
export const campaignMachine = setup({
  types: {
    context: {} as CampaignContext,
    events: {} as CampaignEvent,
    input: {} as CampaignContext,
    emitted: {} as CampaignEmitted,
  },
  actions: {
    announceStatus: emit(({ context, event }, params: { to: CampaignStatus }) => ({
      type: "campaign.statusChanged" as const,
      campaignId: context.campaign.id,
      tenantId: context.campaign.tenantId,
      from: context.campaign.status,
      to: params.to,
      relayed: "relayed" in event && event.relayed === true,
    })),
    adoptStatus: assign(({ context, event }, params: { to: CampaignStatus }) => ({
      campaign: adoptedCampaign(
        context.campaign,
        params.to,
        "version" in event ? event : undefined,
      ),
    })),
    // In place: see IdempotencyWindow.
    rememberReply: ({ context, event }) => {
      if ("reply" in event && event.reply) context.idempotency.record(event.reply);
    },
    noteFirstStart: assign(({ context, event }) =>
      context.dialing && "updatedAt" in event
        ? {
            dialing: applyDialing(context.dialing, {
              type: "dialing.started",
              at: Date.parse(event.updatedAt),
            }),
          }
        : {},
    ),
  },
}).createMachine({
  id: "campaign",
  context: ({ input }) => input,
  initial: "draft",
  on: {
    "campaign.updated": {
      actions: assign(({ context, event }) => ({
        campaign: { ...event.campaign, status: context.campaign.status },
      })),
    },
    // In place: see IdempotencyWindow.
    "idempotency.recorded": {
      actions: ({ context, event }) => context.idempotency.record(event.entry),
    },
    "idempotency.expired": {
      actions: ({ context, event }) => context.idempotency.prune(event.now),
    },
    // Dialing facts apply once the state is loaded; before that the database has them all.
    "dialing.*": {
      guard: ({ context, event }) =>
        context.dialing !== undefined || event.type === "dialing.loaded",
      actions: assign(({ context, event }) => ({
        dialing: applyDialing(context.dialing as DialingState, event as DialingEvent),
      })),
    },
  },
  states: {
    draft: { on: { "campaign.start": { target: "running", actions: start } } },
    running: {
      on: {
        "campaign.pause": { target: "paused", actions: enter("paused") },
        "campaign.stop": { target: "stopped", actions: enter("stopped") },
        "campaign.complete": { target: "completed", actions: enter("completed") },
      },
    },
    paused: {
      on: {
        "campaign.start": { target: "running", actions: start },
        "campaign.stop": { target: "stopped", actions: enter("stopped") },
      },
    },
    stopped: { on: { "campaign.start": { target: "running", actions: start } } },
    completed: { on: { "campaign.start": { target: "running", actions: start } } },
  },
});

export type CampaignMachine = typeof campaignMachine;
export type CampaignSnapshot = SnapshotFrom<CampaignMachine>;

/** The campaign in status `to`, with the version and time of the commit that put it there. */
export function adoptedCampaign(
  campaign: CampaignRecord,
  to: CampaignStatus,
  committed: Committed | undefined,
): CampaignRecord {
  return committed
    ? { ...campaign, status: to, version: committed.version, updatedAt: committed.updatedAt }
    : { ...campaign, status: to };
}

/**
 * The status `event` would lead to from `snapshot`, read from the machine's own transition
 * table without running the step (a full step builds a whole inert actor); undefined when
 * the machine refuses the event.
 */
export function statusAfter(
  snapshot: CampaignSnapshot,
  event: CampaignEvent,
): CampaignStatus | undefined {
  const target = snapshot.machine.getTransitionData(snapshot, event)[0]?.target?.[0];
  return target?.key as CampaignStatus | undefined;
}

/** The snapshot a campaign's actor starts from: its committed status and open window. */
export const restoredSnapshot = (context: RestorableContext) =>
  campaignMachine.resolveState({ value: context.campaign.status, context: windowed(context) });

const windowed = (context: RestorableContext): CampaignContext => ({
  ...context,
  idempotency: IdempotencyWindow.from(context.idempotency),
});

/**
 * An actor for a restored or persisted snapshot. The machine declares an input, so XState's
 * types ask for one; a snapshot takes precedence, so its own context is passed.
 */
export function campaignActorFrom(
  snapshot: ReturnType<typeof restoredSnapshot>,
  options: Omit<ActorOptions<CampaignMachine>, "snapshot" | "input"> = {},
  machine: CampaignMachine = campaignMachine,
) {
  // A persisted snapshot holds its window as plain JSON.
  const context = windowed(snapshot.context);
  const restored = { ...snapshot, context } as typeof snapshot;
  return createActor(machine, { ...options, snapshot: restored, input: context });
}

export type CampaignActor = ReturnType<typeof campaignActorFrom>;
