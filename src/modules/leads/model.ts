import { Type } from "@sinclair/typebox";
import { type Static, t } from "elysia";
import type { LeadImportRow, LeadListRow, LeadRow } from "../../../db/queries/leads.ts";
import { LEAD_STATES, leads } from "../../../db/schema/leads.ts";
import { PageQuery } from "../../pagination.ts";
import { E164 } from "../campaigns/model.ts";
import { TenantQuery, Timestamp } from "../users/model.ts";

export const LeadStateSchema = t.Union(LEAD_STATES.map((state) => t.Literal(state)));

export const ZoneSourceSchema = t.Union(
  leads.zoneSource.enumValues.map((source) => t.Literal(source)),
  {
    description:
      "where `timezone` came from: the file's zone `column`; the `number` (its first zone; " +
      "the dialer applies the strictest of all the number's zones); the import's `default`",
  },
);

export const CreateLeadListBody = t.Object(
  { name: t.String({ minLength: 1, maxLength: 200, pattern: "\\S" }), caller_id: E164 },
  { additionalProperties: false },
);
export type CreateLeadListInput = Static<typeof CreateLeadListBody>;

export const CampaignParams = t.Object({ id: t.String() });
export const ListParams = t.Object({ id: t.String(), list_id: t.String() });
export const ImportParams = t.Object({
  id: t.String(),
  list_id: t.String(),
  import_id: t.String(),
});
export const TenantOnlyQuery = t.Object(TenantQuery);
export const PagedQuery = t.Object({ ...PageQuery, ...TenantQuery });
export const LeadsQuery = t.Object({
  ...PageQuery,
  ...TenantQuery,
  state: t.Optional(LeadStateSchema),
  phone: t.Optional(t.String({ maxLength: 64 })),
});

export const LeadListSchema = t.Object({
  id: t.String({ format: "uuid" }),
  campaign_id: t.String({ format: "uuid" }),
  name: t.String(),
  caller_id: t.String(),
  lead_count: Type.Integer(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type LeadListView = Static<typeof LeadListSchema>;

export const leadListView = (row: LeadListRow): LeadListView => ({
  id: row.id,
  campaign_id: row.campaignId,
  name: row.name,
  caller_id: row.callerId,
  lead_count: row.leadCount,
  created_at: row.createdAt.toISOString(),
  updated_at: row.updatedAt.toISOString(),
});

const nullableTimestamp = t.Union([Timestamp, t.Null()]);

export const LeadSchema = t.Object({
  id: t.String({ format: "uuid" }),
  lead_list_id: t.String({ format: "uuid" }),
  campaign_id: t.String({ format: "uuid" }),
  phone: t.String(),
  timezone: t.String(),
  zone_source: ZoneSourceSchema,
  state: LeadStateSchema,
  attempts: Type.Integer(),
  fields: t.Record(t.String(), t.String()),
  next_attempt_at: nullableTimestamp,
  last_outcome: t.Union([t.String(), t.Null()]),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type LeadView = Static<typeof LeadSchema>;

export const leadView = (row: LeadRow): LeadView => ({
  id: row.id,
  lead_list_id: row.leadListId,
  campaign_id: row.campaignId,
  phone: row.phone,
  timezone: row.timezone,
  zone_source: row.zoneSource,
  state: row.state,
  attempts: row.attempts,
  fields: row.fields,
  next_attempt_at: row.nextAttemptAt?.toISOString() ?? null,
  last_outcome: row.lastOutcome,
  created_at: row.createdAt.toISOString(),
  updated_at: row.updatedAt.toISOString(),
});

export const ImportErrorSchema = t.Object({
  row: Type.Integer({ description: "data row, counted from 1 after the header" }),
  column: t.Union([t.String(), t.Null()]),
  reason: t.String(),
});

export const ImportSchema = t.Object({
  id: t.String({ format: "uuid" }),
  lead_list_id: t.String({ format: "uuid" }),
  imported: Type.Integer(),
  rejected: Type.Integer(),
  errors: t.Array(ImportErrorSchema, { description: "the first 100 rejected rows" }),
  started_at: Timestamp,
  finished_at: Timestamp,
});
export type ImportView = Static<typeof ImportSchema>;

export const importView = (
  row: Pick<
    LeadImportRow,
    "id" | "leadListId" | "imported" | "rejected" | "errors" | "startedAt" | "finishedAt"
  >,
): ImportView => ({
  id: row.id,
  lead_list_id: row.leadListId,
  imported: row.imported,
  rejected: row.rejected,
  errors: row.errors,
  started_at: row.startedAt.toISOString(),
  finished_at: row.finishedAt.toISOString(),
});

/** The multipart form of an import, for the API document. */
export const ImportForm = t.Object({
  file: t.File({ description: "CSV with a header row (UTF-8; comma, semicolon, tab or pipe)" }),
  phone_column: t.String({ description: "header name of the phone column" }),
  timezone_column: t.Optional(
    t.String({
      description:
        "header name of the IANA time-zone column; optional: without it, or where its cell is " +
        "empty, a lead's zone is the first zone of its number",
    }),
  ),
  default_region: t.Optional(
    t.String({ description: "ISO 3166 alpha-2 region for numbers without +" }),
  ),
  default_timezone: t.Optional(
    t.String({
      description:
        "IANA time zone for leads with no zone cell whose number is in no zone (toll-free, " +
        "non-geographic); without it such rows are rejected as `unknown_timezone`",
    }),
  ),
});
