import { and, asc, eq, isNotNull, sql } from "drizzle-orm";
import type { Executor } from "../client.ts";
import { type Fence, fenced } from "../fence.ts";
import { campaignMessages, campaigns, type MESSAGE_KINDS } from "../schema/index.ts";

export type MessageRow = typeof campaignMessages.$inferSelect;
export type MessageKind = (typeof MESSAGE_KINDS)[number];

/** What is known of a message without its audio. */
export type MessageFacts = Omit<MessageRow, "audio"> & { bytes: number };

/** The campaigns column that holds each kind's version. */
const versionColumn = {
  abandon: "abandonMessageVersion",
  voicemail: "voicemailMessageVersion",
  opt_out: "optOutMessageVersion",
} as const;

/**
 * Stores a message (or, with `audio` null, removes its audio) and sets the campaign's version
 * of it, fenced by the campaign's lease. Versions only grow, across removals. Returns the
 * message and the campaign as written, or undefined when the campaign is not this process's.
 */
export async function writeMessage(
  tx: Executor,
  params: {
    campaignId: string;
    tenantId: string;
    kind: MessageKind;
    audio: {
      bytes: Uint8Array;
      encoding: string;
      sampleRate: number;
      durationMs: number;
      sha256: string;
      converted: boolean;
    } | null;
    updatedBy: string | null;
    at: Date;
    fence: Fence;
  },
) {
  const { audio } = params;
  const values = {
    audio: audio ? Buffer.from(audio.bytes) : null,
    encoding: audio?.encoding ?? "",
    sampleRate: audio?.sampleRate ?? 0,
    durationMs: audio?.durationMs ?? 0,
    sha256: audio?.sha256 ?? "",
    converted: audio?.converted ?? false,
    updatedBy: params.updatedBy,
    updatedAt: params.at,
  };
  const [message] = await tx
    .insert(campaignMessages)
    .values({
      campaignId: params.campaignId,
      tenantId: params.tenantId,
      kind: params.kind,
      version: 1,
      ...values,
    })
    .onConflictDoUpdate({
      target: [campaignMessages.campaignId, campaignMessages.kind],
      set: { ...values, version: sql`${campaignMessages.version} + 1` },
    })
    .returning();
  if (!message) return undefined;
  const [campaign] = await tx
    .update(campaigns)
    .set({ [versionColumn[params.kind]]: audio ? message.version : null })
    .where(and(eq(campaigns.id, params.campaignId), fenced(params.fence)))
    .returning();
  return campaign && { message, campaign };
}

/** A campaign's stored message of one kind, with its audio; undefined when there is none. */
export const findMessage = async (
  db: Executor,
  params: { tenantId: string; campaignId: string; kind: MessageKind },
) =>
  (
    await db
      .select()
      .from(campaignMessages)
      .where(
        and(
          eq(campaignMessages.tenantId, params.tenantId),
          eq(campaignMessages.campaignId, params.campaignId),
          eq(campaignMessages.kind, params.kind),
          isNotNull(campaignMessages.audio),
        ),
      )
      .limit(1)
  )[0];

/** A campaign's stored messages, without their audio. */
export const listMessages = (db: Executor, params: { tenantId: string; campaignId: string }) =>
  db
    .select({
      campaignId: campaignMessages.campaignId,
      kind: campaignMessages.kind,
      tenantId: campaignMessages.tenantId,
      version: campaignMessages.version,
      encoding: campaignMessages.encoding,
      sampleRate: campaignMessages.sampleRate,
      durationMs: campaignMessages.durationMs,
      sha256: campaignMessages.sha256,
      converted: campaignMessages.converted,
      updatedBy: campaignMessages.updatedBy,
      updatedAt: campaignMessages.updatedAt,
      bytes: sql<number>`octet_length(${campaignMessages.audio})::int`,
    })
    .from(campaignMessages)
    .where(
      and(
        eq(campaignMessages.tenantId, params.tenantId),
        eq(campaignMessages.campaignId, params.campaignId),
        isNotNull(campaignMessages.audio),
      ),
    )
    .orderBy(asc(campaignMessages.kind));
