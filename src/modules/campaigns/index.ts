import { Elysia, t } from "elysia";
import type { ServiceDeps } from "../../deps.ts";
import { leadEligibility } from "../../dialer/eligibility.ts";
import { EligibilitySchema } from "../../dialer/model.ts";
import { jsonText, ok, okAll, okList } from "../../envelope.ts";
import { alsoAsCsv, documented, documentedList } from "../../openapi-bodies.ts";
import { PageQuery, parsePage } from "../../pagination.ts";
import type { AuthGuard } from "../../plugins/auth.ts";
import { jsonBody } from "../../plugins/json-body.ts";
import { TenantQuery } from "../users/model.ts";
import { campaignCompliance, complianceEvidence } from "./compliance.ts";
import {
  CampaignListQuery,
  CampaignParams,
  CampaignSchema,
  CampaignStatsSchema,
  ComplianceSchema,
  CreateCampaignBody,
  PatchCampaignBody,
  StatusActionBody,
  StatusChangeSchema,
} from "./model.ts";
import {
  campaignHistory,
  changeCampaignStatus,
  createCampaign,
  getCampaign,
  listCampaigns,
  patchCampaign,
} from "./service.ts";
import { campaignStatsHistory, MinuteFiguresSchema, StatsHistoryQuery } from "./stats-history.ts";

const TenantOnly = t.Object(TenantQuery);

export const campaignsModule = (deps: ServiceDeps, auth: AuthGuard) =>
  new Elysia({ prefix: "/api/v1/campaigns", detail: { tags: ["campaigns"] } })
    .use(auth)
    .post(
      "",
      async ({ principal, tenantId, meta, body, set }) => {
        const result = await createCampaign(deps, principal, tenantId, body, meta);
        set.status = 201;
        return ok(result);
      },
      {
        auth: "campaigns.write",
        ...jsonBody(CreateCampaignBody),
        query: TenantOnly,
        detail: {
          summary: "Create a campaign (status draft)",
          ...documented({ campaign: CampaignSchema }, 201),
        },
      },
    )
    .get(
      "",
      async ({ tenantId, query }) => {
        const page = parsePage(query);
        const { items, total } = await listCampaigns(deps, tenantId, query.status, page);
        return okList(items, total, page);
      },
      {
        auth: "campaigns.read",
        query: CampaignListQuery,
        detail: { summary: "List campaigns, newest first", ...documentedList(CampaignSchema) },
      },
    )
    .get("/:id", async ({ tenantId, params }) => ok(await getCampaign(deps, tenantId, params.id)), {
      auth: "campaigns.read",
      params: CampaignParams,
      query: TenantOnly,
      detail: {
        summary: "One campaign, with live stats",
        ...documented({
          campaign: t.Object({ ...CampaignSchema.properties, stats: CampaignStatsSchema }),
        }),
      },
    })
    .patch(
      "/:id",
      async ({ principal, tenantId, meta, params, body }) =>
        ok(await patchCampaign(deps, principal, tenantId, params.id, body, meta)),
      {
        // Supervisors may change the profile alone; the service asks more for the rest.
        auth: "campaigns.rules",
        params: CampaignParams,
        query: TenantOnly,
        ...jsonBody(PatchCampaignBody),
        detail: {
          summary: "Change a campaign's settings (optimistic concurrency on version)",
          ...documented({ campaign: CampaignSchema }),
        },
      },
    )
    .post(
      "/:id/status",
      async ({ principal, tenantId, meta, params, body, headers, set }) => {
        const reply = await changeCampaignStatus(
          deps,
          principal,
          tenantId,
          params.id,
          body.action,
          headers["idempotency-key"],
          meta,
        );
        set.status = reply.status;
        if (reply.replayed) set.headers["idempotent-replayed"] = "true";
        return jsonText(set, reply.text);
      },
      {
        auth: "campaigns.status",
        params: CampaignParams,
        query: TenantOnly,
        ...jsonBody(StatusActionBody),
        headers: t.Object({ "idempotency-key": t.Optional(t.String()) }),
        detail: {
          summary: "Start, pause or stop a campaign",
          ...documented({ campaign: CampaignSchema }),
          description:
            "With an `Idempotency-Key` header, the first response (status and body) is kept for 60 s and " +
            "replayed with `Idempotent-Replayed: true`; the same key with a different body is 422.",
        },
      },
    )
    .get(
      "/:id/compliance",
      async ({ tenantId, params, request }) => {
        if (request.headers.get("accept")?.includes("text/csv")) {
          return new Response(await complianceEvidence(deps, tenantId, params.id), {
            headers: {
              "content-type": "text/csv; charset=utf-8",
              "content-disposition": `attachment; filename="compliance-${params.id}.csv"`,
            },
          });
        }
        return ok(await campaignCompliance(deps, tenantId, params.id));
      },
      {
        auth: "campaigns.history",
        params: CampaignParams,
        query: t.Object(TenantQuery),
        detail: {
          summary:
            "Abandon-rate compliance: live answers and abandons over the legal window (the campaign's life under 30 days, else the last 30 days) and the last 24 hours, with the abandon budget left; `Accept: text/csv` exports the counted calls",
          ...alsoAsCsv(
            documented({ compliance: ComplianceSchema }),
            "The compliance figures; with `Accept: text/csv`, the counted calls as CSV",
          ),
        },
      },
    )
    .get(
      "/:id/stats/history",
      async ({ tenantId, params, query }) =>
        okAll(await campaignStatsHistory(deps, tenantId, params.id, query)),
      {
        auth: "campaigns.read",
        params: CampaignParams,
        query: StatsHistoryQuery,
        detail: {
          summary: "The campaign's figures minute by minute, from its call records",
          description:
            "`data.items` of `{minute, attempts, answered, abandoned, bridged_late, machine, no_answer, busy, failed, talk_seconds, answer_rate, abandon_rate}` (abandoned as the compliance ledger counts them: with no agent, or put through later than 2 s), one per whole minute from `from` to `to` (rounded down; `to` excluded), minutes without calls included for a range up to a week, only the minutes with calls for a longer one; a call counts in the minute it ended. The last hour by default; at most 92 days per request (422 naming `from`); `from` after `to` is 422; kept as long as the CDRs.",
          ...documentedList(MinuteFiguresSchema),
        },
      },
    )
    .get(
      "/:id/history",
      async ({ tenantId, params, query }) => {
        const page = parsePage(query);
        const { items, total } = await campaignHistory(deps, tenantId, params.id, page);
        return okList(items, total, page);
      },
      {
        auth: "campaigns.history",
        params: CampaignParams,
        query: t.Object({ ...PageQuery, ...TenantQuery }),
        detail: {
          summary: "Every status change, newest first",
          ...documentedList(StatusChangeSchema),
        },
      },
    )
    .get(
      "/:id/leads/:lead_id/eligibility",
      async ({ tenantId, params }) =>
        ok(await leadEligibility(deps, tenantId, params.id, params.lead_id)),
      {
        auth: "leads.read",
        params: t.Object({ id: t.String(), lead_id: t.String() }),
        query: TenantOnly,
        detail: {
          summary: "Why a lead may or may not be dialled now, until when, and when it next may be",
          ...documented(EligibilitySchema.properties),
        },
      },
    );
