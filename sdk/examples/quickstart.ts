import { connectSupervisor, createClient, formData, unwrap } from "@dialer-engine/sdk";

const baseUrl = process.env.DIALER_URL ?? "http://127.0.0.1:3000";
const body = { email: process.env.DIALER_EMAIL ?? "", password: process.env.DIALER_PASSWORD ?? "" };
const { token, user } = await unwrap(
  createClient({ baseUrl }).POST("/api/v1/auth/login", { body }),
);
const api = createClient({ baseUrl, token });
console.log(`signed in as ${user.email}`);

const caller_id = "+14155550100";
const { campaign } = await unwrap(
  api.POST("/api/v1/campaigns", { body: { name: "Quickstart", caller_id } }),
);
const path = { id: campaign.id };
const { lead_list } = await unwrap(
  api.POST("/api/v1/campaigns/{id}/lead-lists", {
    params: { path },
    body: { name: "March", caller_id },
  }),
);
const csv = new File(["phone\n+14155550123\n+14155550124\n"], "leads.csv");
const { import: report } = await unwrap(
  api.POST("/api/v1/campaigns/{id}/lead-lists/{list_id}/import", {
    params: { path: { ...path, list_id: lead_list.id } },
    body: { file: csv, phone_column: "phone" },
    bodySerializer: formData,
  }),
);
console.log(`campaign ${campaign.name}: ${report.imported} leads imported into ${lead_list.name}`);

const socket = connectSupervisor({ baseUrl, token });
socket.on("campaign.status", (m) =>
  console.log(`campaign ${m.campaign_id}: ${m.from} → ${m.status}`),
);
await socket.once("snapshot");
const started = socket.once("campaign.status");
await unwrap(
  api.POST("/api/v1/campaigns/{id}/status", { params: { path }, body: { action: "start" } }),
);
await started;
socket.close();
