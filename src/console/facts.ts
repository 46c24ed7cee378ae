import { ACTION_EVENTS, campaignMachine } from "../../actors/campaign.machine.ts";
import { CALL_OUTCOMES } from "../../db/schema/calls.ts";
import { CAMPAIGN_STATUSES, DIAL_MODES, MACHINE_ACTIONS } from "../../db/schema/campaigns.ts";
import { LEAD_STATES, leads } from "../../db/schema/leads.ts";
import { WEBHOOK_EVENT_TYPES } from "../../db/schema/webhooks.ts";
import { PROFILE_NAMES } from "../compliance/profiles.ts";
import { AGENT_STATES } from "../dialer/agents.ts";
import { GOVERNOR_REASON_PREFIX } from "../dialer/governor.ts";
import { DISPOSITION_OUTCOMES } from "../dialer/model.ts";
import { PERMISSIONS, SCOPE_LEVELS, SCOPED_RESOURCES } from "../identity/permissions.ts";
import { ROLES, USER_STATUSES } from "../identity/roles.ts";
import { ChangePasswordBody } from "../modules/auth/model.ts";
import { CreateCampaignBody } from "../modules/campaigns/model.ts";
import { CreateUserBody } from "../modules/users/model.ts";
import { inputLimitsOf } from "./input-limits.ts";

/**
 * The status actions the campaign machine accepts in each status, read from its own
 * transition table: the console enables a button only where the machine would take it.
 */
function actionsByStatus() {
  const states = campaignMachine.config.states ?? {};
  const table: Record<string, string[]> = {};
  for (const status of CAMPAIGN_STATUSES) {
    const accepted = Object.keys(states[status]?.on ?? {});
    table[status] = Object.entries(ACTION_EVENTS)
      .filter(([, event]) => accepted.includes(event))
      .map(([action]) => action);
  }
  return table;
}

/**
 * What the console needs to know of the domain, taken from the shared schemas and the
 * campaign machine when the console is bundled, so that the browser holds no rule of its own
 * and none of the server's modules.
 */
export function consoleFacts() {
  return {
    campaignStatuses: [...CAMPAIGN_STATUSES],
    campaignActions: actionsByStatus(),
    dialModes: [...DIAL_MODES],
    machineActions: [...MACHINE_ACTIONS],
    leadStates: [...LEAD_STATES],
    zoneSources: [...leads.zoneSource.enumValues],
    regulatoryProfiles: [...PROFILE_NAMES],
    /** How `dial_ratio_reason` starts while the abandon-rate governor holds a campaign. */
    governorReasonPrefix: GOVERNOR_REASON_PREFIX,
    callOutcomes: [...CALL_OUTCOMES],
    agentStates: [...AGENT_STATES],
    /** What a disposition code may do to its lead. */
    dispositionOutcomes: [...DISPOSITION_OUTCOMES],
    /** What each form's fields take, from the bodies the API checks them against. */
    inputLimits: {
      campaign: inputLimitsOf(CreateCampaignBody),
      user: inputLimitsOf(CreateUserBody),
      password: inputLimitsOf(ChangePasswordBody),
    },
    webhookEventTypes: [...WEBHOOK_EVENT_TYPES],
    roles: [...ROLES],
    userStatuses: [...USER_STATUSES],
    scopedResources: [...SCOPED_RESOURCES],
    scopeLevels: [...SCOPE_LEVELS],
    /** The roles that hold each permission: a view is offered to those its routes admit. */
    permissions: Object.fromEntries(
      Object.entries(PERMISSIONS).map(([name, rule]) => [name, [...rule.roles] as string[]]),
    ) as Record<keyof typeof PERMISSIONS, string[]>,
  };
}

export type ConsoleFacts = ReturnType<typeof consoleFacts>;
