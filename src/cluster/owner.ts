import { timingSafeEqual } from "node:crypto";
import { Elysia } from "elysia";
import type { ServiceDeps } from "../deps.ts";
import { ApiError, type ErrorCode, type FieldError } from "../errors.ts";
import { databaseError } from "../plugins/errors.ts";
import { isLeaseLost, refusesConnections } from "./leases.ts";
import { FrameBatcher, PeerLinks, parseFrame } from "./peer-links.ts";

/**
 * A campaign command that runs where the campaign's lease is held: `here` is its body on the
 * owner. Its arguments and result are JSON, so that another process can send it there: plain
 * data, never a request's meta, whose client address is looked up when read.
 */
export interface OwnedCommand<A extends unknown[], R> {
  name: string;
  /** A read: a lost connection under it changed nothing. */
  readOnly: boolean;
  here: (deps: ServiceDeps, ...args: A) => Promise<R>;
}

// biome-ignore lint/suspicious/noExplicitAny: the table holds commands of every shape.
const COMMANDS = new Map<string, OwnedCommand<any[], unknown>>();

/** Declares a command by name; the name is what crosses between processes. */
export function ownedCommand<A extends unknown[], R>(
  name: string,
  here: (deps: ServiceDeps, ...args: A) => Promise<R>,
  options: { readOnly?: boolean } = {},
): OwnedCommand<A, R> {
  const command = { name, readOnly: options.readOnly ?? false, here };
  COMMANDS.set(name, command as OwnedCommand<unknown[], unknown>);
  return command;
}

/** Where a command goes: a campaign of a tenant, and the error when there is no such campaign. */
export interface CommandTarget {
  tenantId: string;
  campaignId: string;
  missing: () => ApiError;
}

/** Attempts to find and reach an owner before answering 503; an owner that died is replaced within a lease. */
const ROUTE_ATTEMPTS = 5;
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

/**
 * Runs a campaign's command on the process that owns the campaign: here when this process
 * holds its lease (or takes it, nobody holding it), else sent to the owner. A command whose
 * write was refused by its fence (the lease moved meanwhile) committed nothing and goes to
 * the new owner. With one process, every campaign is held here and this is a plain call.
 */
export async function onOwner<A extends unknown[], R>(
  deps: ServiceDeps,
  target: CommandTarget,
  command: OwnedCommand<A, R>,
  args: A,
  requestId = "",
): Promise<R> {
  const leases = deps.campaigns.leases;
  let unreachable: string | undefined;
  for (let attempt = 0; attempt < ROUTE_ATTEMPTS; attempt++) {
    const owner = leases.holds(target.campaignId)
      ? ({ kind: "local" } as const)
      : await leases.resolve(target.tenantId, target.campaignId, unreachable);
    if (owner.kind === "missing") throw target.missing();
    if (owner.kind === "local") {
      try {
        return await command.here(deps, ...args);
      } catch (error) {
        if (!isLeaseLost(error)) throw error;
        leases.lost(target.campaignId);
        continue;
      }
    }
    // `none`: this process is draining and the campaign has no owner yet; another takes it.
    if (owner.kind === "remote") {
      const reply = await forward(deps, owner.url, command, target, args, requestId);
      if (reply.kind === "done") return reply.value as R;
      if (reply.kind === "failed") {
        // An owner that went silent is looked up again next time: it may have been replaced.
        if (reply.silent) leases.forgetOwner(target.campaignId);
        throw reply.error;
      }
      leases.forgetOwner(target.campaignId);
      if (reply.kind === "refused") {
        // Nothing listens where the owner was: it died, and its campaign is taken now.
        unreachable = owner.url;
        continue;
      }
    }
    unreachable = undefined;
    // The owner gave the campaign up or is handing it over: ask again shortly.
    await Bun.sleep(100 * 2 ** attempt);
  }
  throw new ApiError(
    503,
    "unavailable",
    "the campaign's owner cannot be reached; retry shortly",
    undefined,
    {
      "retry-after": "1",
    },
  );
}

type ForwardReply =
  | { kind: "done"; value: unknown }
  | { kind: "failed"; error: ApiError; silent?: boolean }
  /** Not the owner (any more): nothing was done. */
  | { kind: "elsewhere" }
  /** Nothing listens at the owner's address: nothing was done. */
  | { kind: "refused" };

interface WireError {
  status: number;
  code: ErrorCode;
  message: string;
  field_errors?: FieldError[];
  headers?: Record<string, string>;
}

type WireReply = { ok: unknown } | { error: WireError } | { elsewhere: true };

async function forward(
  deps: ServiceDeps,
  url: string,
  command: { name: string; readOnly: boolean },
  target: CommandTarget,
  args: unknown[],
  requestId: string,
): Promise<ForwardReply> {
  const outcome = await linksOf(deps).send(
    url,
    {
      name: command.name,
      tenant_id: target.tenantId,
      campaign_id: target.campaignId,
      args,
      request_id: requestId,
    },
    FORWARD_TIMEOUT_MS,
  );
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

interface CommandFrame {
  id: number;
  name: string;
  tenant_id: string;
  campaign_id: string;
  args: unknown[];
}

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
        const command = COMMANDS.get(frame.name);
        const replied = command
          ? runForwarded(deps, command, frame)
          : Promise.resolve<WireReply>({ elsewhere: true });
        void replied.then((reply) => {
          end.running--;
          replies?.send({ id: frame.id, reply });
        });
      }
    },
  };
};

async function runForwarded(
  deps: ServiceDeps,
  command: OwnedCommand<unknown[], unknown>,
  message: { tenant_id: string; campaign_id: string; args: unknown[] },
): Promise<WireReply> {
  const leases = deps.campaigns.leases;
  try {
    if (!leases.holds(message.campaign_id)) {
      const owner = await leases.resolve(message.tenant_id, message.campaign_id);
      if (owner.kind !== "local") return { elsewhere: true };
    }
    return { ok: (await command.here(deps, ...message.args)) ?? null };
  } catch (error) {
    if (isLeaseLost(error)) {
      leases.lost(message.campaign_id);
      return { elsewhere: true };
    }
    const apiError = asApiError(deps, error, command.readOnly ? "GET" : "POST");
    return {
      error: {
        status: apiError.status,
        code: apiError.code,
        message: apiError.message,
        ...(apiError.fieldErrors ? { field_errors: apiError.fieldErrors } : {}),
        ...(apiError.headers ? { headers: apiError.headers } : {}),
      },
    };
  }
}

function asApiError(deps: ServiceDeps, error: unknown, method: string): ApiError {
  if (error instanceof ApiError) return error;
  const failure = deps.availability.report(error);
  if (failure) return databaseError(failure, method);
  deps.logger.error("forwarded command failed", { error });
  return new ApiError(500, "internal_error", "internal server error");
}
