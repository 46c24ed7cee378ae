import { Type } from "@sinclair/typebox";
import { type Static, t } from "elysia";
import type { CampaignRecord } from "../../../actors/campaign.machine.ts";
import {
  CAMPAIGN_STATUSES,
  DIAL_MODES,
  MACHINE_ACTIONS,
  MESSAGE_KINDS,
} from "../../../db/schema/campaigns.ts";
import { profileInForce } from "../../compliance/lead-rules.ts";
import { effectiveWindow } from "../../compliance/window.ts";
import { DISPOSITION_CODE_PATTERN, DispositionCodeSchema } from "../../dialer/model.ts";
import { PageQuery } from "../../pagination.ts";

export { AGENT_STATES } from "../../dialer/agents.ts";

import { TenantQuery, Timestamp } from "../users/model.ts";

const literals = <T extends string>(values: readonly T[]) =>
  t.Union(values.map((value) => t.Literal<T>(value)));

const DayHours = t.Union([t.Object({ start: t.String(), end: t.String() }), t.Null()]);

/** The calling window cut to the profile's hours, per weekday, in the lead's local time. */
export const EffectiveWindowSchema = t.Object(
  {
    sun: DayHours,
    mon: DayHours,
    tue: DayHours,
    wed: DayHours,
    thu: DayHours,
    fri: DayHours,
    sat: DayHours,
  },
  {
    description:
      "calling_window ∩ the profile's hours for each weekday (null: no calls); a lead's state may narrow it further",
  },
);

export const CampaignStatusSchema = literals(CAMPAIGN_STATUSES);
export const MachineActionSchema = literals(MACHINE_ACTIONS);

export const MessageKindSchema = literals(MESSAGE_KINDS);
export const DialModeSchema = literals(DIAL_MODES);
export const E164 = t.String({
  pattern: "^\\+[1-9][0-9]{1,14}$",
  description: "E.164 number, e.g. +14155550100",
});
const ClockTime = t.String({
  pattern: "^([01][0-9]|2[0-3]):[0-5][0-9]$",
  description: "HH:MM, the lead's local time",
});

export const CallingWindowSchema = t.Object(
  { start: ClockTime, end: ClockTime },
  { additionalProperties: false },
);

const settings = {
  name: t.String({ minLength: 1, maxLength: 200, pattern: "\\S" }),
  dial_mode: DialModeSchema,
  caller_id: t.Union([E164, t.Null()]),
  calling_window: CallingWindowSchema,
  max_attempts: Type.Integer({ minimum: 1, maximum: 50 }),
  retry_delay_seconds: Type.Integer({ minimum: 60, maximum: 2_592_000 }),
  dial_ratio: t.Number({ minimum: 1, maximum: 5 }),
  max_abandon_rate: t.Number({ minimum: 0, maximum: 0.1 }),
  regulatory_profile: t.String({
    description:
      "us, uk, ca or none (admins only): the rules its calls are placed under; a new campaign takes the workspace's default",
  }),
  opt_out_digit: t.String({
    pattern: "^[0-9*#]$",
    description: "the key that puts the lead on the do-not-call list during the abandon message",
  }),
  amd_enabled: t.Boolean({ description: "answering-machine detection after each answer" }),
  amd_budget_ms: Type.Integer({
    minimum: 1000,
    maximum: 10_000,
    description: "how long detection listens before it says unknown (connected to an agent)",
  }),
  machine_action: t.Union(
    MACHINE_ACTIONS.map((action) => t.Literal(action)),
    {
      description:
        "a machine verdict: hangup, voicemail (the voicemail message after the beep) or connect",
    },
  ),
  amd_sample_percent: t.Number({
    minimum: 0,
    maximum: 100,
    description:
      "the share of machine verdicts put through to agents anyway, whose dispositions estimate detection's false positives",
  }),
  wrap_up_seconds: Type.Integer({
    minimum: 0,
    maximum: 3600,
    description:
      "how long an agent may take over a disposition before default_disposition is recorded for it (automatic); 0: no limit",
  }),
  disposition_codes: t.Array(DispositionCodeSchema, {
    minItems: 1,
    maxItems: 30,
    description:
      "what agents pick at the end of a call: codes and hotkeys each once; a change applies to the dispositions given after it",
  }),
  default_disposition: t.String({
    pattern: DISPOSITION_CODE_PATTERN,
    description:
      "the code a wrap-up that ran out ends with: one of disposition_codes, not a callback",
  }),
  after_call_pause_seconds: Type.Integer({
    minimum: 0,
    maximum: 600,
    description:
      "a breath after each disposition: the agent is paused (reason after_call) this long, then ready again",
  }),
  preview_timeout_seconds: Type.Integer({
    minimum: 5,
    maximum: 3600,
    description:
      "in preview, how long a lead offered to an agent waits for `dial` before it is skipped by itself",
  }),
  screen_pop_url: t.Union(
    [
      t.String({
        maxLength: 2048,
        description:
          "the CRM page the agent desktop opens when a call connects: an http(s) URL with {phone}, {lead.id}, {lead.<field>} (a column of the file, e.g. {lead.external_id}), {call.id} and {campaign.id}, each URL-encoded",
      }),
      t.Null(),
    ],
    { description: "null: no screen pop" },
  ),
};

/** Every setting but the name may be left out: creation fills defaults, a patch keeps values. */
const optionalSettings = t.Partial(t.Object(settings)).properties;

export const CreateCampaignBody = t.Object(
  { ...optionalSettings, name: settings.name },
  { additionalProperties: false },
);
export type CreateCampaignInput = Static<typeof CreateCampaignBody>;

export const PatchCampaignBody = t.Object(
  {
    version: Type.Integer({ minimum: 1, description: "the version the change is based on" }),
    ...optionalSettings,
  },
  { additionalProperties: false },
);
export type PatchCampaignInput = Static<typeof PatchCampaignBody>;

export const StatusActionBody = t.Object(
  { action: t.Union([t.Literal("start"), t.Literal("pause"), t.Literal("stop")]) },
  { additionalProperties: false },
);
export type StatusActionInput = Static<typeof StatusActionBody>;

export const CampaignListQuery = t.Object({
  ...PageQuery,
  ...TenantQuery,
  status: t.Optional(CampaignStatusSchema),
});
export const CampaignParams = t.Object({ id: t.String() });

export const CampaignSchema = t.Object({
  id: t.String({ format: "uuid" }),
  tenant_id: t.String({ format: "uuid" }),
  name: t.String(),
  status: CampaignStatusSchema,
  dial_mode: DialModeSchema,
  caller_id: t.Union([t.String(), t.Null()]),
  calling_window: CallingWindowSchema,
  max_attempts: Type.Integer(),
  retry_delay_seconds: Type.Integer(),
  dial_ratio: t.Number(),
  max_abandon_rate: t.Number(),
  regulatory_profile: t.String({ description: "us, uk, ca or none" }),
  opt_out_digit: t.String(),
  amd_enabled: t.Boolean(),
  amd_budget_ms: Type.Integer(),
  machine_action: MachineActionSchema,
  amd_sample_percent: t.Number(),
  wrap_up_seconds: Type.Integer(),
  disposition_codes: t.Array(DispositionCodeSchema),
  default_disposition: t.String(),
  after_call_pause_seconds: Type.Integer(),
  preview_timeout_seconds: Type.Integer(),
  screen_pop_url: t.Union([t.String(), t.Null()]),
  messages: t.Object(
    {
      abandon: t.Union([Type.Integer(), t.Null()]),
      voicemail: t.Union([Type.Integer(), t.Null()]),
      opt_out: t.Union([Type.Integer(), t.Null()]),
    },
    { description: "the version of each recorded message, null while there is none" },
  ),
  effective_calling_window: EffectiveWindowSchema,
  version: Type.Integer(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type CampaignView = Static<typeof CampaignSchema>;

export const CampaignStatsSchema = t.Object({
  leads_total: Type.Integer(),
  leads_by_state: t.Record(t.String(), Type.Integer()),
  calls_in_flight: Type.Integer(),
  agents_by_state: t.Record(t.String(), Type.Integer()),
  answer_rate: t.Number({ description: "share of recent calls picked up" }),
  recent_calls: t.Optional(
    Type.Integer({ description: "the recent calls the rates are measured over (0: no rate yet)" }),
  ),
  abandon_rate: t.Number({
    description:
      "abandoned over answered by a person, over the legal window (the campaign's life under 30 days, else the last 30 days)",
  }),
  dial_ratio: t.Number({
    description:
      "preview and progressive: calls per ready agent; predictive: calls in flight per agent expected free",
  }),
  dial_ratio_reason: t.String(),
});
export type CampaignStats = Static<typeof CampaignStatsSchema>;

export const StatusChangeSchema = t.Object({
  id: t.String({ format: "uuid" }),
  campaign_id: t.String({ format: "uuid" }),
  action: t.String(),
  from: CampaignStatusSchema,
  to: CampaignStatusSchema,
  actor_type: t.String(),
  actor_id: t.Union([t.String(), t.Null()]),
  actor_email: t.Union([t.String(), t.Null()], { description: "the user's, when a user did it" }),
  request_id: t.Union([t.String(), t.Null()]),
  created_at: Timestamp,
});

const effectiveCallingWindow = (campaign: CampaignRecord) =>
  effectiveWindow(
    // The newest version: what the campaign's next calls are placed under.
    profileInForce(campaign.regulatoryProfile, Number.POSITIVE_INFINITY),
    { start: campaign.callingWindowStart, end: campaign.callingWindowEnd },
  ).days;

export const campaignView = (campaign: CampaignRecord): CampaignView => ({
  id: campaign.id,
  tenant_id: campaign.tenantId,
  name: campaign.name,
  status: campaign.status,
  dial_mode: campaign.dialMode,
  caller_id: campaign.callerId,
  calling_window: { start: campaign.callingWindowStart, end: campaign.callingWindowEnd },
  max_attempts: campaign.maxAttempts,
  retry_delay_seconds: campaign.retryDelaySeconds,
  dial_ratio: campaign.dialRatio,
  max_abandon_rate: campaign.maxAbandonRate,
  regulatory_profile: campaign.regulatoryProfile,
  opt_out_digit: campaign.optOutDigit,
  amd_enabled: campaign.amdEnabled,
  amd_budget_ms: campaign.amdBudgetMs,
  machine_action: campaign.machineAction,
  amd_sample_percent: campaign.amdSamplePercent,
  wrap_up_seconds: campaign.wrapUpSeconds,
  disposition_codes: campaign.dispositionCodes,
  default_disposition: campaign.defaultDisposition,
  after_call_pause_seconds: campaign.afterCallPauseSeconds,
  preview_timeout_seconds: campaign.previewTimeoutSeconds,
  screen_pop_url: campaign.screenPopUrl,
  messages: {
    abandon: campaign.abandonMessageVersion,
    voicemail: campaign.voicemailMessageVersion,
    opt_out: campaign.optOutMessageVersion,
  },
  effective_calling_window: effectiveCallingWindow(campaign),
  version: campaign.version,
  created_at: campaign.createdAt,
  updated_at: campaign.updatedAt,
});

const LedgerViewSchema = t.Object({
  from: Timestamp,
  to: Timestamp,
  live_answers: Type.Integer(),
  abandons: Type.Integer(),
  estimated_false_positives: t.Number({
    description:
      "people answering-machine detection hung up on, estimated from the sampled verdicts agents judged; counted as live answers and abandons in the rate and the budget",
  }),
  abandon_rate: t.Number(),
  abandon_budget: Type.Integer({ description: "abandons still allowed in this view" }),
});

const MediaComplianceSchema = t.Object(
  {
    abandon_message: t.Object({
      required: t.Boolean({ description: "the campaign's profile requires one" }),
      version: t.Union([Type.Integer(), t.Null()], { description: "null: none is recorded" }),
      played: Type.Integer(),
      completed: Type.Integer({ description: "played to the end" }),
      not_played: Type.Integer({
        description:
          "abandoned calls that did not hear it (none recorded, or it could not be fetched)",
      }),
    }),
    voicemail_drops: Type.Integer(),
    opt_outs: Type.Integer({ description: "numbers put on the do-not-call list by key press" }),
    amd: t.Object({
      verdicts: t.Record(t.String(), Type.Integer(), {
        description: "human, machine, fax, unknown",
      }),
      sampled: Type.Integer({ description: "machine verdicts put through to agents anyway" }),
      sampled_judged: Type.Integer({ description: "of those, the ones agents dispositioned" }),
      false_positive_rate: t.Union([t.Number(), t.Null()], {
        description:
          "people among the judged samples (disposition other than answering_machine); null before any",
      }),
      estimated_false_positives: t.Number({
        description:
          "machine verdicts hung up on × the false-positive rate: people hung up on, which Ofcom counts as abandoned calls",
      }),
    }),
  },
  { description: "over the legal window" },
);

export const ComplianceSchema = t.Object({
  campaign_id: t.String({ format: "uuid" }),
  at: Timestamp,
  max_abandon_rate: t.Number(),
  basis: t.Union(
    [
      t.Literal("campaign"),
      t.Literal("rolling_30_days"),
      t.Literal("rolling_24_hours"),
      t.Literal("calendar_month"),
    ],
    {
      description:
        "the window the rates are counted over: the profile's period (30 days under `us` and `none`, 24 hours under `uk`, the calendar month in UTC under `ca`), or the campaign's life while shorter",
    },
  ),
  window: LedgerViewSchema,
  last_24_hours: LedgerViewSchema,
  abandon_budget: Type.Integer({ description: "the smaller of the two views' budgets" }),
  media: MediaComplianceSchema,
});
