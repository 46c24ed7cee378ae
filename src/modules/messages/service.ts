import type { MessageKind } from "../../../actors/commands.ts";
import { findTenantCampaign } from "../../../db/queries/campaigns.ts";
import { findMessage, listMessages } from "../../../db/queries/messages.ts";
import { MESSAGE_KINDS } from "../../../db/schema/campaigns.ts";
import type { RequestMeta, ServiceDeps } from "../../deps.ts";
import { ApiError, notFound, unprocessable } from "../../errors.ts";
import { auditActorOf, type Principal } from "../../identity/principal.ts";
import { isUuid } from "../../identity/tenant-scope.ts";
import { normalizeMessage } from "../../media/wav.ts";
import { readBoundedBytes } from "../../plugins/json-body.ts";
import { MAX_MESSAGE_BYTES, MAX_MESSAGE_MS, messageView, WAV_TYPES } from "./model.ts";

const EXPECTED = `a WAV file (${WAV_TYPES.join(", ")}) of at most ${MAX_MESSAGE_MS / 1000} s`;

const tooLarge = () =>
  new ApiError(
    413,
    "payload_too_large",
    `the recording is larger than ${MAX_MESSAGE_BYTES} bytes; expected ${EXPECTED}`,
  );

/**
 * Reads a recording from the request and checks it: a WAV, 8 or 16 kHz mono PCM or G.711
 * kept as sent, any other WAV converted to 8 kHz mono PCM, at most a minute long (422 saying
 * what is expected otherwise).
 */
async function receiveRecording(request: Request) {
  const type = (request.headers.get("content-type") ?? "").split(";")[0]?.trim().toLowerCase();
  if (!WAV_TYPES.includes(type as (typeof WAV_TYPES)[number]))
    throw unprocessable("body", `expected ${EXPECTED}, not ${type || "a body without a type"}`);
  const bytes = await readBoundedBytes(request, MAX_MESSAGE_BYTES, tooLarge);
  const checked = normalizeMessage(bytes, MAX_MESSAGE_MS);
  if (!checked.ok) throw unprocessable("body", `${checked.reason}; expected ${EXPECTED}`);
  const { info } = checked;
  const converted = checked.converted;
  return {
    base64: Buffer.from(checked.wav).toString("base64"),
    encoding: converted ? "pcm" : info.encoding,
    sampleRate: converted ? 8000 : info.sampleRate,
    durationMs: Math.round(info.durationMs),
    sha256: new Bun.CryptoHasher("sha256").update(checked.wav).digest("hex"),
    converted,
  };
}

/** The message a path names: a campaign's id and one of the kinds, else 404. */
export function messageTarget(params: { id: string; kind: string }) {
  if (!isUuid(params.id)) throw notFound("campaign");
  if (!(MESSAGE_KINDS as readonly string[]).includes(params.kind))
    throw new ApiError(
      404,
      "not_found",
      `no message kind "${params.kind}": expected ${MESSAGE_KINDS.join(", ")}`,
    );
  return { campaignId: params.id.toLowerCase(), kind: params.kind as MessageKind };
}

/** Records one of a campaign's messages, through its actor; a new version each time. */
export async function storeMessage(
  deps: ServiceDeps,
  principal: Principal,
  tenantId: string,
  target: { campaignId: string; kind: MessageKind },
  request: Request,
  meta: RequestMeta,
) {
  const by = auditActorOf(principal);
  const audio = await receiveRecording(request);
  return deps.campaigns.run(
    { tenantId, campaignId: target.campaignId },
    { type: "message", kind: target.kind, audio, by, requestId: meta.requestId },
    meta.requestId,
  );
}

/** Removes one of a campaign's messages; its version still grows. */
export function removeMessage(
  deps: ServiceDeps,
  principal: Principal,
  tenantId: string,
  target: { campaignId: string; kind: MessageKind },
  meta: RequestMeta,
) {
  const by = auditActorOf(principal);
  return deps.campaigns.run(
    { tenantId, campaignId: target.campaignId },
    { type: "message", kind: target.kind, audio: null, by, requestId: meta.requestId },
    meta.requestId,
  );
}

/** A stored message with its audio, of a campaign of the tenant; 404 naming what is missing. */
export async function readMessage(
  deps: ServiceDeps,
  tenantId: string,
  target: { campaignId: string; kind: MessageKind },
) {
  const message = await findMessage(deps.db, { tenantId, ...target });
  if (message?.audio) return { ...message, audio: message.audio };
  const campaign = await findTenantCampaign(deps.db, {
    tenantId,
    campaignId: target.campaignId,
  });
  throw notFound(campaign ? "message" : "campaign");
}

/** A campaign's stored messages, without their audio. */
export async function campaignMessages(deps: ServiceDeps, tenantId: string, campaignId: string) {
  if (!isUuid(campaignId)) throw notFound("campaign");
  const campaign = await findTenantCampaign(deps.db, { tenantId, campaignId });
  if (!campaign) throw notFound("campaign");
  const rows = await listMessages(deps.db, { tenantId, campaignId });
  return { messages: rows.map(messageView) };
}

/** The response that carries a stored message's WAV. */
export const wavResponse = (message: { audio: Uint8Array; version: number; sha256: string }) =>
  new Response(message.audio, {
    headers: {
      "content-type": "audio/wav",
      etag: `"${message.sha256}"`,
      "x-message-version": String(message.version),
      "cache-control": "private, no-cache",
    },
  });
