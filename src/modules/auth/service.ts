import { findTenantByDomain } from "../../../db/queries/tenants.ts";
import {
  findTenantUser,
  findUserByEmail,
  findUsersByEmailAnyTenant,
  type UserRow,
  updateUser,
} from "../../../db/queries/users.ts";
import type { RequestMeta, ServiceDeps } from "../../deps.ts";
import { ok } from "../../envelope.ts";
import { ApiError, badRequest, notFound, unauthenticated } from "../../errors.ts";
import { recordAudit } from "../../identity/audit.ts";
import { hashPassword, verifyDecoy, verifyPassword } from "../../identity/passwords.ts";
import type { Principal, UserPrincipal } from "../../identity/principal.ts";
import { apiKeyView } from "../api-keys/model.ts";
import { tenantView } from "../tenants/model.ts";
import { userView } from "../users/model.ts";
import {
  type AccountKey,
  accountLocked,
  countFailure,
  lockStateOf,
  resetFailures,
} from "./lockout.ts";
import type { LoginInput } from "./model.ts";

/** One account a login may be for: a tenant and an e-mail, with or without a user behind it. */
interface Account extends AccountKey {
  user: UserRow | undefined;
}

/** One credential check: the accounts it may be for, the password offered, and why. */
interface CredentialAttempt {
  accounts: Account[];
  password: string;
  purpose: "login" | "password_change";
  meta: RequestMeta;
}

const accountKey = (account: Account) => `${account.tenantId}\u0000${account.email}`;

function auditAttempt(
  deps: ServiceDeps,
  attempt: CredentialAttempt,
  record: { account: Account; outcome: string; details?: Record<string, unknown> },
) {
  const { account } = record;
  return recordAudit(deps.db, {
    tenantId: account.tenantId,
    actorType: account.user ? "user" : "anonymous",
    actorId: account.user?.id ?? null,
    action: `${attempt.purpose}.${record.outcome}`,
    targetType: "user",
    targetId: account.user?.id ?? null,
    requestId: attempt.meta.requestId,
    details: { email: account.email, ip: attempt.meta.ip, ...record.details },
    at: new Date(deps.clock.now()),
  });
}

/** A real verification, or a decoy's when no user is behind the account: the same time either way. */
const passwordMatches = (account: Account, password: string) =>
  account.user ? verifyPassword(password, account.user.passwordHash) : verifyDecoy(password);

/**
 * Decides a credential check. Every candidate's hash is verified, locked or not, so the time
 * taken says nothing. The attempt is for an account only when exactly one unlocked candidate's
 * password matches; anything else is a failure against every candidate, so the answer never
 * tells a right password from a wrong one for a locked account, and nobody learns about a
 * same-e-mail account of another workspace from the account they hold themselves.
 */
async function checkCredentials(deps: ServiceDeps, attempt: CredentialAttempt) {
  const { accounts, password } = attempt;
  const matches = await Promise.all(accounts.map((account) => passwordMatches(account, password)));
  const now = deps.clock.now();
  const locks = await Promise.all(accounts.map((account) => lockStateOf(deps.db, account, now)));
  const open = accounts.filter((_, i) => matches[i] && locks[i]?.lockedUntil === undefined);
  if (open.length === 1) return admit(deps, attempt, open[0] as Account);
  return refuse(deps, attempt);
}

/**
 * The password matched this account. Under the account's gate, and clearing the failures only
 * if no lock is in force, so that a lock set by a concurrent failure (in this process or
 * another) still holds; then refuse a disabled account (only now, so that its state is never
 * revealed to a guesser).
 */
function admit(deps: ServiceDeps, attempt: CredentialAttempt, account: Account) {
  return deps.loginGate.run(accountKey(account), async (): Promise<UserRow> => {
    const now = deps.clock.now();
    const lock = await lockStateOf(deps.db, account, now);
    if (lock.lockedUntil !== undefined) {
      await auditAttempt(deps, attempt, { account, outcome: "locked" });
      throw accountLocked({ lockedUntil: lock.lockedUntil, now });
    }
    const user = account.user as UserRow;
    if (lock.counted && !(await resetFailures(deps.db, account, now))) {
      // Another process's failure may have locked the account since it was read.
      const since = await lockStateOf(deps.db, account, now);
      if (since.lockedUntil !== undefined) {
        await auditAttempt(deps, attempt, { account, outcome: "locked" });
        throw accountLocked({ lockedUntil: since.lockedUntil, now });
      }
    }
    if (user.status === "disabled") {
      await auditAttempt(deps, attempt, {
        account,
        outcome: "refused",
        details: { reason: "account_disabled" },
      });
      throw new ApiError(403, "account_disabled", "account disabled");
    }
    if (attempt.purpose === "login")
      await auditAttempt(deps, attempt, { account, outcome: "succeeded" });
    return user;
  });
}

/**
 * A failure against every unlocked candidate. The lock is checked and the failure counted in
 * one statement, so that attempts in several processes count exactly; the gate keeps the
 * attempts of this process in order. 403 `account_locked` while any candidate is locked (the
 * attempt that sets a lock is still answered 401), else 401.
 */
async function refuse(deps: ServiceDeps, attempt: CredentialAttempt): Promise<never> {
  const now = deps.clock.now();
  const locks = await Promise.all(
    attempt.accounts.map((account) =>
      deps.loginGate.run(accountKey(account), async () => {
        const at = deps.clock.now();
        const counted = await countFailure(deps.db, account, at);
        if (!counted) {
          const lock = await lockStateOf(deps.db, account, at);
          await auditAttempt(deps, attempt, { account, outcome: "locked" });
          return lock.lockedUntil;
        }
        await auditAttempt(deps, attempt, {
          account,
          outcome: "failed",
          details: {
            consecutive_failures: counted.failedCount,
            locked: counted.lockedUntil !== null,
          },
        });
        return undefined;
      }),
    ),
  );
  const lockedUntil = Math.max(...locks.map((until) => until ?? Number.NEGATIVE_INFINITY));
  if (lockedUntil > now) throw accountLocked({ lockedUntil, now });
  throw unauthenticated();
}

/** SPEC login rule 1: the named domain, else the e-mail's tenants, else the platform default. */
async function accountsFor(deps: ServiceDeps, email: string, tenantDomain: string | undefined) {
  if (tenantDomain !== undefined) {
    const tenant = await findTenantByDomain(deps.db, tenantDomain.trim().toLowerCase());
    if (!tenant) return [];
    return [
      {
        tenantId: tenant.id,
        email,
        user: await findUserByEmail(deps.db, { tenantId: tenant.id, email }),
      },
    ];
  }
  const users = await findUsersByEmailAnyTenant(deps.db, email);
  if (users.length > 0) return users.map((user) => ({ tenantId: user.tenantId, email, user }));
  const fallback = await findTenantByDomain(deps.db, deps.config.DEFAULT_TENANT_DOMAIN);
  return fallback ? [{ tenantId: fallback.id, email, user: undefined }] : [];
}

const tooManyFailures = (resetSeconds: number) =>
  new ApiError(429, "rate_limited", "too many failed logins from this address", undefined, {
    "retry-after": String(resetSeconds),
  });

/** Guessing: wrong credentials, or any attempt on a locked account. */
const isFailedLogin = (error: unknown) =>
  error instanceof ApiError && (error.status === 401 || error.code === "account_locked");

/**
 * Runs a login attempt on its client address's budget of failed logins a minute. A failure is
 * known only after the password check, so the attempt holds a unit of the budget from before
 * it, and gives the unit back unless it failed: successes never count (a call centre's agents
 * sign in from one address at the start of a shift), and attempts sent all at once are judged
 * only as far as the budget goes, in every process sharing the database. The per-account
 * lockout stays exact whatever their number.
 */
async function onAddressBudget<T>(
  deps: ServiceDeps,
  address: string | undefined,
  attempt: () => Promise<T>,
): Promise<T> {
  if (!address) return attempt();
  const takenAt = await holdAttempt(deps, address);
  let failed = false;
  try {
    return await attempt();
  } catch (error) {
    failed = isFailedLogin(error);
    throw error;
  } finally {
    deps.loginThrottle.settle(address, { takenAt, now: deps.clock.now(), keep: failed });
  }
}

/**
 * Holds a unit of the address's budget for one attempt, and returns when. Past the budget, an
 * attempt waits while attempts of this process from the address are in flight, since their
 * units come back unless they fail: a shift signing in at once is slowed rather than refused.
 * It is refused once none is left to wait for (another process's are not waited for).
 */
async function holdAttempt(deps: ServiceDeps, address: string): Promise<number> {
  const limit = deps.config.LOGIN_RATE_LIMIT_PER_MINUTE;
  for (;;) {
    const takenAt = deps.clock.now();
    const held = deps.loginThrottle.hold(address, limit, takenAt);
    const decision = held instanceof Promise ? await held : held;
    if (decision.allowed) return takenAt;
    const settling = deps.loginThrottle.settling(address);
    if (!settling) throw tooManyFailures(decision.resetSeconds);
    await settling;
  }
}

async function signIn(deps: ServiceDeps, input: LoginInput, meta: RequestMeta) {
  const email = input.email.trim().toLowerCase();
  const accounts: Account[] = await accountsFor(deps, email, input.tenant_domain);
  if (accounts.length === 0) await refuseUnknownWorkspace(deps, email, input.password, meta);
  return checkCredentials(deps, { accounts, password: input.password, purpose: "login", meta });
}

/** No workspace to count against: pay for a verification all the same, and record the attempt. */
async function refuseUnknownWorkspace(
  deps: ServiceDeps,
  email: string,
  password: string,
  meta: RequestMeta,
): Promise<never> {
  await verifyDecoy(password);
  await recordAudit(deps.db, {
    tenantId: null,
    actorType: "anonymous",
    action: "login.failed",
    requestId: meta.requestId,
    details: { email, ip: meta.ip, reason: "unknown_workspace" },
    at: new Date(deps.clock.now()),
  });
  throw unauthenticated();
}

export async function login(deps: ServiceDeps, input: LoginInput, meta: RequestMeta) {
  const user = await onAddressBudget(deps, meta.ip, () => signIn(deps, input, meta));
  // The row was read before the slow password check; an admin may have changed the user since.
  const current = deps.tenants.userChanged(user);
  if (current.status === "disabled")
    throw new ApiError(403, "account_disabled", "account disabled");
  const issued = await deps.tokens.issue(current);
  return {
    token: issued.token,
    expires_at: issued.expiresAt.toISOString(),
    user: userView(current),
  };
}

/** The caller and its tenant: the user (from the tenant actor's memory) or the API key. */
export async function me(deps: ServiceDeps, principal: Principal) {
  const tenant =
    deps.tenants.loadedTenant(principal.tenantId) ??
    (await deps.tenants.tenant(principal.tenantId));
  if (!tenant) throw notFound("tenant");
  if (principal.kind === "user")
    return { user: userView(principal.user), tenant: tenantView(tenant) };
  const key = principal.key;
  return {
    api_key: apiKeyView(key, deps.credentials.pendingUseOf(key.id)),
    tenant: tenantView(tenant),
  };
}

/** Serialised `/auth/me` bodies per user record, with the tenant record each was built from. */
const meTexts = new WeakMap<UserPrincipal["user"], { tenant: object; text: string }>();

/**
 * `GET /auth/me` of a signed-in user whose tenant is loaded, as the envelope's JSON text, or
 * undefined otherwise. Every client asks it on every page load, so the text is built once per
 * user and tenant record; the actors replace those records, never mutate them, on a change.
 */
export function cachedMeText(deps: ServiceDeps, principal: Principal): string | undefined {
  if (principal.kind !== "user") return undefined;
  const tenant = deps.tenants.loadedTenant(principal.tenantId);
  if (!tenant) return undefined;
  let cached = meTexts.get(principal.user);
  if (cached?.tenant !== tenant) {
    const body = ok({ user: userView(principal.user), tenant: tenantView(tenant) });
    cached = { tenant, text: JSON.stringify(body) };
    meTexts.set(principal.user, cached);
  }
  return cached.text;
}

export async function changePassword(
  deps: ServiceDeps,
  principal: UserPrincipal,
  input: { current_password: string; new_password: string },
  meta: RequestMeta,
) {
  const current = await findTenantUser(deps.db, {
    tenantId: principal.tenantId,
    id: principal.user.id,
  });
  if (!current) throw unauthenticated();
  const account = {
    tenantId: principal.tenantId,
    email: current.email.toLowerCase(),
    user: current,
  };
  await checkCredentials(deps, {
    accounts: [account],
    password: input.current_password,
    purpose: "password_change",
    meta,
  });
  if (input.new_password === input.current_password) {
    throw badRequest("new password must differ from the current one", [
      { field: "new_password", message: "must differ from current_password" },
    ]);
  }
  const now = new Date(deps.clock.now());
  const passwordHash = await hashPassword(input.new_password);
  const updated = await deps.db.transaction(async (tx) => {
    const row = await updateUser(tx, {
      tenantId: principal.tenantId,
      id: current.id,
      patch: { passwordHash, mustChangePassword: false },
      now,
    });
    await recordAudit(tx, {
      tenantId: principal.tenantId,
      actorType: "user",
      actorId: current.id,
      action: "password_change.succeeded",
      targetType: "user",
      targetId: current.id,
      requestId: meta.requestId,
      details: { ip: meta.ip },
      at: now,
    });
    return row;
  });
  if (!updated) throw notFound("user");
  deps.tenants.userChanged(updated);
  return { user: userView(updated) };
}

export async function logout(deps: ServiceDeps, principal: UserPrincipal, meta: RequestMeta) {
  await recordAudit(deps.db, {
    tenantId: principal.tenantId,
    actorType: "user",
    actorId: principal.user.id,
    action: "logout",
    targetType: "user",
    targetId: principal.user.id,
    requestId: meta.requestId,
    details: { ip: meta.ip },
    at: new Date(deps.clock.now()),
  });
  return {};
}
