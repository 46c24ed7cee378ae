import { Elysia } from "elysia";
import { type CdrFilter, cdrsBefore, listCdrs } from "../../../db/queries/calls.ts";
import type { ServiceDeps } from "../../deps.ts";
import { okList } from "../../envelope.ts";
import { csvResponse, csvStream } from "../../lib/csv-export.ts";
import { rangeOf } from "../../lib/instants.ts";
import { alsoAsCsv, documentedList } from "../../openapi-bodies.ts";
import { parsePage } from "../../pagination.ts";
import type { AuthGuard } from "../../plugins/auth.ts";
import { CDR_CSV_COLUMNS, CdrQuery, CdrSchema, cdrCsvRow, cdrView } from "./model.ts";

const CSV_PAGE = 1000;

/** Every CDR matching the filter as CSV, newest first, streamed with keyset paging. */
const cdrCsv = (deps: ServiceDeps, tenantId: string, filter: CdrFilter) =>
  csvStream<{ createdAt: Date; id: string }>([...CDR_CSV_COLUMNS], async (cursor) => {
    const rows = await cdrsBefore(deps.longWorkDb, {
      tenantId,
      filter,
      cursor,
      limit: CSV_PAGE,
    });
    const last = rows[rows.length - 1];
    if (!last) return undefined;
    const lines = rows.map((row) => cdrCsvRow(cdrView(row)));
    return { lines, cursor: { createdAt: last.createdAt, id: last.id } };
  });

export const cdrsModule = (deps: ServiceDeps, auth: AuthGuard) =>
  new Elysia({ prefix: "/api/v1/cdrs", detail: { tags: ["calls"] } }).use(auth).get(
    "",
    async ({ tenantId, query, request }) => {
      const { from, to } = rangeOf(query);
      const filter = {
        from,
        to,
        campaignId: query.campaign_id,
        leadId: query.lead_id,
        outcome: query.outcome,
        agentId: query.agent_id,
      };
      if (request.headers.get("accept")?.includes("text/csv")) {
        const stamp = new Date(deps.clock.now()).toISOString().replaceAll(":", "");
        return csvResponse(cdrCsv(deps, tenantId, filter), `cdrs-${stamp}.csv`);
      }
      const page = parsePage(query);
      const { items, total } = await listCdrs(deps.longWorkDb, { tenantId, filter, page });
      return okList(items.map(cdrView), total, page);
    },
    {
      auth: "cdrs.read",
      query: CdrQuery,
      detail: {
        summary:
          "Call detail records, newest first; `from` inclusive and `to` exclusive on started_at (`from` after `to` is 422)",
        ...alsoAsCsv(
          documentedList(CdrSchema),
          "A page of the list, newest first; with `Accept: text/csv`, every record the filters keep, as CSV",
        ),
      },
    },
  );
