import type { Logger } from "../logger.ts";

/** The part of a postgres.js client that listens and notifies. */
export interface ListenClient {
  listen(
    channel: string,
    onNotify: (payload: string) => void,
    onListen?: () => void,
  ): Promise<{ unlisten(): Promise<void> }>;
  notify(channel: string, payload: string): Promise<unknown>;
}

export interface ResumableListenOptions {
  client: ListenClient;
  channel: string;
  onMessage: (payload: string) => void;
  /** Called after every gap in listening: what was notified meanwhile was lost, read it again. */
  resumed: () => void;
  /** Whether the database answers now: a lost listen is only re-established while it does. */
  available: () => boolean;
  logger: Logger;
  /** How often the listener checks that it still hears its own pings. */
  checkMs?: number;
}

const CHECK_MS = 5_000;
/** A ping is the only payload that starts so; every listener of the channel ignores it. */
const PING_PREFIX = '{"ping":';

/**
 * LISTEN that survives the loss of its connection. postgres.js listens again once its
 * connection comes back, but what was notified meanwhile is gone, and a re-listen that fails
 * (the database still away) is dropped for good. So each resumption calls `resumed`, and the
 * listener pings itself on the channel: a ping not heard back by the next check, while the
 * database answers, means the listen is gone, and it listens again.
 */
export async function resumableListen(options: ResumableListenOptions) {
  const { client, channel, logger } = options;
  const me = crypto.randomUUID();
  let started = false;
  /** A ping was sent and has not come back yet. */
  let awaitingPing = false;
  let relistening = false;
  /**
   * Only the latest listen delivers. postgres.js listens again after a reconnection under a
   * listener of its own, which `unlisten` then no longer finds: an earlier listen, or one
   * after `stop`, may go on being called, and must do nothing.
   */
  let current = 0;

  const listen = () => {
    const mine = ++current;
    const received = (payload: string) => {
      if (mine !== current) return;
      if (payload.startsWith(PING_PREFIX)) {
        if (payload.includes(me)) awaitingPing = false;
        return;
      }
      options.onMessage(payload);
    };
    const listened = () => {
      if (mine !== current) return;
      // Called on the first listen and on each one after a reconnection.
      if (started) options.resumed();
      started = true;
    };
    return client.listen(channel, received, listened);
  };
  let subscription = await listen();

  async function relisten() {
    relistening = true;
    logger.warn("listening again: notifications were lost", { channel });
    try {
      await subscription.unlisten().catch(() => undefined);
      subscription = await listen();
      awaitingPing = false;
    } catch (error) {
      logger.warn("could not listen again; trying at the next check", { channel, error });
    } finally {
      relistening = false;
    }
  }

  const timer = setInterval(() => {
    if (relistening || !options.available()) return;
    if (awaitingPing) {
      void relisten();
      return;
    }
    awaitingPing = true;
    client.notify(channel, JSON.stringify({ ping: me })).catch(() => {
      // Not sent: nothing to miss.
      awaitingPing = false;
    });
  }, options.checkMs ?? CHECK_MS);

  return {
    async stop(): Promise<void> {
      clearInterval(timer);
      current = -1;
      await subscription.unlisten();
    },
  };
}
