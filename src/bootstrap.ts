import type { Database } from "../db/client.ts";
import { getOrCreateSetting } from "../db/queries/service-settings.ts";
import { findTenantByDomain, insertTenant } from "../db/queries/tenants.ts";
import { anyUserWithRole, findUserByEmail, insertUser } from "../db/queries/users.ts";
import type { Config } from "./config.ts";
import { recordAudit } from "./identity/audit.ts";
import { hashPassword } from "./identity/passwords.ts";
import { PLATFORM_DOMAIN } from "./identity/roles.ts";
import type { Logger } from "./logger.ts";

export const DEFAULT_BOOTSTRAP_EMAIL = "admin@platform.local";

/** The configured signing secret, or one generated on first start and kept in the database. */
export async function resolveJwtSecret(db: Database, config: Config, logger: Logger, now: Date) {
  if (config.AUTH_JWT_SECRET) return config.AUTH_JWT_SECRET;
  const candidate = Buffer.from(crypto.getRandomValues(new Uint8Array(48))).toString("base64url");
  const { value, created } = await getOrCreateSetting(db, {
    key: "auth_jwt_secret",
    candidate,
    now,
  });
  logger.warn(
    created
      ? "AUTH_JWT_SECRET is not set: generated a signing secret and stored it in the database"
      : "AUTH_JWT_SECRET is not set: using the signing secret stored in the database",
  );
  return value;
}

const randomPassword = () =>
  Buffer.from(crypto.getRandomValues(new Uint8Array(18))).toString("base64url");

/**
 * Creates the Platform tenant and its first platform admin when no platform admin exists.
 * A generated password is returned so that the caller can print it once.
 */
export async function ensurePlatformAdmin(db: Database, config: Config, now: Date) {
  if (await anyUserWithRole(db, "platform_admin")) return undefined;
  const email = config.BOOTSTRAP_ADMIN_EMAIL ?? DEFAULT_BOOTSTRAP_EMAIL;
  const generated = config.BOOTSTRAP_ADMIN_PASSWORD === undefined;
  const password = config.BOOTSTRAP_ADMIN_PASSWORD ?? randomPassword();
  const passwordHash = await hashPassword(password);
  return db.transaction(async (tx) => {
    const tenant =
      (await findTenantByDomain(tx, PLATFORM_DOMAIN)) ??
      (await insertTenant(tx, {
        id: Bun.randomUUIDv7(),
        name: "Platform",
        domain: PLATFORM_DOMAIN,
        rateLimitPerMinute: config.RATE_LIMIT_DEFAULT_PER_MINUTE,
        createdAt: now,
        updatedAt: now,
      }));
    if (await findUserByEmail(tx, { tenantId: tenant.id, email })) return undefined;
    const user = await insertUser(tx, {
      id: Bun.randomUUIDv7(),
      tenantId: tenant.id,
      email,
      passwordHash,
      role: "platform_admin",
      status: "active",
      mustChangePassword: false,
      createdAt: now,
      updatedAt: now,
    });
    await recordAudit(tx, {
      tenantId: tenant.id,
      actorType: "system",
      action: "user.created",
      targetType: "user",
      targetId: user.id,
      details: { email, role: "platform_admin", bootstrap: true },
      at: now,
    });
    return { email, password: generated ? password : undefined };
  });
}
