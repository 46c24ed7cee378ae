import { describe, expect, test } from "bun:test";
import { ConfigError, loadConfig } from "../src/config.ts";

describe("configuration", () => {
  test("defaults follow the deployment contract", () => {
    expect(loadConfig({})).toMatchObject({
      PORT: 3000,
      HOST: "0.0.0.0",
      DATA_DIR: "./data",
      AUTH_JWT_TTL_SECONDS: 43_200,
      DEFAULT_TENANT_DOMAIN: "platform",
      RATE_LIMIT_DEFAULT_PER_MINUTE: 600,
      IMPORT_MAX_BYTES: 104_857_600,
      IMPORT_MAX_ROWS: 1_000_000,
      CAMPAIGN_REBALANCE_SECONDS: 10,
    });
    expect(loadConfig({}).DATABASE_URL).toBeUndefined();
    expect(loadConfig({}).DATABASE_POOL_SIZE).toBeUndefined();
  });

  test("values are converted from strings", () => {
    const config = loadConfig({
      PORT: "8080",
      AUTH_JWT_TTL_SECONDS: "600",
      DATABASE_URL: "postgres://u@h/db",
      DATABASE_POOL_SIZE: "4",
    });
    expect(config.DATABASE_POOL_SIZE).toBe(4);
    expect(config.PORT).toBe(8080);
    expect(config.AUTH_JWT_TTL_SECONDS).toBe(600);
    expect(config.DATABASE_URL).toBe("postgres://u@h/db");
    expect(loadConfig({ CAMPAIGN_REBALANCE_SECONDS: "0" }).CAMPAIGN_REBALANCE_SECONDS).toBe(0);
  });

  test("trusted proxies are loopback unless named, as addresses or CIDR ranges", () => {
    expect(loadConfig({}).TRUSTED_PROXIES).toBe("127.0.0.0/8,::1");
    expect(loadConfig({}).TRUST_PROXY).toBe(false);
    const named = loadConfig({
      TRUST_PROXY: "true",
      TRUSTED_PROXIES: "10.0.0.0/8, fd00::/8, 192.0.2.1",
    });
    expect(named.TRUSTED_PROXIES).toBe("10.0.0.0/8, fd00::/8, 192.0.2.1");
    expect(() => loadConfig({ TRUSTED_PROXIES: "10.0.0.0/8,proxy.internal" })).toThrow(
      'invalid setting TRUSTED_PROXIES: "proxy.internal" is not an IP address or CIDR range',
    );
  });

  test("a secret under 32 bytes is refused; 32 bytes are accepted", () => {
    expect(() => loadConfig({ AUTH_JWT_SECRET: "x".repeat(31) })).toThrow(ConfigError);
    expect(loadConfig({ AUTH_JWT_SECRET: "x".repeat(32) }).AUTH_JWT_SECRET).toHaveLength(32);
  });

  test("each bad value names its setting", () => {
    for (const [name, value] of [
      ["PORT", "70000"],
      ["RATE_LIMIT_DEFAULT_PER_MINUTE", "0"],
      ["LOG_LEVEL", "loud"],
      ["BOOTSTRAP_ADMIN_PASSWORD", "short"],
      ["DEFAULT_TENANT_DOMAIN", "Not A Domain"],
      ["DATABASE_POOL_SIZE", "0"],
      ["DATABASE_POOL_SIZE", "many"],
      ["TRUSTED_PROXIES", "10.0.0.0/8,proxy.internal"],
      ["TRUSTED_PROXIES", "10.0.0.0/33"],
      ["CAMPAIGN_REBALANCE_SECONDS", "-1"],
      ["CAMPAIGN_REBALANCE_SECONDS", "soon"],
    ]) {
      expect(() => loadConfig({ [name as string]: value })).toThrow(
        new RegExp(`^invalid setting ${name}`),
      );
    }
  });
});
