import { Type } from "@sinclair/typebox";
import { t } from "elysia";
import { findTenantCampaign } from "../../../db/queries/campaigns.ts";
import { minuteFigures } from "../../../db/queries/stats-history.ts";
import type { ServiceDeps } from "../../deps.ts";
import { BRIDGE_LIMIT_MS } from "../../dialer/ledger.ts";
import { notFound, unprocessable } from "../../errors.ts";
import { isUuid } from "../../identity/tenant-scope.ts";
import { rangeOf } from "../../lib/instants.ts";

const MINUTE = 60_000;
/** The longest range one request covers: a quarter, past the 35 days a month's report needs. */
const MAX_MINUTES = 92 * 24 * 60;
/** Up to a week every minute is listed; a longer range lists the minutes with calls only. */
const EVERY_MINUTE_UP_TO = 7 * 24 * 60;
/** The first instant the database stores. */
const YEAR_ONE = Date.parse("0001-01-01T00:00:00Z");
/** Without `from`, the hour before `to`. */
const DEFAULT_MINUTES = 60;

export const StatsHistoryQuery = t.Object({
  from: t.Optional(
    t.String({
      description: "RFC 3339; the first minute (rounded down). An hour before `to` by default",
    }),
  ),
  to: t.Optional(
    t.String({
      description:
        "RFC 3339; the minute after the last (rounded down). By default the last is the minute under way, so far",
    }),
  ),
  tenant_id: t.Optional(t.String()),
});

export const MinuteFiguresSchema = t.Object({
  minute: t.String({ format: "date-time", description: "the minute's start" }),
  attempts: Type.Integer({ description: "calls that ended in the minute" }),
  answered: Type.Integer({ description: "answered and put through to an agent within 2 s" }),
  abandoned: Type.Integer({
    description:
      "as the compliance ledger counts them: answered with no agent to take them, or put through later than 2 s (bridged_late)",
  }),
  bridged_late: Type.Integer({
    description: "put through to an agent later than 2 s after the answer",
  }),
  machine: Type.Integer(),
  no_answer: Type.Integer(),
  busy: Type.Integer(),
  failed: Type.Integer(),
  talk_seconds: Type.Integer(),
  answer_rate: t.Union([t.Number(), t.Null()], {
    description: "picked up (answered, abandoned, machine) over attempts; null with none",
  }),
  abandon_rate: t.Union([t.Number(), t.Null()], {
    description: "abandoned over answered by a person; null with none",
  }),
});

/**
 * A campaign's figures minute by minute, from its CDRs (kept as long as the CDRs are): every
 * whole minute of a range up to a week, those without calls included, so that a chart opened
 * now is whole; a longer range lists the minutes with calls, which keeps a quarter's answer
 * as small as its calls.
 */
export async function campaignStatsHistory(
  deps: ServiceDeps,
  tenantId: string,
  campaignId: string,
  query: { from?: string | undefined; to?: string | undefined },
) {
  const range = rangeOf(query);
  const campaign = isUuid(campaignId)
    ? await findTenantCampaign(deps.db, { tenantId, campaignId })
    : undefined;
  if (!campaign) throw notFound("campaign");
  const floor = (at: number) => Math.floor(at / MINUTE) * MINUTE;
  const to = floor(range.to?.getTime() ?? deps.clock.now() + MINUTE);
  const from = floor(range.from?.getTime() ?? Math.max(to - DEFAULT_MINUTES * MINUTE, YEAR_ONE));
  if (to - from > MAX_MINUTES * MINUTE)
    throw unprocessable("from", `a range is at most ${MAX_MINUTES / (24 * 60)} days`);
  if (to <= from) return [];
  const rows = await minuteFigures(deps.db, {
    campaignId: campaign.id,
    from: new Date(from),
    to: new Date(to),
    everyMinute: to - from <= EVERY_MINUTE_UP_TO * MINUTE,
    bridgeLimitMs: BRIDGE_LIMIT_MS,
  });
  return rows.map((row) => {
    const pickedUp = row.answered + row.abandoned + row.machine;
    const people = row.answered + row.abandoned;
    return {
      ...row,
      minute: row.minute.toISOString(),
      answer_rate: row.attempts === 0 ? null : pickedUp / row.attempts,
      abandon_rate: people === 0 ? null : row.abandoned / people,
    };
  });
}
