import { Elysia, t } from "elysia";
import type { ServiceDeps } from "../../deps.ts";
import { ok } from "../../envelope.ts";
import { documented, documentedFile } from "../../openapi-bodies.ts";
import type { AuthGuard } from "../../plugins/auth.ts";
import { CampaignParams } from "../campaigns/model.ts";
import { TenantQuery } from "../users/model.ts";
import { MessageParams, MessageSchema, WAV_TYPES } from "./model.ts";
import {
  campaignMessages,
  messageTarget,
  readMessage,
  removeMessage,
  storeMessage,
  wavResponse,
} from "./service.ts";

const TenantOnly = t.Object(TenantQuery);

const wavBody = {
  required: true,
  content: Object.fromEntries(
    WAV_TYPES.map((type) => [type, { schema: { type: "string" as const, format: "binary" } }]),
  ),
};

/** A campaign's recorded messages: the abandoned-call message, the voicemail drop, the opt-out confirmation. */
export const messagesModule = (deps: ServiceDeps, auth: AuthGuard) =>
  new Elysia({ prefix: "/api/v1/campaigns", detail: { tags: ["campaigns"] } })
    .use(auth)
    .get(
      "/:id/messages",
      async ({ tenantId, params }) => ok(await campaignMessages(deps, tenantId, params.id)),
      {
        auth: "campaigns.read",
        params: CampaignParams,
        query: TenantOnly,
        detail: {
          summary: "The campaign's recorded messages, without their audio",
          ...documented({ messages: t.Array(MessageSchema) }),
        },
      },
    )
    .put(
      "/:id/messages/:kind",
      async ({ principal, tenantId, meta, params, request, set }) => {
        const target = messageTarget(params);
        const reply = await storeMessage(deps, principal, tenantId, target, request, meta);
        if (reply.message.version === 1) set.status = 201;
        return ok(reply);
      },
      {
        auth: "campaigns.write",
        params: MessageParams,
        query: TenantOnly,
        // No body schema: the route reads the recording itself (see UNREAD_BINARY).
        detail: {
          summary:
            "Record a message (abandon, voicemail or opt_out): a WAV of at most 60 s; 8 or 16 kHz mono PCM or G.711 is kept as sent, any other WAV converted to 8 kHz mono PCM",
          // 201 for a kind's first recording, 200 for a later version.
          ...documented({ message: MessageSchema }, [201, 200]),
          requestBody: wavBody,
        },
      },
    )
    .get(
      "/:id/messages/:kind",
      async ({ tenantId, params }) =>
        wavResponse(await readMessage(deps, tenantId, messageTarget(params))),
      {
        auth: "campaigns.read",
        params: MessageParams,
        query: TenantOnly,
        detail: {
          summary: "The stored WAV of a message, with its version in `X-Message-Version`",
          ...documentedFile("audio/wav", "The WAV"),
        },
      },
    )
    .delete(
      "/:id/messages/:kind",
      async ({ principal, tenantId, meta, params }) =>
        ok(await removeMessage(deps, principal, tenantId, messageTarget(params), meta)),
      {
        auth: "campaigns.write",
        params: MessageParams,
        query: TenantOnly,
        detail: {
          summary: "Remove a message; its version still grows",
          ...documented({ message: MessageSchema }),
        },
      },
    );
