import { may } from "./access.ts";
import { facts } from "./facts.ts";

/** What each regulatory profile is called on the page: the country and the rules it follows. */
const PROFILE_LABELS: Record<string, string> = {
  us: "United States (TSR/TCPA)",
  uk: "United Kingdom (Ofcom)",
  ca: "Canada (CRTC)",
  none: "None: the campaign's own settings only",
};

export const profileLabel = (name: string) => PROFILE_LABELS[name] ?? name;

/**
 * The profiles a user may choose, as select options. `none` turns the rules off and is offered
 * only to those who may choose it; when it is already chosen, it is still listed (so that the
 * select shows it) but cannot be picked again.
 */
export function profileOptions(current?: string) {
  const unregulated = may("campaigns.unregulated");
  return facts.regulatoryProfiles
    .filter((name) => name !== "none" || unregulated || current === "none")
    .map((name) => ({
      value: name,
      label: profileLabel(name),
      disabled: name === "none" && !unregulated,
    }));
}

/** What choosing `none` turns off, said where it is chosen. */
export const UNREGULATED_NOTE =
  "No regulatory profile: calling hours, state rules, attempt caps and cool-downs, the " +
  "abandon-rate governor and the minimum ring are all turned off. Only the campaign's own " +
  "settings apply.";

const ZONE_SOURCES: Record<string, string> = {
  column: "from the file's zone column",
  number: "inferred from the number",
  default: "the import's default zone",
};

export const zoneSourceLabel = (source: string) => ZONE_SOURCES[source] ?? source;

const REASONS: Record<string, string> = {
  outside_window: "Outside the campaign's window",
  legal_hours: "Outside the legal calling hours",
  state_rule: "A state's rule",
  sunday: "Sunday ban",
  holiday: "Holiday",
  attempt_cap: "Attempt cap",
  cooldown: "Cool-down",
  do_not_call: "Do not call",
  abandon_budget: "Abandon budget",
  max_attempts: "Attempts used up",
  not_due: "Not due yet",
  campaign_not_running: "Campaign not running",
  lead_final: "Lead finished",
  call_in_progress: "Call in progress",
};

export const reasonLabel = (code: string) => REASONS[code] ?? code.replaceAll("_", " ");

/**
 * What the abandon-rate governor says while it holds a campaign (its `dial_ratio_reason`
 * without the prefix), or undefined when it does not hold it.
 */
export function governorHold(reason: string | undefined): string | undefined {
  const prefix = facts.governorReasonPrefix;
  if (!reason?.startsWith(prefix)) return undefined;
  return reason.slice(prefix.length).trim();
}
