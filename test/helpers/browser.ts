import { expect } from "bun:test";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";

/** Debian's Chromium; CI installs it. Outside CI, a machine without it skips the browser tests. */
export const CHROMIUM = "/usr/bin/chromium";
export const haveBrowser = existsSync(CHROMIUM) || Boolean(process.env.CI);

/** Screenshots of every view the tests visit; git ignores the folder. */
export const SCREENSHOTS = new URL("../../.tmp/screenshots/", import.meta.url).pathname;

export const SIZES = {
  desktop: { width: 1280, height: 800 },
  phone: { width: 390, height: 844 },
} as const;

/** Playwright gives every launch a fresh, temporary profile (it refuses `--user-data-dir`). */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
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
}

export function newContext(
  browser: Browser,
  size: keyof typeof SIZES = "desktop",
): Promise<BrowserContext> {
  return browser.newContext({
    viewport: SIZES[size],
    acceptDownloads: true,
    ...(size === "phone" ? { isMobile: true, hasTouch: true, deviceScaleFactor: 2 } : {}),
  });
}

const axeSource = readFileSync(
  new URL("../../node_modules/axe-core/axe.min.js", import.meta.url).pathname,
  "utf8",
);

/**
 * Runs axe-core in the page (evaluated through the driver, which the page's CSP does not
 * govern) and fails on any serious or critical violation.
 */
export async function expectAccessible(page: Page, view: string) {
  await page.evaluate(axeSource);
  const violations = (await page.evaluate(async () => {
    const axe = (
      globalThis as unknown as {
        axe: {
          run: (
            context: unknown,
            options: unknown,
          ) => Promise<{
            violations: {
              id: string;
              impact: string;
              help: string;
              nodes: { target: string[] }[];
            }[];
          }>;
        };
      }
    ).axe;
    const page = (globalThis as unknown as { document: unknown }).document;
    const result = await axe.run(page, { resultTypes: ["violations"] });
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      targets: v.nodes.slice(0, 3).map((n) => n.target.join(" ")),
    }));
  })) as { id: string; impact: string; help: string; targets: string[] }[];
  const serious = violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  expect({ view, serious }).toEqual({ view, serious: [] });
}

/**
 * The page itself never scrolls sideways: anything wider than the screen scrolls inside its own
 * box (a table's wrapper, which shows a shadow at the edge with more beyond it).
 */
export async function expectNoSidewaysScroll(page: Page, view: string) {
  const widths = await page.evaluate(() => {
    const root = (
      globalThis as unknown as {
        document: { documentElement: { scrollWidth: number; clientWidth: number } };
      }
    ).document.documentElement;
    return { scroll: root.scrollWidth, client: root.clientWidth };
  });
  expect({ view, overflow: widths.scroll > widths.client ? widths : null }).toEqual({
    view,
    overflow: null,
  });
}

/** A screenshot of the page at each size, then axe at each size. */
export async function captureView(page: Page, name: string) {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const original = page.viewportSize();
  for (const [size, viewport] of Object.entries(SIZES)) {
    await page.setViewportSize(viewport);
    await page.waitForTimeout(150);
    await page.screenshot({ path: join(SCREENSHOTS, `${name}-${size}.png`), fullPage: true });
    await expectAccessible(page, `${name} at ${size}`);
    await expectNoSidewaysScroll(page, `${name} at ${size}`);
  }
  if (original) await page.setViewportSize(original);
}
