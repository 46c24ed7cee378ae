import type { CampaignRecord, CampaignSnapshot } from "../../../actors/campaign.machine.ts";
import type { CommitFacts, Decision, MessageCommand } from "../../../actors/commands.ts";
import type { MessageRow } from "../../../db/queries/messages.ts";
import { notFound } from "../../errors.ts";
import { messageView } from "./model.ts";

/** The campaign's version of each kind of message. */
export const messageVersionOf = (campaign: CampaignRecord, kind: MessageCommand["kind"]) =>
  kind === "abandon"
    ? campaign.abandonMessageVersion
    : kind === "voicemail"
      ? campaign.voicemailMessageVersion
      : campaign.optOutMessageVersion;

/**
 * A message recorded or removed: stored with its audit record, and the campaign's version of
 * it changed, so that the next calls' jobs name it. Removing one there is not is a 404.
 */
export function decideMessage(
  snapshot: CampaignSnapshot,
  command: MessageCommand,
  now: number,
): Decision<{ message: ReturnType<typeof messageView> }> {
  const { campaign } = snapshot.context;
  if (!command.audio && messageVersionOf(campaign, command.kind) === null)
    throw notFound("message");
  const written = (facts: CommitFacts) => facts.message as MessageRow;
  return {
    writes: [
      {
        type: "message",
        campaign,
        kind: command.kind,
        audio: command.audio,
        by: command.by,
        requestId: command.requestId,
        at: new Date(now),
      },
    ],
    adopt: (facts) => [{ type: "campaign.updated", campaign: facts.campaign as CampaignRecord }],
    effects: () => [],
    reply: (facts) => {
      const row = written(facts);
      return { message: messageView({ ...row, bytes: row.audio?.byteLength ?? 0 }) };
    },
  };
}
