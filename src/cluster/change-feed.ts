import { findApiKeyByHash, findNodeByHash } from "../../db/queries/access.ts";
import { findPresence, listPresenceOf } from "../../db/queries/presence.ts";
import { findTenantById } from "../../db/queries/tenants.ts";
import { findTenantUser } from "../../db/queries/users.ts";
import type { ServiceDeps } from "../deps.ts";
import { resumableListen } from "./resumable-listen.ts";

/** The PostgreSQL channel on which processes sharing a database tell each other of changes. */
export const CHANGES_CHANNEL = "dialer_changes";

/**
 * A committed change that other processes' caches must learn of. It names the record, never
 * its contents: a receiver reads the record itself, so a notification cannot forge one.
 */
export type Change =
  | { kind: "user"; tenantId: string; id: string; version: number }
  | { kind: "tenant"; id: string }
  | { kind: "api_key"; hash: string }
  | { kind: "edge_node"; hash: string }
  | { kind: "agent"; tenantId: string; userId: string; version: number };

export type ChangePublisher = (change: Change) => void;

type FeedDeps = Pick<
  ServiceDeps,
  "db" | "rawDb" | "tenants" | "credentials" | "dialer" | "logger" | "availability"
>;

/**
 * Keeps the caches of processes that share one PostgreSQL database in step: each committed
 * change of a user, a tenant, an agent's presence, or a revocation of a key or node is
 * announced with NOTIFY, and every other process re-reads that record into its tenant actors,
 * credential directory or agent board.
 * A revoked key or a disabled user is then refused by every process within a round trip.
 * PGlite has one process by construction: nothing to do. Returns the feed's stop.
 */
export async function connectChangeFeed(deps: FeedDeps): Promise<() => Promise<void>> {
  const raw = deps.rawDb;
  if (raw.kind === "pglite") return async () => {};
  const origin = crypto.randomUUID();
  const subscription = await resumableListen({
    client: raw.client,
    channel: CHANGES_CHANNEL,
    onMessage: (payload) => {
      let message: Change & { origin?: string };
      try {
        message = JSON.parse(payload);
      } catch {
        return;
      }
      if (message.origin === origin) return;
      applyChange(deps, message).catch((error) =>
        deps.logger.warn("could not apply another process's change", { change: message, error }),
      );
    },
    resumed: () => {
      catchUp(deps).catch((error) =>
        deps.logger.warn("could not catch up on other processes' changes", { error }),
      );
    },
    available: () => deps.availability.available,
    logger: deps.logger,
  });
  const publish: ChangePublisher = (change) => {
    raw.client
      .notify(CHANGES_CHANNEL, JSON.stringify({ ...change, origin }))
      .catch((error: unknown) =>
        deps.logger.warn("could not announce a change to other processes", { change, error }),
      );
  };
  const detach = [
    deps.tenants.publishChangesTo(publish),
    deps.credentials.publishChangesTo(publish),
    deps.dialer.agents.publishChangesTo(publish),
  ];
  return async () => {
    for (const stop of detach) stop();
    await subscription.stop();
  };
}

/**
 * After a gap in listening, every change announced meanwhile is unknown: cached keys and nodes
 * are forgotten (read again when next presented), loaded tenants and users are read again, and
 * so are the agents signed in or on the board.
 */
export async function catchUp(deps: FeedDeps): Promise<void> {
  deps.credentials.forgetAll();
  await deps.tenants.reloadAll();
  for (const row of await listPresenceOf(deps.rawDb, deps.dialer.agents.userIds()))
    deps.dialer.agents.adopt(row);
}

/** Re-reads the record a change names, if this process holds it at all, and adopts it. */
async function applyChange(deps: FeedDeps, change: Change): Promise<void> {
  switch (change.kind) {
    case "user": {
      const held = deps.tenants.loadedUser(change.tenantId, change.id);
      // A tenant this process has not loaded has nothing to correct; a version held is current.
      if (!deps.tenants.loadedTenant(change.tenantId)) return;
      if (held && held.version >= change.version) return;
      const row = await findTenantUser(deps.db, { tenantId: change.tenantId, id: change.id });
      if (row) deps.tenants.userChanged(row, { announce: false });
      return;
    }
    case "tenant": {
      if (!deps.tenants.loadedTenant(change.id)) return;
      const row = await findTenantById(deps.db, change.id);
      if (row) deps.tenants.tenantChanged(row, { announce: false });
      return;
    }
    case "api_key": {
      const row = await findApiKeyByHash(deps.db, change.hash);
      if (row) deps.credentials.apiKeyChanged(row, { announce: false });
      return;
    }
    case "edge_node": {
      const row = await findNodeByHash(deps.db, change.hash);
      if (row) deps.credentials.nodeChanged(row, { announce: false });
      return;
    }
    case "agent": {
      // Every process holds every agent: the board is a replica of the table.
      if (deps.dialer.agents.version(change.userId) >= change.version) return;
      const row = await findPresence(deps.rawDb, change.userId);
      if (row) deps.dialer.agents.adopt(row);
      return;
    }
  }
}
