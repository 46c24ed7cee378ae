import type { DatabaseHandle, RawClient } from "../../db/client.ts";
import { sqlStateOf } from "../../db/errors.ts";
import type { Fence } from "../../db/fence.ts";
import { arrayLiteral, runStatement } from "../../db/statement.ts";
import type { Logger } from "../logger.ts";

/** How long a lease lasts unless renewed, by the database's clock. */
export const LEASE_TTL_MS = 5_000;
/** How often an owner renews all of its leases, in one statement. */
export const LEASE_RENEW_MS = 1_000;
/** Other processes' campaigns remembered at most, oldest forgotten first. */
const MAX_KNOWN_OWNERS = 10_000;

/**
 * A lease is trusted locally for this share of its TTL after the renewal that confirmed it was
 * sent: less than all of it, so that a process whose renewals stall stops acting before anyone
 * may take over.
 */
const LOCAL_TRUST = 0.8;

/** Who runs a campaign's commands: this process (with the token its writes carry), or another. */
export type Ownership =
  | { kind: "local"; token: number | null }
  | { kind: "remote"; url: string }
  /** No such campaign in the tenant. */
  | { kind: "missing" }
  /** No live owner, and this process is draining: it takes no campaign any more. */
  | { kind: "none" };

/**
 * Raised by a campaign's write (or its command) when this process no longer holds the
 * campaign's lease: nothing was committed, and the command may go to the new owner.
 */
export class LeaseLostError extends Error {
  constructor(readonly campaignId: string) {
    super(`the lease of campaign ${campaignId} is no longer held here`);
    this.name = "LeaseLostError";
  }
}

/** SQLSTATE of `dialer_fence` refusing a write whose token is no longer the campaign's. */
const FENCE_REFUSED = "DL001";

/** A write refused by its fence, whichever driver or wrapper (Drizzle's) it came through. */
export const isLeaseLost = (error: unknown): boolean =>
  error instanceof LeaseLostError || sqlStateOf(error) === FENCE_REFUSED;

/** A live owner's running and paused campaigns: how many, and one of them to reach it by. */
export interface OwnerShare {
  owner: string;
  /** Where the owner's live leases say it takes commands. */
  url: string;
  held: number;
}

export type LeaseListener = (change: "taken" | "lost" | "released", campaignId: string) => void;

/**
 * Which campaigns this process owns. On PGlite (one process by construction) it owns every
 * campaign and its writes carry no token; on PostgreSQL leases live in `campaign_leases`.
 */
export interface CampaignLeases {
  /** True when several processes may share the database. */
  readonly shared: boolean;
  /** This process's id among the owners, random per start (empty when it owns everything). */
  readonly instanceId: string;
  /**
   * True when, at the last look (the orphan sweep, every second), no other live process held
   * a lease: this one then runs every campaign, as a process alone does.
   */
  alone(): boolean;
  /** Whether this process may run the campaign's commands now (no database round trip). */
  holds(campaignId: string): boolean;
  /** The fence of a campaign held here. */
  fenceOf(campaignId: string): Fence;
  /**
   * Takes the lease if nobody holds it, else says who does. `unreachable` is an owner's
   * address that refused a connection: nothing listens there, so its lease is taken at once
   * rather than when it lapses (safe whatever that owner does: its writes are fenced).
   */
  resolve(tenantId: string, campaignId: string, unreachable?: string): Promise<Ownership>;
  /** Forgets what is known of a campaign's owner (a forward to it failed). */
  forgetOwner(campaignId: string): void;
  /** Drops a lease whose write was refused (the token is stale). */
  lost(campaignId: string): void;
  /**
   * Takes the leases of running and paused campaigns, and of campaigns with calls in flight,
   * that nobody holds; with `only`, of those campaigns alone.
   */
  takeOrphans(limit?: number, only?: readonly string[]): Promise<string[]>;
  /** How many running and paused campaigns each live owner holds now. */
  spread(): Promise<OwnerShare[]>;
  /**
   * Gives up to `count` of this process's running and paused campaigns away at once (to the
   * process `to`, which takes them next); returns the campaigns given up.
   */
  handOver(count: number, to: string): Promise<string[]>;
  /** The campaigns held here. */
  held(): string[];
  /** Where other processes send this one's commands (`http://host:port`). */
  ownerUrl: string;
  onChange(listener: LeaseListener): () => void;
  start(): void;
  /** Gives every lease up at once, so that other processes take the campaigns without waiting. */
  releaseAll(): Promise<void>;
  stop(): void;
}

/**
 * The leases of a database: local on PGlite, in the database on PostgreSQL, where this process
 * takes a random instance id. Its address for forwarded commands is set once it listens.
 */
export function campaignLeasesFor(database: DatabaseHandle, logger: Logger): CampaignLeases {
  if (database.raw.kind === "pglite") return localLeases();
  return new PostgresLeases(database.raw, logger, crypto.randomUUID(), "");
}

/** One process owns everything: the embedded database. */
export function localLeases(): CampaignLeases {
  return {
    shared: false,
    instanceId: "",
    alone: () => true,
    holds: () => true,
    fenceOf: (campaignId) => ({ campaignId, token: null }),
    resolve: async () => ({ kind: "local", token: null }),
    forgetOwner: () => {},
    lost: () => {},
    takeOrphans: async () => [],
    spread: async () => [],
    handOver: async () => [],
    held: () => [],
    ownerUrl: "",
    onChange: () => () => {},
    start: () => {},
    releaseAll: async () => {},
    stop: () => {},
  };
}

interface HeldLease {
  token: number;
  /** performance.now() until which this process acts on the lease without asking again. */
  trustedUntil: number;
}

/** Campaign leases in PostgreSQL, renewed together every second. */
export class PostgresLeases implements CampaignLeases {
  readonly shared = true;
  private readonly leases = new Map<string, HeldLease>();
  /** Other processes' campaigns, as last read. */
  private readonly owners = new Map<string, { tenantId: string; url: string }>();
  private readonly listeners = new Set<LeaseListener>();
  private timer: ReturnType<typeof setInterval> | undefined;
  private renewing = false;
  /** Set by `releaseAll`: a draining process takes no lease again. */
  private draining = false;
  /** Whether another live process held a lease at the last look; until then, assume so. */
  private othersLive = true;

  constructor(
    private readonly raw: RawClient,
    private readonly logger: Logger,
    /** This process's id, random per start. */
    readonly instanceId: string,
    /** Where other processes forward this process's campaigns' commands; set once it listens. */
    public ownerUrl: string,
    /** Tests shorten the lease. */
    private readonly timing = { ttlMs: LEASE_TTL_MS, renewMs: LEASE_RENEW_MS },
  ) {}

  private get trustMs(): number {
    return this.timing.ttlMs * LOCAL_TRUST;
  }

  holds(campaignId: string): boolean {
    const lease = this.leases.get(campaignId);
    return lease !== undefined && performance.now() < lease.trustedUntil;
  }

  fenceOf(campaignId: string): Fence {
    const lease = this.leases.get(campaignId);
    if (!lease) throw new LeaseLostError(campaignId);
    return { campaignId, token: lease.token };
  }

  async resolve(tenantId: string, campaignId: string, unreachable?: string): Promise<Ownership> {
    const lease = this.leases.get(campaignId);
    if (lease && performance.now() < lease.trustedUntil)
      return { kind: "local", token: lease.token };
    const known = this.owners.get(campaignId);
    if (!unreachable && known?.tenantId === tenantId) return { kind: "remote", url: known.url };
    if (!unreachable || this.draining) {
      // Most lookups find another process's live lease: a read, not the taking statement,
      // which locks the lease row.
      const [campaign] = await runStatement<{ owner_url: string | null }>(
        this.raw,
        READ_LIVE_LEASE,
        [campaignId, tenantId, this.instanceId],
      );
      if (!campaign) return { kind: "missing" };
      const url = campaign.owner_url;
      if (url !== null && url !== this.ownerUrl && url !== unreachable)
        return this.knownOwner(tenantId, campaignId, url);
      if (this.draining) return { kind: "none" };
    }
    const sent = performance.now();
    const take = () =>
      runStatement<{
        token: string;
        owner_url: string;
        mine: boolean;
        ms_left: number;
        previous: string | null;
      }>(this.raw, TAKE_LEASE, [
        campaignId,
        tenantId,
        this.instanceId,
        this.ownerUrl,
        this.timing.ttlMs,
        unreachable ?? null,
      ]);
    let [row] = await take();
    // A lease another process inserted while the statement ran is a conflict it waited for
    // but cannot read (its snapshot is older): a second statement reads it.
    if (!row) [row] = await take();
    if (!row) return { kind: "missing" };
    if (row.mine) {
      const token = Number(row.token);
      this.adopt(campaignId, token, sent, row.previous);
      return { kind: "local", token };
    }
    // Nothing else can listen at this process's own address: the holder is a previous run.
    if (row.owner_url === this.ownerUrl && unreachable !== this.ownerUrl)
      return this.resolve(tenantId, campaignId, this.ownerUrl);
    return this.knownOwner(tenantId, campaignId, row.owner_url);
  }

  /**
   * Remembers another process as a campaign's owner until a forward to it says otherwise
   * (it answers that it no longer holds the campaign, or it is gone): owners change rarely.
   */
  private knownOwner(tenantId: string, campaignId: string, url: string): Ownership {
    if (this.owners.size >= MAX_KNOWN_OWNERS) {
      const oldest = this.owners.keys().next().value;
      if (oldest !== undefined) this.owners.delete(oldest);
    }
    this.owners.set(campaignId, { tenantId, url });
    return { kind: "remote", url };
  }

  forgetOwner(campaignId: string): void {
    this.owners.delete(campaignId);
  }

  lost(campaignId: string): void {
    if (!this.leases.delete(campaignId)) return;
    this.logger.warn("campaign lease lost", { campaign_id: campaignId, owner: this.instanceId });
    this.emit("lost", campaignId);
  }

  async takeOrphans(limit = 1_000, only?: readonly string[]): Promise<string[]> {
    if (this.draining) return [];
    const dead = await this.deadOwners();
    const sent = performance.now();
    const rows = await runStatement<{
      campaign_id: string;
      token: string;
      previous: string | null;
    }>(this.raw, TAKE_ORPHANS, [
      this.instanceId,
      this.ownerUrl,
      this.timing.ttlMs,
      limit,
      arrayLiteral(dead),
      only ? arrayLiteral(only) : null,
    ]);
    for (const row of rows) this.adopt(row.campaign_id, Number(row.token), sent, row.previous);
    return rows.map((row) => row.campaign_id);
  }

  /**
   * The addresses of other owners where nothing listens: this process's own (a previous run of
   * it on the same address, killed), and any whose health probe is refused. Their leases need
   * not lapse first: their writes are fenced whatever they do.
   */
  private async deadOwners(): Promise<string[]> {
    const owners = await runStatement<{ owner_url: string }>(this.raw, LIVE_OWNERS, [
      this.instanceId,
    ]);
    const dead = await Promise.all(
      owners.map(async ({ owner_url: url }) =>
        url === this.ownerUrl || (await refusesConnections(url)) ? url : undefined,
      ),
    );
    const gone = dead.filter((url): url is string => url !== undefined);
    this.othersLive = owners.length > gone.length;
    return gone;
  }

  alone(): boolean {
    return !this.othersLive;
  }

  async spread(): Promise<OwnerShare[]> {
    return runStatement<OwnerShare>(this.raw, LIVE_SPREAD, []);
  }

  async handOver(count: number, to: string): Promise<string[]> {
    if (this.draining || count < 1 || to === this.instanceId) return [];
    const rows = await runStatement<{ campaign_id: string }>(this.raw, HAND_OVER_LEASES, [
      this.instanceId,
      count,
    ]);
    for (const { campaign_id: campaignId } of rows) {
      this.leases.delete(campaignId);
      this.logger.info("campaign lease handed over", {
        campaign_id: campaignId,
        owner: this.instanceId,
        to,
      });
      this.emit("released", campaignId);
    }
    return rows.map((row) => row.campaign_id);
  }

  held(): string[] {
    return [...this.leases.keys()];
  }

  onChange(listener: LeaseListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  start(): void {
    this.timer ??= setInterval(() => void this.renew(), this.timing.renewMs);
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  async releaseAll(): Promise<void> {
    this.draining = true;
    this.stop();
    const ids = this.held();
    if (ids.length === 0) return;
    await runStatement(this.raw, RELEASE_LEASES, [this.instanceId]);
    for (const campaignId of ids) {
      this.leases.delete(campaignId);
      this.logger.info("campaign lease released", {
        campaign_id: campaignId,
        owner: this.instanceId,
      });
      this.emit("released", campaignId);
    }
  }

  /**
   * Renews every lease held in one statement. A lease the statement does not return lapsed or
   * was taken over (this process stalled past its end): it is dropped at once. Only leases held
   * when it was sent are judged: one taken while it ran is not for it to return. A renewal that
   * fails leaves the leases trusted only until their local deadline.
   */
  private async renew(): Promise<void> {
    if (this.renewing || this.leases.size === 0) return;
    this.renewing = true;
    const sent = performance.now();
    const held = [...this.leases];
    try {
      const rows = await runStatement<{ campaign_id: string; token: string }>(
        this.raw,
        RENEW_LEASES,
        [this.instanceId, this.timing.ttlMs],
      );
      const renewed = new Map(rows.map((row) => [row.campaign_id, Number(row.token)]));
      for (const [campaignId, lease] of held) {
        if (this.leases.get(campaignId) !== lease) continue;
        if (renewed.get(campaignId) === lease.token) lease.trustedUntil = sent + this.trustMs;
        else this.lost(campaignId);
      }
    } catch (error) {
      this.logger.warn("campaign leases could not be renewed", { error });
    } finally {
      this.renewing = false;
    }
  }

  private adopt(campaignId: string, token: number, sent: number, previous: string | null): void {
    const before = this.leases.get(campaignId);
    this.leases.set(campaignId, { token, trustedUntil: sent + this.trustMs });
    this.owners.delete(campaignId);
    if (before?.token === token) return;
    this.logger.info("campaign lease taken", {
      campaign_id: campaignId,
      owner: this.instanceId,
      token,
      previous_owner: previous,
    });
    this.emit("taken", campaignId);
  }

  private emit(change: "taken" | "lost" | "released", campaignId: string): void {
    for (const listener of this.listeners) {
      try {
        listener(change, campaignId);
      } catch (error) {
        this.logger.error("lease listener failed", { campaign_id: campaignId, error });
      }
    }
  }
}

/**
 * Takes a campaign's lease when nobody holds it, or its holder is at the unreachable address
 * `$6` (or this process already holds it: then only its end moves), else leaves it; either way
 * returns who holds it. A campaign that is not the
 * tenant's gets no lease and no row. A new holder gets a new token; the old one's writes fail.
 */
const TAKE_LEASE = `
  with campaign as (
    select id from campaigns where id = $1::uuid and tenant_id = $2::uuid),
  previous as (
    select owner from campaign_leases where campaign_id = $1::uuid),
  taken as (
    insert into campaign_leases (campaign_id, owner, owner_url, token, expires_at)
    select id, $3::uuid, $4, nextval('campaign_lease_tokens'),
      clock_timestamp() + $5::int * interval '1 millisecond'
    from campaign
    on conflict (campaign_id) do update set owner = excluded.owner, owner_url = excluded.owner_url,
      token = case when campaign_leases.owner = excluded.owner then campaign_leases.token
        else excluded.token end,
      expires_at = excluded.expires_at
    where case when campaign_leases.owner = excluded.owner then true
      when campaign_leases.expires_at < clock_timestamp() or campaign_leases.owner_url = $6
        then dialer_lease_takeover(campaign_leases.campaign_id)
      else false end
    returning token)
  select t.token::text, $4 as owner_url, true as mine, 0 as ms_left,
    (select owner::text from previous) as previous
  from taken t
  union all
  select l.token::text, l.owner_url, false, 
    (extract(epoch from l.expires_at - clock_timestamp()) * 1000)::int, null
  from campaign_leases l join campaign c on c.id = l.campaign_id
  where not exists (select 1 from taken)`;

/**
 * Campaigns that need an owner and have none: running or paused (as one process restores
 * at start), or with calls in flight, without a lease, with a lapsed one, or held at an address in `$5` where nothing listens.
 */
const TAKE_ORPHANS = `
  with orphan as (
    select c.id from campaigns c
    left join campaign_leases l on l.campaign_id = c.id
    where (l.campaign_id is null or l.expires_at < clock_timestamp()
        or (l.owner <> $1::uuid and l.owner_url = any($5::text[])))
      and (c.status in ('running', 'paused')
        or exists (select 1 from calls k where k.campaign_id = c.id and k.status <> 'ended'))
      and ($6::uuid[] is null or c.id = any($6::uuid[]))
    order by random()
    limit $4::int),
  previous as (
    select l.campaign_id, l.owner from campaign_leases l join orphan o on o.id = l.campaign_id),
  taken as (
    insert into campaign_leases (campaign_id, owner, owner_url, token, expires_at)
    select id, $1::uuid, $2, nextval('campaign_lease_tokens'),
      clock_timestamp() + $3::int * interval '1 millisecond'
    from orphan
    on conflict (campaign_id) do update set owner = excluded.owner, owner_url = excluded.owner_url,
      token = excluded.token, expires_at = excluded.expires_at
    where case when campaign_leases.expires_at < clock_timestamp()
        or campaign_leases.owner_url = any($5::text[])
      then dialer_lease_takeover(campaign_leases.campaign_id) else false end
    returning campaign_id, token)
  select t.campaign_id::text, t.token::text, p.owner::text as previous
  from taken t left join previous p on p.campaign_id = t.campaign_id`;

/** A campaign of the tenant, with the address of another process holding a live lease on it. */
const READ_LIVE_LEASE = `
  select l.owner_url
  from campaigns c left join campaign_leases l
    on l.campaign_id = c.id and l.owner <> $3::uuid and l.expires_at > clock_timestamp()
  where c.id = $1::uuid and c.tenant_id = $2::uuid`;

/** The addresses of the other processes holding leases now. */
const LIVE_OWNERS = `
  select distinct owner_url from campaign_leases
  where owner <> $1::uuid and expires_at >= clock_timestamp()`;

/** True when nothing listens at `url`: its process is gone. A slow answer is not a refusal. */
export async function refusesConnections(url: string): Promise<boolean> {
  try {
    await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(500) });
    return false;
  } catch (error) {
    const code = (error as { code?: string }).code;
    return code === "ConnectionRefused" || code === "ECONNREFUSED";
  }
}

/**
 * Extends this process's live leases. An ended one stays ended: a renewal that lands just after
 * a hand-over or a release would otherwise revive the lease its taker is about to take.
 */
const RENEW_LEASES = `
  update campaign_leases set expires_at = clock_timestamp() + $2::int * interval '1 millisecond'
  where owner = $1::uuid and expires_at >= clock_timestamp()
  returning campaign_id::text, token::text`;

/**
 * Each live owner's running and paused campaigns: how many, and the one with the lowest id
 * (with its tenant), to which a command for that owner can be addressed.
 */
const LIVE_SPREAD = `
  select l.owner::text, min(l.owner_url) as url, count(*)::int as held
  from campaign_leases l join campaigns c on c.id = l.campaign_id
  where l.expires_at >= clock_timestamp() and c.status in ('running', 'paused')
  group by l.owner`;

/**
 * Ends up to `$2` of this process's leases of running and paused campaigns now, as a drain
 * does for all of them: the token stays, so a write still in flight keeps its fence.
 */
const HAND_OVER_LEASES = `
  update campaign_leases l set expires_at = clock_timestamp() - interval '1 millisecond'
  from (
    select h.campaign_id from campaign_leases h join campaigns c on c.id = h.campaign_id
    where h.owner = $1::uuid and h.expires_at >= clock_timestamp()
      and c.status in ('running', 'paused')
    order by random() limit $2::int
    for update of h skip locked) given
  where l.campaign_id = given.campaign_id
  returning l.campaign_id::text`;

/** Ends this process's leases now: the token stays, so a write still in flight keeps its fence. */
const RELEASE_LEASES = `
  update campaign_leases set expires_at = clock_timestamp() - interval '1 millisecond'
  where owner = $1::uuid`;
