import type { CampaignContext, CampaignRecord } from "../../../actors/campaign.machine.ts";
import { type DialingState, noLeads, RECENT_CALLS } from "../../../actors/dialing.ts";
import { IdempotencyWindow } from "../../../actors/idempotency.ts";
import { LiveCalls } from "../../../actors/live-calls.ts";
import type { CampaignStore } from "../../../actors/ports.ts";
import type { Database } from "../../../db/client.ts";
import {
  type CampaignRow,
  findCampaign,
  type IdempotencyRow,
  listCampaignsInStatus,
  listOpenIdempotencyKeys,
} from "../../../db/queries/campaigns.ts";
import {
  answeredCdrsSince,
  campaignsWithLiveCalls,
  dispositionTimes,
  firstStartOf,
  liveCallsOf,
  recentCdrs,
} from "../../../db/queries/dialer.ts";
import { countLeadsByState } from "../../../db/queries/leads.ts";
import type { ProfileName } from "../../compliance/profiles.ts";
import { RecentCalls, recordEndedCall } from "../../dialer/call-history.ts";
import {
  ComplianceLedger,
  entriesFromCdrs,
  RETAINED_MS,
  verdictsFromCdrs,
} from "../../dialer/ledger.ts";
import type { DispositionCode } from "../../dialer/model.ts";

export const campaignRecordOf = (row: CampaignRow): CampaignRecord => ({
  ...row,
  regulatoryProfile: row.regulatoryProfile as ProfileName,
  dispositionCodes: row.dispositionCodes as DispositionCode[],
  createdAt: row.createdAt.toISOString(),
  updatedAt: row.updatedAt.toISOString(),
});

const windowOf = (rows: IdempotencyRow[]) =>
  IdempotencyWindow.from(
    rows.map((row) => ({
      key: row.key,
      bodyHash: row.bodyHash,
      status: row.responseStatus,
      text: row.responseBody,
      expiresAt: row.expiresAt.getTime(),
    })),
  );

const ID_BATCH = 1000;

async function loadDialing(db: Database, campaignId: string, now: number): Promise<DialingState> {
  const [calls, counts, recent, answered, started] = await Promise.all([
    liveCallsOf(db, campaignId),
    countLeadsByState(db, campaignId),
    recentCdrs(db, { campaignId, limit: RECENT_CALLS }),
    answeredCdrsSince(db, { campaignId, since: new Date(now - RETAINED_MS) }),
    firstStartOf(db, campaignId),
  ]);
  const leads = noLeads();
  for (const { state, total } of counts) leads[state] = total;
  const history = new RecentCalls();
  const dispositioned = recent.filter((row) => row.outcome === "answered" && row.disposition);
  for (const { endedAt, updatedAt } of await dispositionTimes(
    db,
    dispositioned.map((row) => row.callId),
  ))
    if (endedAt)
      history.wrapped(Math.max(0, updatedAt.getTime() - endedAt.getTime()), updatedAt.getTime());
  for (const row of recent)
    recordEndedCall(history, {
      outcome: row.outcome,
      claimedAt: row.startedAt.getTime(),
      answeredAt: row.answeredAt?.getTime() ?? null,
      endedAt: row.endedAt?.getTime() ?? row.startedAt.getTime(),
    });
  return {
    hopper: [],
    hopperFilledAt: 0,
    calls: LiveCalls.of(calls),
    wrapping: new Map(),
    previews: new Map(),
    leads,
    recent: recent.map((row) => row.outcome),
    history,
    ledger: ComplianceLedger.from(entriesFromCdrs(answered), verdictsFromCdrs(answered)),
    firstStartedAt: started ? new Date(started).getTime() : null,
  };
}

/** The database behind campaign actors: rows become actor contexts, open keys their window. */
export function campaignStore(db: Database): CampaignStore {
  return {
    loadDialing: (campaignId, now) => loadDialing(db, campaignId, now),
    campaignsWithLiveCalls: () => campaignsWithLiveCalls(db),
    async load(campaignId, now) {
      const row = await findCampaign(db, campaignId);
      if (!row) return undefined;
      const keys = await listOpenIdempotencyKeys(db, {
        campaignIds: [campaignId],
        now: new Date(now),
      });
      return { campaign: campaignRecordOf(row), idempotency: windowOf(keys) };
    },
    async loadActive(now) {
      const rows = await listCampaignsInStatus(db, ["running", "paused"]);
      const keysByCampaign = new Map<string, IdempotencyRow[]>();
      for (let start = 0; start < rows.length; start += ID_BATCH) {
        const ids = rows.slice(start, start + ID_BATCH).map((row) => row.id);
        for (const key of await listOpenIdempotencyKeys(db, {
          campaignIds: ids,
          now: new Date(now),
        })) {
          const list = keysByCampaign.get(key.campaignId) ?? [];
          list.push(key);
          keysByCampaign.set(key.campaignId, list);
        }
      }
      return rows.map(
        (row): CampaignContext => ({
          campaign: campaignRecordOf(row),
          idempotency: windowOf(keysByCampaign.get(row.id) ?? []),
        }),
      );
    },
  };
}
