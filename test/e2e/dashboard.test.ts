import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Browser, chromium } from "playwright-core";
import { resetDatabase } from "../helpers/database.ts";
import {
  SERVER_TEST_TIMEOUT_MS,
  type ServerProcess,
  startServer,
} from "../helpers/server-process.ts";

/** Debian's Chromium; CI installs it. Outside CI, a machine without it skips the browser test. */
const CHROMIUM = "/usr/bin/chromium";
const haveBrowser = existsSync(CHROMIUM) || Boolean(process.env.CI);

const dataDir = mkdtempSync(join(tmpdir(), "dialer-dash-"));
let server: ServerProcess;
let browser: Browser | undefined;

beforeAll(async () => {
  if (!haveBrowser) return;
  await resetDatabase();
  server = await startServer({
    DATA_DIR: dataDir,
    AUTH_JWT_SECRET: "dashboard-secret-that-is-long-enough-to-use",
    BOOTSTRAP_ADMIN_EMAIL: "ops@example.test",
    BOOTSTRAP_ADMIN_PASSWORD: "a configured password",
  });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}, SERVER_TEST_TIMEOUT_MS);

afterAll(async () => {
  await browser?.close();
  server?.process.kill("SIGTERM");
  await server?.process.exited;
  rmSync(dataDir, { recursive: true, force: true });
});

describe("supervisor dashboard", () => {
  test.skipIf(!haveBrowser)(
    "signs in, shows live campaigns and starts one with a click",
    async () => {
      const login = await fetch(`${server.baseUrl}/api/v1/auth/login`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ email: "ops@example.test", password: "a configured password" }),
      });
      const token = ((await login.json()) as { data: { token: string } }).data.token;
      const created = await fetch(`${server.baseUrl}/api/v1/campaigns`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
        body: JSON.stringify({ name: "Browser campaign" }),
      });
      const campaignId = ((await created.json()) as { data: { campaign: { id: string } } }).data
        .campaign.id;

      const page = await (browser as Browser).newPage();
      await page.goto(server.baseUrl);
      await page.fill('input[name="email"]', "ops@example.test");
      await page.fill('input[name="password"]', "a configured password");
      await page.click('button[type="submit"]');
      const row = page.locator(`tr[data-campaign="${campaignId}"]`);
      await row.waitFor({ timeout: 10_000 });
      expect(await row.locator(".status").textContent()).toBe("draft");
      expect(await page.locator("#login").isVisible()).toBe(false);
      await row.locator('button[data-action="start"]').click();
      await row.locator(".status", { hasText: "running" }).waitFor({ timeout: 10_000 });
      expect(await row.locator('button[data-action="start"]').isDisabled()).toBe(true);
      await page.screenshot({ path: join(tmpdir(), "dashboard.png") });
      await page.close();
    },
    SERVER_TEST_TIMEOUT_MS,
  );
});
