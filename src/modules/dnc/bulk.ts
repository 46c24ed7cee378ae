import Papa from "papaparse";
import { addDncMany, retireListedLeads, shareDncListing } from "../../../db/queries/calls.ts";
import type { RequestMeta, ServiceDeps } from "../../deps.ts";
import { ApiError, badRequest, unprocessable } from "../../errors.ts";
import { recordAudit } from "../../identity/audit.ts";
import { auditActorOf, type Principal } from "../../identity/principal.ts";
import { readBoundedBytes } from "../../plugins/json-body.ts";
import { recountCampaigns } from "../campaigns/service.ts";
import { normalisePhone } from "../leads/normalise.ts";
import { endListedLeads } from "./service.ts";

/** The largest list one upload takes. */
export const MAX_DNC_UPLOAD_BYTES = 5 * 1024 * 1024;
export const MAX_DNC_UPLOAD_ROWS = 100_000;
/** Rows refused are listed up to this many; the count says how many there were. */
const LISTED_REJECTIONS = 100;
const BATCH = 1_000;

export interface DncUploadReport {
  rows: number;
  added: number;
  already_listed: number;
  rejected: number;
  rejections: { row: number; value: string; reason: string }[];
}

/**
 * A CSV of numbers put on the do-not-call list at once: the column named `phone` (any case),
 * else the first; a first row that is not a number is taken for a header. Each number as
 * typed (`+1 415-555-2671`), checked and written in E.164; those already listed are counted
 * apart, the rest refused with their row. One audit record for the upload.
 */
export async function uploadDnc(
  deps: ServiceDeps,
  input: { principal: Principal; tenantId: string; request: Request; meta: RequestMeta },
): Promise<DncUploadReport> {
  const bytes = await readBoundedBytes(
    input.request,
    MAX_DNC_UPLOAD_BYTES,
    () =>
      new ApiError(413, "payload_too_large", `a list larger than ${MAX_DNC_UPLOAD_BYTES} bytes`),
  );
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes).replace(/^\uFEFF/, "");
  } catch {
    throw badRequest("invalid CSV", [{ field: "file", message: "must be UTF-8 text" }]);
  }
  const parsed = Papa.parse<string[]>(text, { skipEmptyLines: "greedy" });
  const rows = parsed.data;
  // A quote never closed runs on to the end of the file: the last row is the one it opened
  // (papaparse's own row number does not count the blank lines it skipped).
  const unclosed = parsed.errors.some((error) => error.code === "MissingQuotes")
    ? rows.length - 1
    : -1;
  const first = rows[0] ?? [];
  const named = first.findIndex((cell) => cell.trim().toLowerCase() === "phone");
  const column = Math.max(0, named);
  const headed =
    named >= 0 || (first[0] !== undefined && !normalisePhone(first[0].trim(), undefined));
  if (rows.length - (headed ? 1 : 0) > MAX_DNC_UPLOAD_ROWS)
    throw new ApiError(413, "payload_too_large", `a list of more than ${MAX_DNC_UPLOAD_ROWS} rows`);
  const report: DncUploadReport = {
    rows: 0,
    added: 0,
    already_listed: 0,
    rejected: 0,
    rejections: [],
  };
  const phones = new Set<string>();
  const refuse = (index: number, value: string, reason: string) => {
    report.rejected++;
    if (report.rejections.length < LISTED_REJECTIONS)
      report.rejections.push({ row: index + 1, value: value.slice(0, 64), reason });
  };
  for (const [index, cells] of rows.entries()) {
    if (headed && index === 0) continue;
    report.rows++;
    const value = (cells[column] ?? "").trim();
    const phone = value ? normalisePhone(value, undefined) : undefined;
    if (index === unclosed) refuse(index, cells.join(",").trim(), "unclosed_quote");
    else if (!value) refuse(index, value, "missing_phone");
    else if (!phone) refuse(index, value, "invalid_phone");
    else if (phones.has(phone)) refuse(index, value, "duplicate");
    else phones.add(phone);
  }
  if (report.rows === 0)
    throw unprocessable("file", "has no numbers: a column named phone, or one number a row");
  const at = new Date(deps.clock.now());
  const actor = auditActorOf(input.principal);
  // In one order across batches too: two uploads of the same numbers never wait in a circle.
  const all = [...phones].sort();
  // All or nothing, with its audit record: a failure part-way leaves the list as it was.
  // Every number's leads still to be dialled end, those of numbers listed before included.
  const campaigns = new Set<string>();
  await deps.db.transaction(async (tx) => {
    report.added = 0;
    campaigns.clear();
    await shareDncListing(tx, input.tenantId);
    for (let start = 0; start < all.length; start += BATCH) {
      const phones = all.slice(start, start + BATCH);
      const added = await addDncMany(tx, {
        tenantId: input.tenantId,
        phones,
        source: "import",
        createdBy: actor.actorId,
        at,
      });
      report.added += added.length;
      const retired = await retireListedLeads(tx, {
        tenantId: input.tenantId,
        phones,
        at,
        passLocked: true,
      });
      for (const campaignId of retired) campaigns.add(campaignId);
    }
    report.already_listed = all.length - report.added;
    await recordAudit(tx, {
      tenantId: input.tenantId,
      ...actor,
      action: "dnc.imported",
      targetType: "dnc_list",
      targetId: null,
      requestId: input.meta.requestId,
      details: {
        rows: report.rows,
        added: report.added,
        already_listed: report.already_listed,
        rejected: report.rejected,
      },
      at,
    });
  });
  await recountCampaigns(deps, input.tenantId, [...campaigns]);
  for (let start = 0; start < all.length; start += BATCH)
    await endListedLeads(deps, input.tenantId, all.slice(start, start + BATCH));
  return report;
}
