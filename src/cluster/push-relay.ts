import {
  clusterMessagesByIds,
  deleteOldClusterMessages,
  insertClusterMessage,
} from "../../db/queries/cluster-messages.ts";
import type { ServiceDeps } from "../deps.ts";
import type { PushRelay } from "../realtime/hub.ts";
import { resumableListen } from "./resumable-listen.ts";

/** The PostgreSQL channel that carries live pushes between processes sharing a database. */
export const PUSHES_CHANNEL = "dialer_pushes";

/** PostgreSQL refuses a NOTIFY payload of 8,000 bytes or more. */
const MAX_PAYLOAD_BYTES = 7_999;
/** The envelope around a notification's entries: `{"o":"<uuid>","s":<seq>,"m":[…]}`. */
const ENVELOPE_BYTES = 72;
/** An entry larger than this goes by reference: stored in `cluster_messages`, its id notified. */
const MAX_ENTRY_BYTES = MAX_PAYLOAD_BYTES - ENVELOPE_BYTES;
/** Pushes waiting for the database beyond this are dropped rather than held in memory. */
const MAX_QUEUED = 20_000;

const DEFAULTS = {
  /** How often a process says it is here. */
  heartbeatMs: 1_000,
  /** A process not heard of for this long is taken as gone (stopped without a word). */
  peerTtlMs: 5_000,
  /** How often stored pushes are swept, and how long they are kept: receivers read them at once. */
  sweepMs: 10_000,
  keepSeconds: 60,
  sweepLimit: 5_000,
};
export type PushRelayOptions = Partial<typeof DEFAULTS>;

type RelayDeps = Pick<
  ServiceDeps,
  "db" | "longWorkDb" | "rawDb" | "realtime" | "logger" | "availability"
>;

/** A push as it travels: its topics and its serialised text. */
type Entry = [topics: string[], text: string];

/**
 * What goes on the channel: pushes, each inline or the id of a stored one, in the order they
 * were published, numbered per origin when the relay sends them (PostgreSQL folds identical
 * notifications of one transaction into one), unnumbered when a write sends them in its
 * commit; or a word about the sender's presence.
 */
type Notice =
  | { o: string; s?: number; m: (Entry | number)[] }
  | { o: string; p: "hello" | "here" | "bye"; t?: string[] | "*" };

/** A process that lists more tenants with supervisors than this says "all" instead. */
const MAX_LISTED_TENANTS = 150;

/** Another process: when it was last heard of, and the tenants it has supervisors of. */
interface Peer {
  heardAt: number;
  supervised: Set<string> | "all";
}

export interface ClusterPushRelay {
  /** Other processes heard of recently. */
  readonly peers: number;
  /** Whether another process may have a supervisor of the tenant. */
  supervisedElsewhere(tenantId: string): boolean;
  /** Sends what is queued, says goodbye and stops listening. */
  stop(): Promise<void>;
}

/**
 * Carries every message the realtime hub publishes to the processes sharing one PostgreSQL
 * database, each of which publishes it to its own sockets: a supervisor or an agent sees the
 * same pushes whichever process holds the socket.
 *
 * Pushes go in order. They queue in one line; what one turn of the event loop published (or
 * what queued while the line's last statement ran) goes as the next batch, in one
 * `select pg_notify(…)` statement, sent only once the one before it has completed: a
 * notification is delivered in the order of the commits, so the batches of one process
 * arrive in the order they were published, and a batch's notifications in the order of its
 * statement. An entry too large for a notification is stored first and its id takes its
 * place; receivers read stored entries before delivering anything after them.
 *
 * Nothing is relayed while no other process is heard of: each says `hello` when it starts,
 * `here` every second and in answer to a `hello`, `bye` when it stops. PGlite has one process
 * by construction: nothing to do.
 */
export async function connectPushRelay(
  deps: RelayDeps,
  options: PushRelayOptions = {},
): Promise<ClusterPushRelay> {
  const raw = deps.rawDb;
  if (raw.kind === "pglite")
    return { peers: 0, supervisedElsewhere: () => false, stop: async () => {} };
  const settings = { ...DEFAULTS, ...options };
  const client = raw.client;
  const origin = crypto.randomUUID();
  /** Other processes by origin. */
  const peers = new Map<string, Peer>();

  // Async, so that the breaker's refusal while the database is away is a rejection.
  const notify = async (payloads: string[]) =>
    client.unsafe("select pg_notify($1, p) from unnest($2::text[]) as p", [
      PUSHES_CHANNEL,
      payloads,
    ]);
  // A word lost (the database is away) is said again at the next heartbeat. Each says which
  // tenants this process has supervisors of: the others compute stats for those only.
  const say = (word: "hello" | "here" | "bye") => {
    const tenants = deps.realtime.supervisedTenants();
    const t = tenants.length > MAX_LISTED_TENANTS ? "*" : tenants;
    return notify([JSON.stringify({ o: origin, p: word, t })]).catch(() => undefined);
  };
  let announcing = false;

  // Sending.
  let queue: Entry[] = [];
  let seq = 0;
  let sending: Promise<void> | undefined;
  let failing = false;
  let overflowing = false;

  const relay: PushRelay = {
    get active() {
      return peers.size > 0;
    },
    // A notification a write makes in its commit: like one of the batches below, unnumbered
    // (its entries differ from any other notification of that transaction).
    inCommit: {
      channel: PUSHES_CHANNEL,
      prefix: `{"o":"${origin}","m":[`,
      suffix: "]}",
      maxBytes: MAX_ENTRY_BYTES,
    },
    send(topics, text) {
      if (queue.length >= MAX_QUEUED) {
        if (!overflowing) deps.logger.warn("pushes to other processes dropped: too many waiting");
        overflowing = true;
        return;
      }
      queue.push([topics, text]);
      sending ??= new Promise<void>((resolve) => setImmediate(resolve)).then(sendQueued);
    },
    supervisedElsewhere(tenantId) {
      for (const peer of peers.values())
        if (peer.supervised === "all" || peer.supervised.has(tenantId)) return true;
      return false;
    },
    supervisorsChanged() {
      // Supervisors of several tenants connecting together are announced in one word.
      if (announcing) return;
      announcing = true;
      setImmediate(() => {
        announcing = false;
        void say("here");
      });
    },
  };

  async function sendQueued(): Promise<void> {
    while (queue.length > 0) {
      const batch = queue;
      queue = [];
      try {
        // While the database is away, pushes are dropped: sockets get a snapshot when it is back.
        deps.availability.assertAvailable();
        await notify(await payloadsOf(batch));
        failing = false;
      } catch (error) {
        if (!failing) deps.logger.warn("could not relay pushes to other processes", { error });
        failing = true;
      }
    }
    overflowing = false;
    sending = undefined;
  }

  /** The batch's notification payloads, its large entries stored first. */
  async function payloadsOf(batch: Entry[]): Promise<string[]> {
    const parts = batch.map((entry) => JSON.stringify(entry));
    const sizes = parts.map((part) => Buffer.byteLength(part));
    const large = sizes.flatMap((size, index) => (size > MAX_ENTRY_BYTES ? [index] : []));
    await Promise.all(
      large.map(async (index) => {
        const id = String(await insertClusterMessage(deps.db, parts[index] as string));
        parts[index] = id;
        sizes[index] = id.length;
      }),
    );
    const payloads: string[] = [];
    let current: string[] = [];
    let bytes = 0;
    const close = () => {
      payloads.push(`{"o":"${origin}","s":${seq++},"m":[${current.join(",")}]}`);
      current = [];
      bytes = 0;
    };
    parts.forEach((part, index) => {
      const size = sizes[index] as number;
      if (current.length > 0 && bytes + 1 + size > MAX_ENTRY_BYTES) close();
      bytes += (current.length > 0 ? 1 : 0) + size;
      current.push(part);
    });
    if (current.length > 0) close();
    return payloads;
  }

  // Receiving: a notification with stored entries waits for their reading, and every
  // notification after it waits its turn.
  let inbox: Promise<void> = Promise.resolve();
  let waiting = 0;

  const deliver = (items: (Entry | number)[], stored?: Map<number, string>) => {
    for (const item of items) {
      let entry: unknown = item;
      if (typeof item === "number") {
        const text = stored?.get(item);
        if (text === undefined) {
          deps.logger.warn("a relayed push was gone before it was read", { id: item });
          continue;
        }
        entry = JSON.parse(text);
      }
      if (!Array.isArray(entry)) continue;
      const [topics, text] = entry;
      if (Array.isArray(topics) && typeof text === "string") deps.realtime.deliver(topics, text);
    }
  };

  const received = (payload: string) => {
    let notice: Notice;
    try {
      notice = JSON.parse(payload);
    } catch {
      return;
    }
    if (typeof notice?.o !== "string" || notice.o === origin) return;
    if ("p" in notice) {
      if (notice.p === "bye") peers.delete(notice.o);
      else {
        if (notice.p === "hello") void say("here");
        const listed = Array.isArray(notice.t) ? notice.t : undefined;
        peers.set(notice.o, {
          heardAt: Date.now(),
          supervised: listed ? new Set(listed.filter((id) => typeof id === "string")) : "all",
        });
      }
      return;
    }
    const peer = peers.get(notice.o);
    if (peer) peer.heardAt = Date.now();
    else peers.set(notice.o, { heardAt: Date.now(), supervised: "all" });
    const items = Array.isArray(notice.m) ? notice.m : [];
    const ids = items.filter((item): item is number => typeof item === "number");
    if (waiting === 0 && ids.length === 0) {
      deliver(items);
      return;
    }
    waiting++;
    inbox = inbox.then(async () => {
      try {
        const rows = ids.length > 0 ? await clusterMessagesByIds(deps.db, ids) : [];
        deliver(items, new Map(rows.map((row) => [row.id, row.payload])));
      } catch (error) {
        deps.logger.warn("could not read pushes relayed by reference", { error });
      } finally {
        waiting--;
      }
    });
  };

  const subscription = await resumableListen({
    client,
    channel: PUSHES_CHANNEL,
    onMessage: received,
    // Pushes relayed while this process was not listening are gone: its sockets get snapshots.
    resumed: () => deps.realtime.pushesMissed(),
    available: () => deps.availability.available,
    logger: deps.logger,
  });
  const detach = deps.realtime.relayTo(relay);
  await say("hello");

  const heartbeat = setInterval(() => {
    const now = Date.now();
    for (const [id, peer] of peers) if (now - peer.heardAt > settings.peerTtlMs) peers.delete(id);
    void say("here");
  }, settings.heartbeatMs);
  let sweeping = false;
  const sweeper = setInterval(() => {
    if (sweeping || !deps.availability.available) return;
    sweeping = true;
    deleteOldClusterMessages(deps.longWorkDb, {
      olderThanSeconds: settings.keepSeconds,
      limit: settings.sweepLimit,
    })
      .catch((error) => deps.logger.warn("relayed pushes' clean-up failed", { error }))
      .finally(() => {
        sweeping = false;
      });
  }, settings.sweepMs);

  return {
    get peers() {
      return peers.size;
    },
    supervisedElsewhere: (tenantId) => relay.supervisedElsewhere(tenantId),
    async stop() {
      clearInterval(heartbeat);
      clearInterval(sweeper);
      detach();
      await sending;
      await say("bye");
      await subscription.stop();
    },
  };
}
