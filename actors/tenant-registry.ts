import type { TenantRow } from "../db/queries/tenants.ts";
import type { UserRow } from "../db/queries/users.ts";
import { isUuid } from "../src/identity/tenant-scope.ts";
import type { Logger } from "../src/logger.ts";
import type { TenantStore } from "./ports.ts";
import { type LiveUser, liveUserOf, type TenantActor, tenantActorFrom } from "./tenant.machine.ts";

/**
 * One actor per tenant, created on first use from the store (tenant and users in one load)
 * and kept current by the services that commit changes. Reads never wait on the database
 * once a tenant is loaded.
 */
export class TenantRegistry {
  private readonly actors = new Map<string, TenantActor>();
  private readonly loading = new Map<string, Promise<TenantActor | undefined>>();
  private readonly userListeners = new Set<(user: LiveUser) => void>();

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

  /** Tells the tenant's actor, if it is loaded, of a committed user change. */
  userChanged(row: UserRow): LiveUser {
    const user = liveUserOf(row);
    this.actors.get(row.tenantId)?.send({ type: "user.changed", user });
    for (const listener of this.userListeners) listener(user);
    return user;
  }

  /** Hears every committed user change: open sockets are closed on a disable or a new role. */
  onUserChanged(listener: (user: LiveUser) => void): () => void {
    this.userListeners.add(listener);
    return () => this.userListeners.delete(listener);
  }

  tenantChanged(row: TenantRow): void {
    this.actors.get(row.id)?.send({ type: "tenant.updated", tenant: row });
  }

  stopAll(): void {
    for (const actor of this.actors.values()) actor.stop();
    this.actors.clear();
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
