import type { CountryCode } from "libphonenumber-js/max";
import { type BulkSession, withBulkTransaction } from "../../../db/bulk.ts";
import { fieldNamesOf, fieldRecord } from "../../../db/field-names.ts";
import { DNC_LISTING_LOCK } from "../../../db/queries/calls.ts";
import { analyzeLeads, type LeadListRow, type LeadRow } from "../../../db/queries/leads.ts";
import { ENQUEUE_EVENTS_SQL, eventsParam, leadEvents } from "../../../db/queries/webhooks.ts";
import { namedStatement } from "../../../db/statement.ts";
import { zonesOf } from "../../compliance/zones.ts";
import type { RequestMeta, ServiceDeps } from "../../deps.ts";
import { ApiError, badRequest, type FieldError, INVALID_BODY } from "../../errors.ts";
import { auditActorOf, type Principal } from "../../identity/principal.ts";
import { type CsvRow, csvRows, NotTextError, UNCLOSED_QUOTE } from "./csv.ts";
import { type ImportView, importView } from "./model.ts";
import { canonicalTimeZone, isRegion, normalisePhone } from "./normalise.ts";
import type { ImportUpload } from "./upload.ts";

/** Why a row was not imported; also the `reason` of the rejected-rows export. */
export type RejectReason =
  | "unclosed_quote"
  | "too_few_cells"
  | "too_many_cells"
  | "missing_phone"
  | "invalid_phone"
  | "invalid_timezone"
  | "unknown_timezone"
  | "do_not_call"
  | "duplicate";

export const MAX_REPORTED_ERRORS = 100;

type ZoneSource = LeadRow["zoneSource"];

interface Columns {
  header: string[];
  /** Each column's name in a lead's `fields` (`fieldNamesOf`). */
  fieldNames: string[];
  phone: number;
  phoneName: string;
  /** The zone column, when the request names one. */
  zone: { index: number; name: string } | undefined;
  region: CountryCode | undefined;
  /** The zone of a lead whose cell is empty and whose number is in no zone. */
  defaultZone: string | undefined;
}

type Verdict =
  | {
      ok: true;
      phone: string;
      timezone: string;
      zoneSource: ZoneSource;
      fields: Record<string, string>;
    }
  | { ok: false; reason: RejectReason; column: string | null };

/** Finds a header cell by name: exact, or ignoring surrounding spaces. */
function columnIndex(header: string[], name: string): number {
  const exact = header.indexOf(name);
  return exact !== -1 ? exact : header.findIndex((cell) => cell.trim() === name.trim());
}

function judgeRow(cells: CsvRow, columns: Columns): Verdict {
  const { header } = columns;
  // A quote that never closes swallows every line after it into one cell: said as such.
  if (cells[UNCLOSED_QUOTE]) return { ok: false, reason: "unclosed_quote", column: null };
  if (cells.length < header.length) return { ok: false, reason: "too_few_cells", column: null };
  if (cells.length > header.length) return { ok: false, reason: "too_many_cells", column: null };
  const phoneCell = (cells[columns.phone] as string).trim();
  if (phoneCell === "") return { ok: false, reason: "missing_phone", column: columns.phoneName };
  const phone = normalisePhone(phoneCell, columns.region);
  if (!phone) return { ok: false, reason: "invalid_phone", column: columns.phoneName };
  const { zone } = columns;
  const zoneCell = zone ? (cells[zone.index] as string).trim() : "";
  let timezone: string | undefined;
  let zoneSource: ZoneSource;
  if (zone && zoneCell !== "") {
    timezone = canonicalTimeZone(zoneCell);
    if (!timezone) return { ok: false, reason: "invalid_timezone", column: zone.name };
    zoneSource = "column";
  } else {
    // The first of the number's zones stands for them all: the claim reads every one of them
    // from the number again and applies the strictest.
    timezone = zonesOf(phone)?.zones[0];
    zoneSource = "number";
    if (timezone === undefined) {
      timezone = columns.defaultZone;
      zoneSource = "default";
    }
    if (timezone === undefined)
      return { ok: false, reason: "unknown_timezone", column: columns.phoneName };
  }
  const fields = fieldRecord();
  for (let index = 0; index < header.length; index++) {
    if (index !== columns.phone && index !== zone?.index) {
      fields[columns.fieldNames[index] as string] = cells[index] as string;
    }
  }
  return { ok: true, phone, timezone, zoneSource, fields };
}

const STAGING_COLUMNS = [
  "id",
  "row_no",
  "phone",
  "timezone",
  "zone_source",
  "fields",
  "cells",
  "reason",
  "column_name",
];

/** A CSV field for COPY: quoted, so that an empty string stays a string; null stays unquoted. */
const field = (value: string | null) => (value === null ? "" : `"${value.replaceAll('"', '""')}"`);

/** Judges each data row and renders it as a line of the staging table. */
async function* stagingLines(
  rows: AsyncGenerator<string[]>,
  columns: Columns,
  maxRows: number,
  counted: { rows: number; accepted: number },
): AsyncGenerator<string> {
  for await (const cells of rows) {
    const row = ++counted.rows;
    if (row > maxRows) {
      throw new ApiError(
        413,
        "payload_too_large",
        `the file has more than the import limit of ${maxRows} rows`,
      );
    }
    const verdict = judgeRow(cells, columns);
    const cellsJson = field(JSON.stringify(cells));
    if (!verdict.ok) {
      yield `,${row},,,,,${cellsJson},${field(verdict.reason)},${field(verdict.column)}\n`;
      continue;
    }
    counted.accepted++;
    // Time-ordered ids keep the leads' indexes appended to, not scattered.
    const id = Bun.randomUUIDv7();
    yield `${id},${row},${field(verdict.phone)},${field(verdict.timezone)},${verdict.zoneSource},${field(JSON.stringify(verdict.fields))},${cellsJson},,\n`;
  }
}

/** The header row, or the 400 that explains why the file cannot be imported. */
async function readHeader(rows: AsyncGenerator<string[]>, upload: ImportUpload) {
  let first: IteratorResult<string[]>;
  try {
    first = await rows.next();
  } catch (error) {
    if (error instanceof NotTextError)
      throw badRequest(error.message, [{ field: "file", message: error.message }]);
    throw error;
  }
  if (first.done) throw badRequest(INVALID_BODY, [{ field: "file", message: "the file is empty" }]);
  const header = first.value;
  const errors: FieldError[] = [];
  const phoneName = upload.fields.get("phone_column") as string;
  // Optional: without it (or with an empty value), every lead's zone comes from its number.
  const zoneName = upload.fields.get("timezone_column") || undefined;
  const phone = columnIndex(header, phoneName);
  const zone = zoneName === undefined ? undefined : columnIndex(header, zoneName);
  if (phone === -1)
    errors.push({ field: "phone_column", message: `no column "${phoneName}" in the header` });
  if (zone === -1)
    errors.push({ field: "timezone_column", message: `no column "${zoneName}" in the header` });
  if (phone !== -1 && phone === zone) {
    errors.push({
      field: "timezone_column",
      message: "must name another column than phone_column",
    });
  }
  if (errors.length) throw badRequest(INVALID_BODY, errors);
  return {
    header,
    fieldNames: fieldNamesOf(header),
    phone,
    phoneName: header[phone] as string,
    zone: zone === undefined ? undefined : { index: zone, name: header[zone] as string },
  };
}

/**
 * The import's optional fields, or the 400 that names each bad one: `default_region`, an ISO
 * 3166 alpha-2 code for numbers written without `+`, and `default_timezone`, an IANA zone for
 * leads whose cell is empty and whose number is in no zone (stored canonical).
 */
function optionsOf(upload: ImportUpload) {
  const errors: FieldError[] = [];
  const regionValue = upload.fields.get("default_region")?.toUpperCase() || undefined;
  const region = regionValue !== undefined && isRegion(regionValue) ? regionValue : undefined;
  if (regionValue !== undefined && region === undefined)
    errors.push({ field: "default_region", message: "must be an ISO 3166 alpha-2 region code" });
  const zoneValue = upload.fields.get("default_timezone") || undefined;
  const defaultZone = zoneValue === undefined ? undefined : canonicalTimeZone(zoneValue);
  if (zoneValue !== undefined && defaultZone === undefined) {
    errors.push({
      field: "default_timezone",
      message: "must be an IANA time-zone name such as America/New_York",
    });
  }
  if (errors.length) throw badRequest(INVALID_BODY, errors);
  return { region, defaultZone };
}

/**
 * An import this large refreshes the planner's statistics on leads at once: PGlite has no
 * autovacuum, and PostgreSQL's comes a minute later, while the dialer reads the new leads
 * straight away. On stale statistics it planned its claims over every lead of the campaign.
 */
const ANALYZE_AFTER_ROWS = 1_000;

/** Refreshes the planner's statistics after a large import; runs after the import committed. */
export async function refreshLeadStatistics(deps: ServiceDeps, imported: number): Promise<void> {
  if (imported >= ANALYZE_AFTER_ROWS) await analyzeLeads(deps.db);
}

/**
 * Imports a spooled CSV into a lead list, all or nothing. Rows are judged as they stream (a
 * lead's zone is its zone cell's, else its number's, else the import's default) and copied
 * into a staging table; duplicates (within the file or already in the list) are then
 * found by the database through the list's unique (list, phone) index, numbers on the tenant's
 * do-not-call list are refused, and the accepted rows
 * become `Fresh` leads in file order. Every rejected row is kept with its reason.
 */
export async function runImport(
  deps: ServiceDeps,
  principal: Principal,
  list: LeadListRow,
  upload: ImportUpload,
  meta: RequestMeta,
): Promise<ImportView> {
  const options = optionsOf(upload);
  const file = upload.file as NonNullable<ImportUpload["file"]>;
  const rows = csvRows(file.path);
  try {
    const columns: Columns = { ...(await readHeader(rows, upload)), ...options };
    const importId = Bun.randomUUIDv7();
    const startedAt = new Date(deps.clock.now());
    const counted = { rows: 0, accepted: 0 };
    const actor = auditActorOf(principal);
    const view = await withBulkTransaction(deps.rawDb, async (session) => {
      // Imports into one list run one after another, so duplicate detection stays exact.
      await session.execute("select id from lead_lists where id = $1 for update", [list.id]);
      await session.execute(
        INSERT_IMPORT.text,
        INSERT_IMPORT.values({
          id: importId,
          tenant_id: list.tenantId,
          campaign_id: list.campaignId,
          lead_list_id: list.id,
          file_name: file.name ?? null,
          header: JSON.stringify(columns.header),
          actor_type: actor.actorType,
          actor_id: actor.actorId,
          request_id: meta.requestId,
          started_at: startedAt.toISOString(),
        }),
      );
      await session.execute(
        `create temp table lead_import_staging (id uuid, row_no integer not null, phone text, timezone text,
           zone_source text, fields jsonb, cells jsonb not null, reason text, column_name text) on commit drop`,
      );
      await session.copyFrom(
        "lead_import_staging",
        STAGING_COLUMNS,
        stagingLines(rows, columns, deps.config.IMPORT_MAX_ROWS, counted),
      );
      return finishImport(session, {
        importId,
        list,
        columns,
        accepted: counted.accepted,
        startedAt,
        now: () => new Date(deps.clock.now()),
      });
    });
    return view;
  } catch (error) {
    if (error instanceof NotTextError)
      throw badRequest(error.message, [{ field: "file", message: error.message }]);
    throw error;
  } finally {
    // Closing the file must not fail an import that committed.
    await rows.return(undefined).catch(() => undefined);
  }
}

async function finishImport(
  session: BulkSession,
  params: {
    importId: string;
    list: LeadListRow;
    columns: Columns;
    /** Rows that passed the row checks: those not imported were refused or duplicates. */
    accepted: number;
    startedAt: Date;
    now: () => Date;
  },
): Promise<ImportView> {
  const { importId, list, columns } = params;
  const createdAt = params.now().toISOString();
  const refused = await session.execute(
    `update lead_import_staging s set reason = 'do_not_call', column_name = $2
     from dnc_numbers d where d.tenant_id = $1::uuid and d.phone = s.phone and s.reason is null`,
    [list.tenantId, columns.phoneName],
  );
  // ORDER BY keeps file order in `seq` and lets the first of two equal phones win.
  const imported = await session.execute(
    `insert into leads (id, tenant_id, campaign_id, lead_list_id, import_id, import_row, phone, timezone,
       zone_source, state, attempts, fields, created_at, updated_at)
     select id, $1::uuid, $2::uuid, $3::uuid, $4::uuid, row_no, phone, timezone, zone_source, 'Fresh', 0,
       fields, $5::timestamptz, $5::timestamptz
     from lead_import_staging where reason is null order by row_no
     on conflict (lead_list_id, phone) do nothing`,
    [list.tenantId, list.campaignId, list.id, importId, createdAt],
  );
  // Accepted rows that did not become leads are duplicates; probing for them per row is only
  // worth it when there are some.
  const duplicates = params.accepted - refused - imported;
  const rejected = await session.execute(
    `insert into lead_import_rejections (import_id, row, column_name, reason, cells)
     select $1::uuid, s.row_no, case when s.reason is null then $3::text else s.column_name end,
       coalesce(s.reason, 'duplicate'), s.cells
     from lead_import_staging s
     where s.reason is not null or ($4::boolean and not exists (
       select 1 from leads l
       where l.lead_list_id = $2::uuid and l.phone = s.phone and l.import_id = $1::uuid and l.import_row = s.row_no))`,
    [importId, list.id, columns.phoneName, duplicates > 0],
  );
  const errors = await session.query<{ row: number; column_name: string | null; reason: string }>(
    "select row, column_name, reason from lead_import_rejections where import_id = $1 order by row limit $2",
    [importId, MAX_REPORTED_ERRORS],
  );
  const finishedAt = params.now();
  const reported = errors.map((error) => ({
    row: error.row,
    column: error.column_name,
    reason: error.reason,
  }));
  await session.execute(
    "update lead_imports set imported = $2, rejected = $3, errors = $4::jsonb, finished_at = $5 where id = $1",
    [importId, imported, rejected, JSON.stringify(reported), finishedAt.toISOString()],
  );
  await session.execute(
    "update lead_lists set lead_count = lead_count + $2, updated_at = $3 where id = $1",
    [list.id, imported, finishedAt.toISOString()],
  );
  const view = importView({
    id: importId,
    leadListId: list.id,
    imported,
    rejected,
    errors: reported,
    startedAt: params.startedAt,
    finishedAt,
  });
  // The last look at the do-not-call list, under its lock until the commit: a number listed
  // while the file was read ends the leads it brought, as a listing after the commit would.
  await session.execute("select pg_advisory_xact_lock($1::int, hashtext($2::text))", [
    DNC_LISTING_LOCK,
    list.tenantId,
  ]);
  const listed = await session.query<{ id: string }>(
    `update leads l set listed_from = l.state, state = 'DoNotCall', updated_at = $4::timestamptz
     from lead_import_staging s, dnc_numbers d
     where s.reason is null and d.tenant_id = $1::uuid and d.phone = s.phone
       and l.lead_list_id = $2::uuid and l.phone = s.phone and l.import_id = $3::uuid
       and l.state = 'Fresh'
     returning l.id::text`,
    [list.tenantId, list.id, importId, finishedAt.toISOString()],
  );
  await session.execute(ENQUEUE_EVENTS_SQL, [
    eventsParam([
      ...leadEvents(
        "lead.completed",
        list.tenantId,
        listed.map((lead) => lead.id),
        finishedAt,
      ),
      {
        type: "import.finished",
        tenantId: list.tenantId,
        orderKey: list.id,
        data: { campaign_id: list.campaignId, import: view },
        at: finishedAt,
      },
    ]),
  ]);
  return view;
}

/** An import's own row, written first and finished once its leads are in. */
const INSERT_IMPORT = namedStatement<{
  id: string;
  tenant_id: string;
  campaign_id: string;
  lead_list_id: string;
  file_name: string | null;
  header: string;
  actor_type: string;
  actor_id: string;
  request_id: string;
  started_at: string;
}>(`
  insert into lead_imports (id, tenant_id, campaign_id, lead_list_id, file_name, header, imported,
    rejected, errors, actor_type, actor_id, request_id, started_at, finished_at)
  values (:id, :tenant_id, :campaign_id, :lead_list_id, :file_name, :header::jsonb, 0, 0,
    '[]'::jsonb, :actor_type, :actor_id, :request_id, :started_at, :started_at)`);
