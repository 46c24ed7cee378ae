import type { Executor } from "../../../db/client.ts";
import {
  clearLoginFailures,
  findLoginFailures,
  recordLoginFailure,
} from "../../../db/queries/login-failures.ts";
import { ApiError } from "../../errors.ts";

export const LOCK_AFTER_FAILURES = 10;
export const LOCK_MILLISECONDS = 15 * 60 * 1000;

/** What the lockout counts by: a workspace and a lower-cased e-mail, with a user behind it or not. */
export interface AccountKey {
  tenantId: string;
  email: string;
}

export interface LockState {
  /** Whether failures are on record, so that a success has something to clear. */
  counted: boolean;
  /** When the lock in force ends (epoch milliseconds); undefined while none is. */
  lockedUntil: number | undefined;
}

/** The one answer to any attempt on a locked account, whatever password it carried. */
export const accountLocked = (lock: { lockedUntil: number; now: number }) =>
  new ApiError(403, "account_locked", "account temporarily locked", undefined, {
    "retry-after": String(Math.max(1, Math.ceil((lock.lockedUntil - lock.now) / 1000))),
  });

export async function lockStateOf(db: Executor, account: AccountKey, now: number) {
  const failures = await findLoginFailures(db, {
    tenantId: account.tenantId,
    email: account.email,
  });
  const lockedUntil = failures?.lockedUntil?.getTime();
  return {
    counted: failures !== undefined,
    lockedUntil: lockedUntil !== undefined && lockedUntil > now ? lockedUntil : undefined,
  } satisfies LockState;
}

/**
 * Counts a failed attempt in one statement; the tenth in a row locks for fifteen minutes.
 * Undefined when the account was locked already: the attempt counts for nothing.
 */
export const countFailure = (db: Executor, account: AccountKey, now: number) =>
  recordLoginFailure(db, {
    tenantId: account.tenantId,
    email: account.email,
    now: new Date(now),
    lockAfter: LOCK_AFTER_FAILURES,
    lockUntil: new Date(now + LOCK_MILLISECONDS),
  });

/** Clears the failures of an account not locked at `now`; false if there were none to clear. */
export const resetFailures = (db: Executor, account: AccountKey, now: number) =>
  clearLoginFailures(db, { tenantId: account.tenantId, email: account.email, now: new Date(now) });
