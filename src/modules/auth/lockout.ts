import type { Executor } from "../../../db/client.ts";
import {
  clearLoginFailures,
  findLoginFailures,
  recordLoginFailure,
} from "../../../db/queries/login-failures.ts";
import { ApiError } from "../../errors.ts";

export const LOCK_AFTER_FAILURES = 10;
export const LOCK_MILLISECONDS = 15 * 60 * 1000;

export const accountLocked = (retryAfterSeconds: number) =>
  new ApiError(403, "account_locked", "account temporarily locked", undefined, {
    "retry-after": String(Math.max(1, retryAfterSeconds)),
  });

/** Throws account_locked while the account's lock is in force. */
export async function assertNotLocked(db: Executor, tenantId: string, email: string, now: number) {
  const failures = await findLoginFailures(db, tenantId, email);
  const lockedUntil = failures?.lockedUntil?.getTime();
  if (lockedUntil !== undefined && lockedUntil > now) {
    throw accountLocked(Math.ceil((lockedUntil - now) / 1000));
  }
  return failures;
}

/** Counts a failed attempt; the tenth in a row locks the account for fifteen minutes. */
export const countFailure = (db: Executor, tenantId: string, email: string, now: number) =>
  recordLoginFailure(db, {
    tenantId,
    email,
    now: new Date(now),
    lockAfter: LOCK_AFTER_FAILURES,
    lockUntil: new Date(now + LOCK_MILLISECONDS),
  });

export const resetFailures = clearLoginFailures;
