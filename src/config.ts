import { type Static, Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { parseRangeList } from "./lib/ip-ranges.ts";

/** Environment settings, validated once at start. Names match the deployment docs. */
export const ConfigSchema = Type.Object({
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3000 }),
  HOST: Type.String({ minLength: 1, default: "0.0.0.0" }),
  DATABASE_URL: Type.Optional(Type.String({ pattern: "^postgres(ql)?://" })),
  DATA_DIR: Type.String({ minLength: 1, default: "./data" }),
  DATABASE_POOL_SIZE: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
  DATABASE_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 60_000, default: 2_000 }),
  DATABASE_STATEMENT_TIMEOUT_MS: Type.Integer({
    minimum: 100,
    maximum: 3_600_000,
    default: 15_000,
  }),
  DATABASE_LONG_STATEMENT_TIMEOUT_MS: Type.Integer({
    minimum: 100,
    maximum: 86_400_000,
    default: 600_000,
  }),
  AUTH_JWT_SECRET: Type.Optional(Type.String()),
  AUTH_JWT_TTL_SECONDS: Type.Integer({ minimum: 1, maximum: 31_536_000, default: 43_200 }),
  BOOTSTRAP_ADMIN_EMAIL: Type.Optional(Type.String({ pattern: "^[^@\\s]+@[^@\\s]+$" })),
  BOOTSTRAP_ADMIN_PASSWORD: Type.Optional(Type.String({ minLength: 12, maxLength: 256 })),
  DEFAULT_TENANT_DOMAIN: Type.String({ pattern: "^[a-z0-9.-]+$", default: "platform" }),
  RATE_LIMIT_DEFAULT_PER_MINUTE: Type.Integer({ minimum: 1, maximum: 10_000, default: 600 }),
  LOGIN_RATE_LIMIT_PER_MINUTE: Type.Integer({ minimum: 1, maximum: 10_000, default: 30 }),
  TRUST_PROXY: Type.Boolean({ default: false }),
  /** Proxies whose `X-Forwarded-For` is believed: loopback only, unless the operator names more. */
  TRUSTED_PROXIES: Type.String({ default: "127.0.0.0/8,::1" }),
  IMPORT_MAX_BYTES: Type.Integer({ minimum: 1, default: 104_857_600 }),
  IMPORT_MAX_ROWS: Type.Integer({ minimum: 1, default: 1_000_000 }),
  WS_ALLOWED_ORIGINS: Type.Optional(Type.String()),
  AGENT_DISCONNECT_GRACE_SECONDS: Type.Integer({ minimum: 0, maximum: 3600, default: 30 }),
  /**
   * Where the other processes sharing the database reach this one, to forward the commands of
   * the campaigns it owns (`http://10.0.0.5:3000`). By default the port it listens on, at HOST
   * (loopback when HOST is a wildcard): right for processes on one host.
   */
  ADVERTISE_URL: Type.Optional(Type.String({ pattern: "^https?://[^/\\s]+$" })),
  /**
   * How often a process sharing the database compares its running campaigns with the others'
   * and asks the busiest for some when it runs fewer than its share; 0 never.
   */
  CAMPAIGN_REBALANCE_SECONDS: Type.Integer({ minimum: 0, maximum: 3600, default: 10 }),
  /**
   * Webhooks may reach loopback, private and link-local addresses, and plain `http` (tests,
   * a receiver on the same host). Off: only `https` to public addresses.
   */
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: Type.Boolean({ default: false }),
  /** How long an event is retried before it is given up. */
  WEBHOOK_RETRY_HOURS: Type.Number({ exclusiveMinimum: 0, maximum: 720, default: 24 }),
  /** An endpoint failing without a success this long is disabled, and its admins alerted. */
  WEBHOOK_DISABLE_AFTER_HOURS: Type.Number({ exclusiveMinimum: 0, maximum: 8760, default: 72 }),
  LOG_LEVEL: Type.Union(
    [Type.Literal("debug"), Type.Literal("info"), Type.Literal("warn"), Type.Literal("error")],
    { default: "info" },
  ),
});

export type Config = Static<typeof ConfigSchema>;

export class ConfigError extends Error {}

const MIN_SECRET_BYTES = 32;

/**
 * Reads the settings this service knows from `env`, fills defaults and validates them.
 * Throws a ConfigError whose message is one line naming the offending setting.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const raw: Record<string, unknown> = {};
  for (const key of Object.keys(ConfigSchema.properties)) {
    const value = env[key];
    if (value !== undefined && value !== "") raw[key] = value;
  }
  const converted = Value.Convert(ConfigSchema, Value.Default(ConfigSchema, raw));
  const firstError = Value.Errors(ConfigSchema, converted).First();
  if (firstError) {
    const setting = firstError.path.replace(/^\//, "") || "configuration";
    const shown =
      setting.includes("SECRET") || setting.includes("PASSWORD")
        ? "(hidden)"
        : JSON.stringify(raw[setting]);
    throw new ConfigError(`invalid setting ${setting}=${shown}: ${firstError.message}`);
  }
  const config = converted as Config;
  if (
    config.AUTH_JWT_SECRET !== undefined &&
    new TextEncoder().encode(config.AUTH_JWT_SECRET).byteLength < MIN_SECRET_BYTES
  ) {
    throw new ConfigError(
      `invalid setting AUTH_JWT_SECRET: must be at least ${MIN_SECRET_BYTES} bytes`,
    );
  }
  try {
    parseRangeList(config.TRUSTED_PROXIES);
  } catch (error) {
    throw new ConfigError(`invalid setting TRUSTED_PROXIES: ${(error as Error).message}`);
  }
  return config;
}
