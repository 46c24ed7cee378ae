import type { TenantRow } from "../db/queries/tenants.ts";
import type { UserRow } from "../db/queries/users.ts";
import type { ChangePublisher } from "../src/cluster/change-feed.ts";
import { isUuid } from "../src/identity/tenant-scope.ts";
import type { Logger } from "../src/logger.ts";
import type { TenantStore } from "./ports.ts";
import {
  type LiveUser,
  liveUserOf,
  type TenantActor,
  tenantActorFrom,
  type UserAccess,
} from "./tenant.machine.ts";

/** A committed change of a user's role or status, as the tenant's actor adopted it. */
export interface UserAccessChange {
  tenantId: string;
  userId: string;
  before: UserAccess;
  after: UserAccess;
}

export type UserAccessListener = (change: UserAccessChange) => void;

/**
 * One actor per tenant, created on first use from the store (tenant and users in one load)
 * and kept current by the services that commit changes. Reads never wait on the database
 * once a tenant is loaded.
 */
export class TenantRegistry {
  private readonly actors = new Map<string, TenantActor>();
  private readonly loading = new Map<string, Promise<TenantActor | undefined>>();
  private readonly accessListeners = new Set<UserAccessListener>();
  /** Where committed changes are announced to other processes sharing the database. */
  private publish: ChangePublisher | undefined;

  constructor(
    private readonly store: TenantStore,
    private readonly logger: Logger,
  ) {}

  /** A user of a tenant whose actor is loaded, without waiting; undefined otherwise. */
  loadedUser(tenantId: string, userId: string): LiveUser | undefined {
    return this.actors.get(tenantId)?.getSnapshot().context.users[userId];
  }

  loadedTenant(tenantId: string): TenantRow | undefined {
    return this.actors.get(tenantId)?.getSnapshot().context.tenant;
  }

  async tenant(tenantId: string): Promise<TenantRow | undefined> {
    return (await this.actorFor(tenantId))?.getSnapshot().context.tenant;
  }

  async user(tenantId: string, userId: string): Promise<LiveUser | undefined> {
    const actor = this.actors.get(tenantId) ?? (await this.actorFor(tenantId));
    if (!actor) return undefined;
    const known = actor.getSnapshot().context.users[userId];
    if (known) return known;
    const loaded = isUuid(userId) ? await this.store.loadUser(tenantId, userId) : undefined;
    if (loaded) actor.send({ type: "user.changed", user: loaded });
    return loaded;
  }

  /**
   * Tells the tenant's actor, if it is loaded or loading, of a committed user change. The
   * actor keeps the row only if it is newer than the one it holds. Returns the user as
   * memory now holds it: the row, or the newer state the actor already had.
   */
  userChanged(row: UserRow, options: { announce?: boolean } = {}): LiveUser {
    const user = liveUserOf(row);
    if (options.announce !== false) {
      this.publish?.({ kind: "user", tenantId: row.tenantId, id: row.id, version: row.version });
    }
    const event = { type: "user.changed" as const, user };
    const live = this.actors.get(row.tenantId);
    if (live) {
      live.send(event);
      return live.getSnapshot().context.users[row.id] ?? user;
    }
    // A load under way may have read the row before this change committed: tell it after.
    // A failed load is reported where it is awaited; the change then has no actor to reach.
    void this.loading.get(row.tenantId)?.then(
      (actor) => actor?.send(event),
      () => undefined,
    );
    return user;
  }

  /**
   * Calls `listener` whenever a committed change gives a user another role or status (for
   * instance, to close that user's open sockets). Only users of loaded tenants can have
   * sessions, so only their changes are reported. Returns the unsubscribe function.
   */
  onUserAccessChanged(listener: UserAccessListener): () => void {
    this.accessListeners.add(listener);
    return () => this.accessListeners.delete(listener);
  }

  tenantChanged(row: TenantRow, options: { announce?: boolean } = {}): void {
    if (options.announce !== false) this.publish?.({ kind: "tenant", id: row.id });
    this.actors.get(row.id)?.send({ type: "tenant.updated", tenant: row });
  }

  /** Announces every committed change from here on (`announce: false` changes came from there). */
  publishChangesTo(publish: ChangePublisher): () => void {
    this.publish = publish;
    return () => {
      if (this.publish === publish) this.publish = undefined;
    };
  }

  /**
   * Reads every loaded tenant and its users again (changes announced by other processes may
   * have been missed): a user disabled or given another role meanwhile is reported as if
   * the change had been heard.
   */
  async reloadAll(): Promise<void> {
    for (const [tenantId, actor] of [...this.actors]) {
      const context = await this.store.load(tenantId);
      if (!context) continue;
      actor.send({ type: "tenant.updated", tenant: context.tenant });
      for (const user of Object.values(context.users)) actor.send({ type: "user.changed", user });
    }
  }

  stopAll(): void {
    for (const actor of this.actors.values()) actor.stop();
    this.actors.clear();
  }

  /** A failing listener is logged and the others still hear of the change. */
  private announceAccessChange(change: UserAccessChange) {
    for (const listener of this.accessListeners) {
      try {
        listener(change);
      } catch (error) {
        this.logger.error("user access listener failed", {
          tenant_id: change.tenantId,
          user_id: change.userId,
          error,
        });
      }
    }
  }

  private actorFor(tenantId: string): Promise<TenantActor | undefined> {
    const live = this.actors.get(tenantId);
    if (live) return Promise.resolve(live);
    if (!isUuid(tenantId)) return Promise.resolve(undefined);
    let pending = this.loading.get(tenantId);
    if (!pending) {
      pending = this.store
        .load(tenantId)
        .then((context) => {
          if (!context) return undefined;
          const actor = tenantActorFrom(context);
          actor.on("user.accessChanged", ({ userId, before, after }) =>
            this.announceAccessChange({ tenantId, userId, before, after }),
          );
          actor.subscribe({
            error: (error) => {
              // Contained: the tenant is reloaded from the database on its next request.
              this.logger.error("tenant actor failed; it will be reloaded", {
                tenant_id: tenantId,
                error,
              });
              if (this.actors.get(tenantId) === actor) this.actors.delete(tenantId);
            },
          });
          this.actors.set(tenantId, actor.start());
          return actor;
        })
        .finally(() => this.loading.delete(tenantId));
      this.loading.set(tenantId, pending);
    }
    return pending;
  }
}
