import type { createWorkspace } from "./app.ts";
import { importFile } from "./leads.ts";
import type { Message } from "./sockets.ts";

type Workspace = Awaited<ReturnType<typeof createWorkspace>>;

/** A JSON request to one process of several, at `url`, as a client sends it; the body parsed. */
export async function requestOn(
  url: string,
  token: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Message> {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return (await response.json()) as Message;
}

/** A campaign made through the process at `url`, with one list of these numbers imported. */
export async function campaignWithLeads(
  w: Workspace,
  url: string,
  admin: string,
  campaign: Record<string, unknown>,
  leads: { phones: readonly string[]; timezone: string },
) {
  const made = (await requestOn(url, admin, "POST", "/api/v1/campaigns", campaign)).data.campaign;
  const list = (
    await requestOn(url, admin, "POST", `/api/v1/campaigns/${made.id}/lead-lists`, {
      name: "L",
      caller_id: "+14155550100",
    })
  ).data.lead_list;
  await importFile(
    w,
    `/api/v1/campaigns/${made.id}/lead-lists/${list.id}/import`,
    admin,
    `phone,timezone\n${leads.phones.map((phone) => `${phone},${leads.timezone}`).join("\n")}\n`,
  );
  return { campaign: made, list };
}
