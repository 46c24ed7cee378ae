/**
 * What a new campaign gets for every setting it is created without. Plain data with no
 * imports, so that the console's form starts from the same values without bundling the server.
 */
export const CAMPAIGN_DEFAULTS = {
  dial_mode: "progressive",
  caller_id: null,
  calling_window: { start: "08:00", end: "21:00" },
  max_attempts: 3,
  retry_delay_seconds: 3600,
  dial_ratio: 1,
  max_abandon_rate: 0.03,
  opt_out_digit: "9",
  amd_enabled: false,
  amd_budget_ms: 3500,
  machine_action: "hangup",
  amd_sample_percent: 0,
  wrap_up_seconds: 0,
  default_disposition: "no_contact",
  after_call_pause_seconds: 0,
} as const;
