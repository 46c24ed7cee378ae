/**
 * What a new campaign gets for every setting it is created without. Plain data with no
 * imports, so that the console's form starts from the same values without bundling the server.
 */
/** The contract's four, a machine and a wrong number, each with what it does to the lead. */
const DEFAULT_DISPOSITION_CODES: {
  code: string;
  label: string;
  hotkey: string | null;
  outcome: "done" | "retry" | "callback" | "do_not_call";
}[] = [
  { code: "completed", label: "Completed", hotkey: "1", outcome: "done" },
  { code: "callback", label: "Callback", hotkey: "2", outcome: "callback" },
  { code: "do_not_call", label: "Do not call", hotkey: "3", outcome: "do_not_call" },
  { code: "no_contact", label: "No contact", hotkey: "4", outcome: "retry" },
  { code: "answering_machine", label: "Answering machine", hotkey: "5", outcome: "retry" },
  { code: "wrong_number", label: "Wrong number", hotkey: "6", outcome: "done" },
];

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
  disposition_codes: DEFAULT_DISPOSITION_CODES,
  default_disposition: "no_contact",
  after_call_pause_seconds: 0,
  preview_timeout_seconds: 60,
  screen_pop_url: null,
} as const;
