import { timingSafeEqual } from "node:crypto";
import { Elysia } from "elysia";
import { type CampaignCommand, isRead } from "../../actors/commands.ts";
import type { Forwarder, ForwardReply } from "../../actors/ports.ts";
import type { CommandTarget } from "../../actors/registry.ts";
import type { ServiceDeps } from "../deps.ts";
import { ApiError, type ErrorCode, type FieldError } from "../errors.ts";
import { databaseError } from "../plugins/errors.ts";
import { isLeaseLost, refusesConnections } from "./leases.ts";
import { FrameBatcher, PeerLinks, parseFrame } from "./peer-links.ts";

/**
 * How long a forwarded command waits for its owner. Commands take milliseconds; an owner
 * silent this long has stalled, and its lease has lapsed twice over: the caller hears
 * `outcome_unknown`, and a retry with the same Idempotency-Key finds the new owner.
 */
const FORWARD_TIMEOUT_MS = 10_000;
export const COMMANDS_PATH = "/internal/v1/commands";
const SIGNATURE_HEADER = "x-dialer-signature";
const SENT_AT_HEADER = "x-dialer-sent-at";
/** A link's handshake older than this is refused: a captured one cannot be replayed later. */
const MAX_HANDSHAKE_AGE_MS = 30_000;

/** Campaigns one process hands another at most per look: each is restored where it lands. */
export const MAX_HAND_OVER = 50;

/**
 * What one process asks of another that is not a campaign's command: the busiest owner hands
 * campaigns over to a process short of them (src/cluster/rebalance.ts).
 */
export interface HandOverRequest {
  type: "cluster.handOver";
  count: number;
  /** The process asked, as the asker saw it: another one answers with nothing. */
  from: string;
  to: string;
}

interface WireError {
  status: number;
  code: ErrorCode;
  message: string;
  field_errors?: FieldError[];
  headers?: Record<string, string>;
}

type WireReply = { ok: unknown } | { error: WireError } | { elsewhere: true };

/**
 * Sends campaigns' commands to their owners over the links between processes (the registry
 * routes; `CampaignRegistry.run`): a command is one small frame each way, its reply the
 * owner's value or its error, which the caller throws as its own: replies, idempotent replays
 * and error envelopes are the owner's, byte for byte.
 */
export const forwarderOf = (deps: ServiceDeps): Forwarder => ({
  async forward(url, { target, command, requestId }) {
    const readOnly = isRead(command);
    const frame = { kind: "command", target, command, request_id: requestId };
    const outcome = await linksOf(deps).send(url, frame, FORWARD_TIMEOUT_MS);
    return replyOf(deps, url, outcome, { name: command.type, readOnly });
  },
});

/** Asks the process at `url` to hand campaigns over; the campaigns it gave up. */
export async function askHandOver(
  deps: ServiceDeps,
  url: string,
  request: HandOverRequest,
): Promise<string[]> {
  const outcome = await linksOf(deps).send(url, { kind: "process", request }, FORWARD_TIMEOUT_MS);
  const reply = await replyOf(deps, url, outcome, { name: request.type, readOnly: false });
  if (reply.kind === "failed") throw reply.error;
  return reply.kind === "done" ? (reply.value as string[]) : [];
}

async function replyOf(
  deps: ServiceDeps,
  url: string,
  outcome: Awaited<ReturnType<PeerLinks["send"]>>,
  command: { name: string; readOnly: boolean },
): Promise<ForwardReply> {
  if (outcome.kind === "unopened")
    // Not sent: nothing happened. Nothing listening there means the owner is gone.
    return (await refusesConnections(url)) ? { kind: "refused" } : { kind: "elsewhere" };
  if (outcome.kind === "lost") {
    deps.logger.warn("a forwarded command got no answer", { command: command.name, url });
    return { kind: "failed", error: ownerSilent(command.readOnly), silent: true };
  }
  const reply = outcome.reply as WireReply;
  if ("ok" in reply) return { kind: "done", value: reply.ok };
  if ("error" in reply) {
    const { status, code, message, field_errors, headers } = reply.error;
    return { kind: "failed", error: new ApiError(status, code, message, field_errors, headers) };
  }
  return { kind: "elsewhere" };
}

const LINKS = new WeakMap<ServiceDeps, PeerLinks>();

/** This process's links to the others, made on first use. */
function linksOf(deps: ServiceDeps): PeerLinks {
  let links = LINKS.get(deps);
  if (!links) {
    links = new PeerLinks(() => {
      const sentAt = String(Date.now());
      return { [SENT_AT_HEADER]: sentAt, [SIGNATURE_HEADER]: sign(deps, `link:${sentAt}`) };
    }, COMMANDS_PATH);
    LINKS.set(deps, links);
  }
  return links;
}

/** Closes this process's links to the others, once its own requests are answered. */
export const closeOwnerLinks = (deps: ServiceDeps) => LINKS.get(deps)?.closeAll();

/** The owner stopped answering mid-command: a write may or may not have been made. */
const ownerSilent = (readOnly: boolean) =>
  readOnly
    ? new ApiError(
        503,
        "unavailable",
        "the campaign's owner did not answer; retry shortly",
        undefined,
        {
          "retry-after": "1",
        },
      )
    : new ApiError(
        503,
        "outcome_unknown",
        "the campaign's owner stopped answering while the command was under way: it may or " +
          "may not have been made; read before retrying, or retry with the same Idempotency-Key",
        undefined,
        { "retry-after": "1" },
      );

const sign = (deps: ServiceDeps, body: string) =>
  new Bun.CryptoHasher("sha256", deps.tokens.clusterKey).update(body).digest("hex");

function signedBy(deps: ServiceDeps, body: string, signature: string | null): boolean {
  if (!signature) return false;
  const expected = Buffer.from(sign(deps, body));
  const given = Buffer.from(signature);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/**
 * The owner's end: a socket per other process, opened with a handshake signed with the key
 * every process derives from the shared signing secret (a bad or stale one is a bare 404, as
 * for a path that does not exist). It has no authentication or rate limit of its own: the
 * sender authorised the request a command came from. A command runs only while this process
 * holds the campaign's lease.
 */
export const ownerCommandsModule = (deps: ServiceDeps) =>
  new Elysia({ name: "owner-commands" }).get(
    COMMANDS_PATH,
    ({ request, server }) => {
      const sentAt = request.headers.get(SENT_AT_HEADER) ?? "";
      const fresh = Math.abs(Date.now() - Number(sentAt)) <= MAX_HANDSHAKE_AGE_MS;
      const signed = signedBy(deps, `link:${sentAt}`, request.headers.get(SIGNATURE_HEADER));
      if (!fresh || !signed || !server?.upgrade(request, { data: commandSocket(deps) }))
        return new Response(null, { status: 404 });
      return undefined;
    },
    // Outside the permission table: no principal reaches it, only a signed handshake.
    { detail: { hide: true, ["x-permission" as string]: "public" } },
  );

type CommandFrame = { id: number } & (
  | { kind: "command"; target: CommandTarget; command: CampaignCommand }
  | { kind: "process"; request: HandOverRequest }
);

interface CommandSocket {
  send(text: string): unknown;
  close(code?: number, reason?: string): unknown;
}

/** The sockets other processes opened to this one, and the commands they have under way here. */
interface OwnerEnd {
  sockets: Set<CommandSocket>;
  running: number;
  lastFrameAt: number;
}

const ENDS = new WeakMap<ServiceDeps, OwnerEnd>();

function endOf(deps: ServiceDeps): OwnerEnd {
  let end = ENDS.get(deps);
  if (!end) {
    end = { sockets: new Set(), running: 0, lastFrameAt: 0 };
    ENDS.set(deps, end);
  }
  return end;
}

/** How long a drain waits for the commands other processes sent here to be answered. */
const DRAIN_COMMANDS_MS = 5_000;
/**
 * Quiet this long means the others have heard that the campaigns moved: each learns it from
 * the "elsewhere" reply to its next command, then sends to the new owner.
 */
const DRAIN_QUIET_MS = 100;

/**
 * Closes the sockets other processes opened to this one, once the commands they sent are
 * answered (a server stops only when its sockets are closed). Called in a drain, after the
 * leases were given up: every command arriving meanwhile is answered "elsewhere".
 */
export async function closeOwnerEnd(deps: ServiceDeps): Promise<void> {
  const end = ENDS.get(deps);
  if (!end) return;
  const deadline = performance.now() + DRAIN_COMMANDS_MS;
  while (
    performance.now() < deadline &&
    (end.running > 0 || performance.now() - end.lastFrameAt < DRAIN_QUIET_MS)
  ) {
    await Bun.sleep(10);
  }
  for (const socket of end.sockets) socket.close(1001, "draining");
  end.sockets.clear();
}

/**
 * The handlers of one process's socket to this one (Bun's server calls them through
 * `ws.data`, one object per socket): replies answered in one turn go back as one frame.
 */
const commandSocket = (deps: ServiceDeps) => {
  const end = endOf(deps);
  let replies: FrameBatcher | undefined;
  return {
    open(ws: CommandSocket) {
      end.sockets.add(ws);
      replies = new FrameBatcher((frame) => ws.send(frame));
    },
    close(ws: CommandSocket) {
      end.sockets.delete(ws);
    },
    message(_ws: CommandSocket, raw: string | Buffer) {
      end.lastFrameAt = performance.now();
      for (const frame of parseFrame<CommandFrame>(raw)) {
        end.running++;
        const replied =
          frame.kind === "command"
            ? runForwarded(deps, frame.target, frame.command)
            : handOverHere(deps, frame.request);
        void replied.then((reply) => {
          end.running--;
          replies?.send({ id: frame.id, reply });
        });
      }
    },
  };
};

/**
 * A command another process sent: run here while this process holds the campaign's lease (or
 * takes it, nobody holding it), else answered "elsewhere", so that the sender asks again.
 */
async function runForwarded(
  deps: ServiceDeps,
  target: CommandTarget,
  command: CampaignCommand,
): Promise<WireReply> {
  const leases = deps.campaigns.leases;
  try {
    if (!leases.holds(target.campaignId)) {
      const owner = await leases.resolve(target.tenantId, target.campaignId);
      if (owner.kind !== "local") return { elsewhere: true };
    }
    return { ok: (await deps.campaigns.runHere(target, command)) ?? null };
  } catch (error) {
    if (isLeaseLost(error)) {
      leases.lost(target.campaignId);
      return { elsewhere: true };
    }
    return {
      error: wireErrorOf(asApiError(deps, error, isRead(command) ? "GET" : "POST")),
    };
  }
}

/** On the busiest process: gives up to `count` of its campaigns away, to the process `to`. */
async function handOverHere(deps: ServiceDeps, request: HandOverRequest): Promise<WireReply> {
  const leases = deps.campaigns.leases;
  try {
    if (leases.instanceId !== request.from || !Number.isInteger(request.count)) return { ok: [] };
    return { ok: await leases.handOver(Math.min(request.count, MAX_HAND_OVER), request.to) };
  } catch (error) {
    return { error: wireErrorOf(asApiError(deps, error, "POST")) };
  }
}

const wireErrorOf = (apiError: ApiError): WireError => ({
  status: apiError.status,
  code: apiError.code,
  message: apiError.message,
  ...(apiError.fieldErrors ? { field_errors: apiError.fieldErrors } : {}),
  ...(apiError.headers ? { headers: apiError.headers } : {}),
});

function asApiError(deps: ServiceDeps, error: unknown, method: string): ApiError {
  if (error instanceof ApiError) return error;
  const failure = deps.availability.report(error);
  if (failure) return databaseError(failure, method);
  deps.logger.error("forwarded command failed", { error });
  return new ApiError(500, "internal_error", "internal server error");
}
