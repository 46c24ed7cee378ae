import { t } from "elysia";
import type { CampaignRecord } from "../../../actors/campaign.machine.ts";
import type { Executor } from "../../../db/client.ts";
import {
  type AlertRow,
  alertsOfStoppedCampaigns,
  clearAlert,
  listAlerts,
  nodeHeartbeats,
  raiseAlert,
} from "../../../db/queries/alerts.ts";
import { enqueueEvents } from "../../../db/queries/webhooks.ts";
import type { ServiceDeps } from "../../deps.ts";
import { abandonLimitOf, GOVERNOR_REASON_PREFIX } from "../../dialer/governor.ts";
import type { RealtimeHub } from "../../realtime/hub.ts";
import type { CampaignStats } from "../campaigns/model.ts";
import { campaignStatsFor } from "../campaigns/service.ts";
import { NODE_OFFLINE_AFTER_MS } from "../edge-nodes/model.ts";

/** How often each process looks at its campaigns and the nodes. */
export const ALERT_SWEEP_MS = 5_000;
/** A campaign is warned of once it has used this share of its abandon budget. */
const BUDGET_WARNING = 0.8;
/** A node silent for longer than this is not counted as gone quiet: it was retired. */
const SILENT_FOR_AT_MOST_MS = 24 * 3_600_000;

export const AlertSchema = t.Object({
  id: t.String({ format: "uuid" }),
  kind: t.String({
    description:
      "abandon_budget (80 % of the abandon limit used), governor_hold (the governor holds the campaign), no_agents (a running campaign with no agent ready or on a call), node_silent (an edge node stopped sending heartbeats), webhook_disabled (a webhook endpoint disabled by a 410 or by days of failures)",
  }),
  subject_id: t.String({
    format: "uuid",
    description: "the campaign, the edge node, or the webhook endpoint",
  }),
  message: t.String(),
  raised_at: t.String({ format: "date-time" }),
  cleared_at: t.Union([t.String({ format: "date-time" }), t.Null()], {
    description: "when the condition ended; null while it holds",
  }),
});

export const alertView = (row: AlertRow) => ({
  id: row.id,
  kind: row.kind,
  subject_id: row.subjectId,
  message: row.message,
  raised_at: row.raisedAt.toISOString(),
  cleared_at: row.clearedAt?.toISOString() ?? null,
});

/** Tells the workspace's supervisors of an alert opened, reworded or closed. */
export function pushAlert(
  deps: { realtime: Pick<RealtimeHub, "toSupervisors"> },
  row: AlertRow | undefined,
) {
  if (row) deps.realtime.toSupervisors(row.tenantId, { type: "alert", alert: alertView(row) });
}

export async function tenantAlerts(deps: ServiceDeps, tenantId: string, openOnly: boolean) {
  const rows = await listAlerts(deps.db, { tenantId, openOnly, limit: 200 });
  return rows.map(alertView);
}

type Condition = { kind: AlertRow["kind"]; holds: boolean; message: string };

/** What a running campaign's live stats say about each of its alerts. */
export function campaignConditions(
  campaign: Pick<CampaignRecord, "name" | "maxAbandonRate" | "regulatoryProfile">,
  stats: CampaignStats,
  now: number,
): Condition[] {
  const limit = abandonLimitOf(campaign, now);
  const working = ["ready", "reserved", "on_call", "wrap_up"].reduce(
    (sum, state) => sum + (stats.agents_by_state[state] ?? 0),
    0,
  );
  return [
    {
      kind: "abandon_budget",
      holds: stats.abandon_rate > 0 && stats.abandon_rate >= BUDGET_WARNING * limit,
      message: `${campaign.name}: abandon rate ${(stats.abandon_rate * 100).toFixed(1)} % of a ${(limit * 100).toFixed(1)} % limit`,
    },
    {
      kind: "governor_hold",
      holds: stats.dial_ratio_reason.startsWith(GOVERNOR_REASON_PREFIX),
      message: `${campaign.name}: ${stats.dial_ratio_reason}`,
    },
    {
      kind: "no_agents",
      holds: working === 0,
      message: `${campaign.name} is running with no agent ready or on a call`,
    },
  ];
}

/**
 * Opens the alerts whose condition holds and closes those whose condition ended, pushing each
 * change to the tenant's supervisors (`alert`): the campaigns this process runs, from their
 * live stats, and every edge node, from its last heartbeat. A change is pushed by the process
 * that wrote it only, so several processes say it once.
 */
export async function sweepAlerts(deps: ServiceDeps): Promise<void> {
  const at = new Date(deps.clock.now());
  const push = (row: AlertRow | undefined) => pushAlert(deps, row);
  for (const { tenantId, campaignId } of deps.campaigns.allRunning()) {
    const campaign = deps.campaigns.peek(campaignId)?.campaign;
    if (campaign?.status !== "running") continue;
    const stats = await campaignStatsFor(deps, tenantId, campaignId);
    if (!stats) continue;
    for (const condition of campaignConditions(campaign, stats, at.getTime())) {
      const subject = { tenantId, kind: condition.kind, subjectId: campaignId };
      const id = Bun.randomUUIDv7();
      const change = (db: Executor) =>
        condition.holds
          ? raiseAlert(db, { ...subject, id, message: condition.message, raisedAt: at })
          : clearAlert(db, { ...subject, at });
      // The governor's hold and release reach webhooks too, with the alert that says so; an
      // open alert reworded is no new hold.
      const governed = condition.kind === "governor_hold";
      push(
        governed
          ? await deps.db.transaction(async (tx) => {
              const row = await change(tx);
              if (row && (row.id === id || !condition.holds))
                await enqueueEvents(tx, [
                  {
                    type: "compliance.governor",
                    tenantId,
                    orderKey: campaignId,
                    data: {
                      campaign_id: campaignId,
                      held: condition.holds,
                      reason: stats.dial_ratio_reason,
                    },
                    at,
                  },
                ]);
              return row;
            })
          : await change(deps.db),
      );
    }
  }
  for (const stale of await alertsOfStoppedCampaigns(deps.db))
    push(await clearAlert(deps.db, { ...stale, at }));
  for (const node of await nodeHeartbeats(deps.db)) {
    const heard = node.lastHeartbeatAt?.getTime();
    const subject = { tenantId: node.tenantId, kind: "node_silent" as const, subjectId: node.id };
    const silent =
      !node.revoked &&
      heard !== undefined &&
      at.getTime() - heard > NODE_OFFLINE_AFTER_MS &&
      at.getTime() - heard < SILENT_FOR_AT_MOST_MS;
    push(
      silent
        ? await raiseAlert(deps.db, {
            ...subject,
            id: Bun.randomUUIDv7(),
            message: `edge node ${node.name} has sent no heartbeat since ${node.lastHeartbeatAt?.toISOString()}`,
            raisedAt: at,
          })
        : await clearAlert(deps.db, { ...subject, at }),
    );
  }
}
