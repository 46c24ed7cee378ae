import { encodeWav } from "../../src/media/wav.ts";
import type { Harness } from "./app.ts";

/** Posts a multipart import the way a browser or curl would. */
export function importFile(
  h: Harness,
  path: string,
  token: string,
  csv: string | Uint8Array | null,
  fields: Record<string, string> = { phone_column: "phone", timezone_column: "timezone" },
  fileName = "leads.csv",
) {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  if (csv !== null) form.append("file", new Blob([csv], { type: "text/csv" }), fileName);
  return h.request("POST", path, { token, rawBody: form });
}

/**
 * A started campaign of `settings` with one lead list imported from `csv` (phone and
 * timezone columns), and an edge node's key, all made through the API.
 */
export async function runningCampaign(
  h: Harness,
  admin: string,
  settings: Record<string, unknown>,
  csv: string,
): Promise<{ campaignId: string; listId: string; nodeKey: string }> {
  const created = await h.request("POST", "/api/v1/campaigns", { token: admin, body: settings });
  const campaignId = created.body.data.campaign.id as string;
  const list = await h.request("POST", `/api/v1/campaigns/${campaignId}/lead-lists`, {
    token: admin,
    body: { name: "L", caller_id: "+14155550100" },
  });
  const listId = list.body.data.lead_list.id as string;
  await importFile(h, `/api/v1/campaigns/${campaignId}/lead-lists/${listId}/import`, admin, csv);
  const node = await h.request("POST", "/api/v1/edge-nodes", {
    token: admin,
    body: { name: "edge", max_concurrent_calls: 10 },
  });
  await h.request("POST", `/api/v1/campaigns/${campaignId}/status`, {
    token: admin,
    body: { action: "start" },
  });
  return { campaignId, listId, nodeKey: node.body.data.key as string };
}

/**
 * Records a second of tone as the campaign's abandon message: under a profile that requires
 * one, a campaign without it reserves an agent for every call, so nothing is ever abandoned.
 */
export async function recordAbandonMessage(w: Harness, token: string, campaignId: string) {
  const samples = new Int16Array(8000).map((_, i) => Math.round(8000 * Math.sin(i / 3)));
  const reply = await w.request("PUT", `/api/v1/campaigns/${campaignId}/messages/abandon`, {
    token,
    headers: { "content-type": "audio/wav" },
    rawBody: encodeWav(samples, 8000),
  });
  if (reply.status !== 201) throw new Error(`the abandon message was refused: ${reply.status}`);
}
