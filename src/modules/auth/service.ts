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
import { assertNotLocked, countFailure, resetFailures } from "./lockout.ts";
import type { LoginInput } from "./model.ts";

/** One account a login may be for: a tenant and an e-mail, with or without a user behind it. */
interface Account {
  tenantId: string;
  email: string;
  user: UserRow | undefined;
}

const accountKey = (account: Account) => `${account.tenantId}\u0000${account.email}`;

/**
 * Runs one attempt against one account, serialised per account so that concurrent attempts
 * are counted exactly: refuse while locked, check the password, count or reset failures.
 */
async function attempt(
  deps: ServiceDeps,
  account: Account,
  checkPassword: () => Promise<boolean>,
  meta: RequestMeta,
  action: "login" | "password_change",
): Promise<UserRow> {
  return deps.loginGate.run(accountKey(account), async () => {
    const now = deps.clock.now();
    const audit = (outcome: string, details: Record<string, unknown> = {}) =>
      recordAudit(deps.db, {
        tenantId: account.tenantId,
        actorType: account.user ? "user" : "anonymous",
        actorId: account.user?.id ?? null,
        action: `${action}.${outcome}`,
        targetType: "user",
        targetId: account.user?.id ?? null,
        requestId: meta.requestId,
        details: { email: account.email, ip: meta.ip, ...details },
        at: new Date(now),
      });
    let failures: Awaited<ReturnType<typeof assertNotLocked>>;
    try {
      failures = await assertNotLocked(deps.db, account.tenantId, account.email, now);
    } catch (error) {
      await audit("locked");
      throw error;
    }
    // Always pay for a verification (a decoy when there is no user) so timing reveals nothing.
    const valid = (await checkPassword()) && account.user !== undefined;
    if (!valid || !account.user) {
      const counted = await countFailure(deps.db, account.tenantId, account.email, now);
      await audit("failed", {
        consecutive_failures: counted.failedCount,
        locked: counted.lockedUntil !== null,
      });
      throw unauthenticated();
    }
    if (failures) await resetFailures(deps.db, account.tenantId, account.email);
    if (account.user.status === "disabled") {
      await audit("refused", { reason: "account_disabled" });
      throw new ApiError(403, "account_disabled", "account disabled");
    }
    if (action === "login") await audit("succeeded");
    return account.user;
  });
}

/** SPEC login rule 1: the named domain, else the e-mail's only tenant, else the password decides. */
async function accountsFor(deps: ServiceDeps, email: string, tenantDomain: string | undefined) {
  if (tenantDomain !== undefined) {
    const tenant = await findTenantByDomain(deps.db, tenantDomain.trim().toLowerCase());
    if (!tenant) return [];
    return [{ tenantId: tenant.id, email, user: await findUserByEmail(deps.db, tenant.id, email) }];
  }
  const users = await findUsersByEmailAnyTenant(deps.db, email);
  if (users.length > 0) return users.map((user) => ({ tenantId: user.tenantId, email, user }));
  const fallback = await findTenantByDomain(deps.db, deps.config.DEFAULT_TENANT_DOMAIN);
  return fallback ? [{ tenantId: fallback.id, email, user: undefined }] : [];
}

/** Refuses a client address that tries more logins a minute than a person would. */
function throttleAddress(deps: ServiceDeps, ip: string | undefined) {
  if (!ip) return;
  const decision = deps.loginThrottle.take(
    ip,
    deps.config.LOGIN_RATE_LIMIT_PER_MINUTE,
    deps.clock.now(),
  );
  if (!decision.allowed) {
    throw new ApiError(
      429,
      "rate_limited",
      "too many login attempts from this address",
      undefined,
      {
        "retry-after": String(decision.resetSeconds),
      },
    );
  }
}

export async function login(deps: ServiceDeps, input: LoginInput, meta: RequestMeta) {
  throttleAddress(deps, meta.ip);
  const email = input.email.trim().toLowerCase();
  const accounts: Account[] = await accountsFor(deps, email, input.tenant_domain);
  let user: UserRow;
  if (accounts.length === 0) {
    await verifyDecoy(input.password);
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
  if (accounts.length === 1) {
    const [account] = accounts as [Account];
    user = await attempt(
      deps,
      account,
      () =>
        account.user
          ? verifyPassword(input.password, account.user.passwordHash)
          : verifyDecoy(input.password),
      meta,
      "login",
    );
  } else {
    user = await loginAmongTenants(deps, accounts, input.password, meta);
  }
  deps.tenants.userChanged(user);
  const issued = await deps.tokens.issue(user);
  return { token: issued.token, expires_at: issued.expiresAt.toISOString(), user: userView(user) };
}

/**
 * The e-mail exists in several tenants: the one whose password matches is the account.
 * No match counts a failure against each; a password valid in two is refused as ambiguous,
 * since the caller must then name the workspace.
 */
async function loginAmongTenants(
  deps: ServiceDeps,
  accounts: Account[],
  password: string,
  meta: RequestMeta,
) {
  const checks = await Promise.all(
    accounts.map((account) =>
      account.user ? verifyPassword(password, account.user.passwordHash) : false,
    ),
  );
  const matching = accounts.filter((_, index) => checks[index]);
  if (matching.length === 1) {
    return attempt(deps, matching[0] as Account, async () => true, meta, "login");
  }
  if (matching.length === 0) {
    for (const account of accounts) {
      await attempt(deps, account, async () => false, meta, "login").catch(() => undefined);
    }
  }
  throw unauthenticated();
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
  const current = await findTenantUser(deps.db, principal.tenantId, principal.user.id);
  if (!current) throw unauthenticated();
  const account = {
    tenantId: principal.tenantId,
    email: current.email.toLowerCase(),
    user: current,
  };
  await attempt(
    deps,
    account,
    () => verifyPassword(input.current_password, current.passwordHash),
    meta,
    "password_change",
  );
  if (input.new_password === input.current_password) {
    throw badRequest("new password must differ from the current one", [
      { field: "new_password", message: "must differ from current_password" },
    ]);
  }
  const now = new Date(deps.clock.now());
  const passwordHash = await hashPassword(input.new_password);
  const updated = await deps.db.transaction(async (tx) => {
    const row = await updateUser(
      tx,
      principal.tenantId,
      current.id,
      { passwordHash, mustChangePassword: false },
      now,
    );
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
