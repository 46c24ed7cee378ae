import { boolean, jsonb, text, timestamp } from "drizzle-orm/pg-core";

/** A UTC instant; every time in the schema is one. */
export const instant = (name: string) => timestamp(name, { withTimezone: true, mode: "date" });

/** `created_at` and `updated_at`, both required. */
export const timestamps = () => ({
  createdAt: instant("created_at").notNull(),
  updatedAt: instant("updated_at").notNull(),
});

/** The rules a call was placed under, on the call and on its CDR. */
export const placedUnder = () => ({
  /** The regulatory profile and version. */
  profile: text("profile"),
  profileVersion: text("profile_version"),
  /** The lead's zone and where it came from. */
  zone: text("zone"),
  zoneSource: text("zone_source"),
  /** Whether the abandon-rate governor held the campaign to calls with a reserved agent. */
  governorHeld: boolean("governor_held").notNull().default(false),
});

/** What the node heard and played on an answered call, as it reported it. */
export interface CallMedia {
  /** Answered, and the node listens for a machine before anyone is put through. */
  detecting?: boolean;
  amd?: {
    result: "human" | "machine" | "fax" | "unknown";
    confidence: number;
    ms: number;
    /** A machine verdict put through to an agent anyway, to estimate false positives. */
    sampled: boolean;
  };
  message?: {
    kind: "abandon" | "voicemail" | "opt_out";
    played: boolean;
    completed: boolean;
    started_at: string | null;
    reason: string | null;
  };
  /** The lead pressed the opt-out key during the message. */
  opted_out?: boolean;
  /** A blind transfer of the connected lead, asked for by its agent or a supervisor. */
  transfer?: CallTransfer;
  /** When its agent or a supervisor asked for a hang-up: the node has its command. */
  hangup_requested_at?: string;
}

/** Where a connected call was sent on, and how it went. */
export interface CallTransfer {
  from_agent_id: string | null;
  /** Another agent of the campaign, or a number the workspace allows. */
  to_agent_id: string | null;
  to_phone: string | null;
  requested_at: string;
  /** `pending` until the node reports the new leg up (`done`) or not (`failed`). */
  status: "pending" | "done" | "failed";
  at: string | null;
  reason: string | null;
}

/** The call's media facts, on the call and on its CDR. */
export const heardOnCall = () => ({ media: jsonb("media").$type<CallMedia>() });
