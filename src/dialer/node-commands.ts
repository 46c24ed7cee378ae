import {
  ackNodeCommands,
  deleteOldNodeCommands,
  deliverPendingCommands,
  hasPendingCommands,
  type NodeCommandRow,
  type StoredNodeCommand,
} from "../../db/queries/node-commands.ts";
import type { NodeCommandType } from "../../db/schema/cluster.ts";
import type { ServiceDeps } from "../deps.ts";
import type { NodePrincipal } from "../identity/principal.ts";
import type { NodeCommandView } from "../modules/edge-nodes/model.ts";

/**
 * The channel from the service to its edge nodes. A command is a row until its node
 * acknowledges it; a node's long poll hands out every command it has not acknowledged, so a
 * node that reconnects, or polls another process after a failover, gets it again, and the
 * node acts on each id once. A poll waiting in this process wakes as soon as a command is
 * stored here; one waiting elsewhere looks for new rows every `PROBE_MS`.
 */

/** How often a waiting poll looks for commands stored by another process. */
const PROBE_MS = 50;
/** Commands are forgotten this long after they were made. */
const KEEP_MS = 24 * 3_600_000;

/** Polls waiting in this process, by node. */
const waiting = new WeakMap<ServiceDeps, Map<string, Set<() => void>>>();

const waitersOf = (deps: ServiceDeps) => {
  let map = waiting.get(deps);
  if (!map) {
    map = new Map();
    waiting.set(deps, map);
  }
  return map;
};

/** A command for the node that holds `callId`, as a campaign's decision writes it. */
export function nodeCommandOf(input: {
  id: string;
  tenantId: string;
  nodeId: string;
  callId: string;
  type: NodeCommandType;
  payload?: Record<string, unknown>;
  at: number;
}): NodeCommandRow {
  return {
    id: input.id,
    tenantId: input.tenantId,
    edgeNodeId: input.nodeId,
    callId: input.callId,
    type: input.type,
    payload: input.payload ?? {},
    createdAt: new Date(input.at),
  };
}

/** Wakes the node's polls waiting in this process: a command for it has committed. */
export function wakeNode(deps: ServiceDeps, nodeId: string): void {
  const waiters = waitersOf(deps).get(nodeId);
  if (!waiters) return;
  for (const wake of waiters) wake();
}

const viewOf = (row: StoredNodeCommand): NodeCommandView =>
  ({ ...row.payload, id: row.id, type: row.type, call_id: row.callId }) as NodeCommandView;

/**
 * A node's poll: acknowledges what it carried out, then answers its commands not yet
 * acknowledged, waiting up to `waitMs` for one.
 */
export async function pollNodeCommands(
  deps: ServiceDeps,
  node: NodePrincipal,
  input: { ack: string[]; waitMs: number },
): Promise<{ commands: NodeCommandView[] }> {
  const now = () => new Date(deps.clock.now());
  const ids = [...new Set(input.ack.map((id) => id.toLowerCase()))];
  await ackNodeCommands(deps.db, { nodeId: node.nodeId, ids, now: now() });
  const deadline = performance.now() + input.waitMs;
  for (;;) {
    if (await hasPendingCommands(deps.db, node.nodeId)) {
      const rows = await deliverPendingCommands(deps.db, { nodeId: node.nodeId, now: now() });
      if (rows.length > 0) return { commands: rows.map(viewOf) };
    }
    const left = deadline - performance.now();
    if (left <= 0) return { commands: [] };
    await wakeOrProbe(deps, node.nodeId, Math.min(PROBE_MS, left));
  }
}

function wakeOrProbe(deps: ServiceDeps, nodeId: string, ms: number): Promise<void> {
  const all = waitersOf(deps);
  return new Promise((resolve) => {
    const waiters = all.get(nodeId) ?? new Set();
    all.set(nodeId, waiters);
    const done = () => {
      clearTimeout(timer);
      waiters.delete(done);
      if (waiters.size === 0 && all.get(nodeId) === waiters) all.delete(nodeId);
      resolve();
    };
    const timer = setTimeout(done, ms);
    waiters.add(done);
  });
}

/** Forgets commands made more than a day ago. */
export const forgetOldNodeCommands = (deps: ServiceDeps) =>
  deleteOldNodeCommands(deps.db, new Date(deps.clock.now() - KEEP_MS));
