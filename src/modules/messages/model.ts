import { Type } from "@sinclair/typebox";
import { type Static, t } from "elysia";
import type { MessageFacts } from "../../../db/queries/messages.ts";
import { MessageKindSchema } from "../campaigns/model.ts";
import { Timestamp } from "../users/model.ts";

/** The media types a recording may be sent as; all of them name a WAV file. */
export const WAV_TYPES = ["audio/wav", "audio/x-wav", "audio/wave"] as const;

/** The longest message a campaign may have. */
export const MAX_MESSAGE_MS = 60_000;
/** Room for a minute of the largest WAV we convert (48 kHz stereo, 32-bit). */
export const MAX_MESSAGE_BYTES = 24 * 1024 * 1024;

export const MessageParams = t.Object({ id: t.String(), kind: t.String() });

export const MessageSchema = t.Object({
  campaign_id: t.String({ format: "uuid" }),
  kind: MessageKindSchema,
  version: Type.Integer({ description: "grows with every change, removals included" }),
  encoding: t.String({ description: "pcm, mulaw or alaw" }),
  sample_rate: Type.Integer(),
  duration_ms: Type.Integer(),
  bytes: Type.Integer(),
  sha256: t.String(),
  converted: t.Boolean({ description: "whether the WAV sent was converted to 8 kHz mono PCM" }),
  deleted: t.Boolean(),
  updated_at: Timestamp,
});

export type MessageView = Static<typeof MessageSchema>;

export const messageView = (row: MessageFacts): MessageView => ({
  campaign_id: row.campaignId,
  kind: row.kind,
  version: row.version,
  encoding: row.encoding,
  sample_rate: row.sampleRate,
  duration_ms: row.durationMs,
  bytes: row.bytes,
  sha256: row.sha256,
  converted: row.converted,
  deleted: row.bytes === 0,
  updated_at: row.updatedAt.toISOString(),
});
