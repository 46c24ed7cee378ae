import { findTenantCampaign } from "../../../db/queries/campaigns.ts";
import {
  findLeadImport,
  findLeadList,
  insertLeadList,
  type LeadState,
  listLeadImports,
  listLeadLists,
  listLeads,
} from "../../../db/queries/leads.ts";
import type { RequestMeta, ServiceDeps } from "../../deps.ts";
import type { Page } from "../../envelope.ts";
import { badRequest, INVALID_BODY, notFound } from "../../errors.ts";
import { auditedWrite } from "../../identity/audit.ts";
import { auditActorOf, type Principal } from "../../identity/principal.ts";
import { isUuid } from "../../identity/tenant-scope.ts";
import { attemptWithRetries } from "../../lib/retry.ts";
import { refreshLeadStatistics, runImport } from "./import.ts";
import { type CreateLeadListInput, importView, leadListView, leadView } from "./model.ts";
import { assertCallerId, normalisePhone } from "./normalise.ts";
import { rejectedRowsCsv } from "./rejected-csv.ts";
import { receiveImport, requestFieldErrors } from "./upload.ts";

async function loadCampaign(deps: ServiceDeps, tenantId: string, campaignId: string) {
  const campaign = isUuid(campaignId)
    ? await findTenantCampaign(deps.db, { tenantId, campaignId })
    : undefined;
  if (!campaign) throw notFound("campaign");
  return campaign;
}

async function loadList(deps: ServiceDeps, tenantId: string, campaignId: string, listId: string) {
  await loadCampaign(deps, tenantId, campaignId);
  const list = isUuid(listId)
    ? await findLeadList(deps.db, { tenantId, campaignId, id: listId })
    : undefined;
  if (!list) throw notFound("lead list");
  return list;
}

export async function createLeadList(
  deps: ServiceDeps,
  principal: Principal,
  tenantId: string,
  campaignId: string,
  input: CreateLeadListInput,
  meta: RequestMeta,
) {
  assertCallerId(input.caller_id);
  await loadCampaign(deps, tenantId, campaignId);
  const now = new Date(deps.clock.now());
  const list = await auditedWrite(
    deps.db,
    (tx) =>
      insertLeadList(tx, {
        id: Bun.randomUUIDv7(),
        tenantId,
        campaignId,
        name: input.name.trim(),
        callerId: input.caller_id,
        leadCount: 0,
        createdAt: now,
        updatedAt: now,
      }),
    {
      tenantId,
      actor: auditActorOf(principal),
      action: "lead_list.created",
      targetType: "lead_list",
      requestId: meta.requestId,
      at: now,
      details: (row) => ({ campaign_id: campaignId, name: row.name }),
    },
  );
  return { lead_list: leadListView(list) };
}

export async function getLeadLists(
  deps: ServiceDeps,
  tenantId: string,
  campaignId: string,
  page: Page,
) {
  await loadCampaign(deps, tenantId, campaignId);
  const { items, total } = await listLeadLists(deps.db, { tenantId, campaignId, page });
  return { items: items.map(leadListView), total };
}

export async function getLeadList(
  deps: ServiceDeps,
  tenantId: string,
  campaignId: string,
  listId: string,
) {
  return { lead_list: leadListView(await loadList(deps, tenantId, campaignId, listId)) };
}

export async function getLeads(
  deps: ServiceDeps,
  tenantId: string,
  campaignId: string,
  listId: string,
  filter: { state?: LeadState | undefined; phone?: string | undefined },
  page: Page,
) {
  const list = await loadList(deps, tenantId, campaignId, listId);
  // The phone filter takes what a user would type; E.164 is what is stored.
  const phone =
    filter.phone === undefined
      ? undefined
      : (normalisePhone(filter.phone, undefined) ?? filter.phone);
  const { items, total } = await listLeads(deps.db, {
    tenantId,
    leadListId: list.id,
    filter: { state: filter.state, phone },
    page,
  });
  return { items: items.map(leadView), total };
}

/** Receives the upload first (nothing is written until the request is known to be whole). */
export async function importLeadFile(
  deps: ServiceDeps,
  principal: Principal,
  tenantId: string,
  campaignId: string,
  listId: string,
  request: Request,
  meta: RequestMeta,
) {
  const list = await loadList(deps, tenantId, campaignId, listId);
  const upload = await receiveImport(request, deps.config.IMPORT_MAX_BYTES);
  try {
    const errors = requestFieldErrors(upload);
    if (errors.length) throw badRequest(INVALID_BODY, errors);
    const result = await deps.importGate.run(list.id, () =>
      runImport(deps, principal, list, upload, meta),
    );
    await followUpImport(deps, {
      tenantId,
      campaignId: list.campaignId,
      importId: result.id,
      imported: result.imported,
    });
    return { import: result };
  } finally {
    await upload
      .discard()
      .catch((error) => deps.logger.warn("could not remove an upload", { error }));
  }
}

/** Back-off between retries of the work that follows a committed import. */
export const IMPORT_FOLLOW_UP_RETRY_MS = [1_000, 5_000, 30_000] as const;

/**
 * The work that follows a committed import: planner statistics, then the live campaign's
 * lead counts and its stats push. The import already stands, so a failure here is logged and
 * retried in the background, and the caller still gets its report.
 */
async function followUpImport(
  deps: ServiceDeps,
  job: { tenantId: string; campaignId: string; importId: string; imported: number },
) {
  if (job.imported === 0) return;
  const steps: [string, () => Promise<void>][] = [
    ["lead statistics", () => refreshLeadStatistics(deps, job.imported)],
    ["lead counts", () => recountLeads(deps, job.tenantId, job.campaignId)],
  ];
  for (const [step, task] of steps) {
    await attemptWithRetries(task, {
      delaysMs: IMPORT_FOLLOW_UP_RETRY_MS,
      onFailure: (error, attempt, final) =>
        deps.logger[final ? "error" : "warn"](`import follow-up failed: ${step}`, {
          import_id: job.importId,
          campaign_id: job.campaignId,
          attempt,
          error,
        }),
    });
  }
}

export async function getImports(
  deps: ServiceDeps,
  tenantId: string,
  campaignId: string,
  listId: string,
  page: Page,
) {
  const list = await loadList(deps, tenantId, campaignId, listId);
  const { items, total } = await listLeadImports(deps.db, { tenantId, leadListId: list.id, page });
  return { items: items.map(importView), total };
}

export async function rejectedCsv(
  deps: ServiceDeps,
  tenantId: string,
  campaignId: string,
  listId: string,
  importId: string,
) {
  const list = await loadList(deps, tenantId, campaignId, listId);
  const found = isUuid(importId)
    ? await findLeadImport(deps.db, { tenantId, leadListId: list.id, id: importId })
    : undefined;
  if (!found) throw notFound("import");
  return {
    fileName: `rejected-${found.id}.csv`,
    stream: rejectedRowsCsv(deps.db, found.id, found.header),
  };
}

/** New leads join a live campaign's counts (and its stats) once they are committed. */
async function recountLeads(deps: ServiceDeps, tenantId: string, campaignId: string) {
  await deps.campaigns.run({ tenantId, campaignId }, { type: "leads.recount" });
}
