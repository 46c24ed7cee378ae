import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page, WebSocketRoute } from "playwright-core";
import { Webhook } from "standardwebhooks";
import { encodeWav } from "../../src/media/wav.ts";
import { tone } from "../helpers/audio.ts";
import {
  captureView,
  haveBrowser,
  launchBrowser,
  newContext,
  SCREENSHOTS,
} from "../helpers/browser.ts";
import { resetDatabase } from "../helpers/database.ts";
import {
  SERVER_TEST_TIMEOUT_MS,
  type ServerProcess,
  startServer,
} from "../helpers/server-process.ts";
import { awakeZone, daytimeZone, instantOfWallTime } from "../helpers/zones.ts";

const dataDir = mkdtempSync(join(tmpdir(), "dialer-console-"));
const FIRST_PASSWORD = "a first password 1";
const OWN_PASSWORD = "my own password 22";
/** The leads' zones, where the all-day window stays open while the tests run. */
const ADA_ZONE = awakeZone(["America/Los_Angeles"]);
const VIP_ZONE = awakeZone(["Europe/London"]);
/** The campaign's screen pop: a CRM the test answers for, so that nothing leaves the machine. */
const CRM_SCREEN_POP = "https://crm.example/contacts?phone={phone}&name={lead.first_name}";
let server: ServerProcess;
let browser: Browser;

/** What the agent desktop asked the browser to open, in order. */
interface Opened {
  opened: { url: string; target: string }[];
}

/** The world the pages work on, set up through the API. */
const world = {
  tenantId: "",
  campaignId: "",
  listId: "",
  nodeKey: "",
  tokens: {} as Record<string, string>,
};

async function apiCall<T = Record<string, unknown>>(
  method: string,
  path: string,
  options: { token?: string; body?: unknown; form?: FormData } = {},
): Promise<{ status: number; body: { data: T } & Record<string, unknown> }> {
  const response = await fetch(`${server.baseUrl}/api/v1${path}`, {
    method,
    headers: {
      ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
      ...(options.body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: options.form ?? (options.body === undefined ? undefined : JSON.stringify(options.body)),
  });
  return { status: response.status, body: (await response.json()) as { data: T } };
}

const node = (path: string, body: unknown) =>
  apiCall<Record<string, unknown>>("POST", `/nodes${path}`, { token: world.nodeKey, body });

async function signInAs(email: string, password: string, domain = "acme.test"): Promise<string> {
  const login = await apiCall<{ token: string }>("POST", "/auth/login", {
    body: { email, password, tenant_domain: domain },
  });
  expect(login.status).toBe(200);
  return login.body.data.token;
}

/** A user of the workspace whose first password was already changed through the API. */
async function readyUser(
  email: string,
  role: string,
  workspace = { id: world.tenantId, domain: "acme.test" },
): Promise<string> {
  const created = await apiCall("POST", `/users?tenant_id=${workspace.id}`, {
    token: world.tokens.platform,
    body: { email, password: FIRST_PASSWORD, role },
  });
  expect(created.status).toBe(201);
  const token = await signInAs(email, FIRST_PASSWORD, workspace.domain);
  const changed = await apiCall("POST", "/auth/me/password", {
    token,
    body: { current_password: FIRST_PASSWORD, new_password: OWN_PASSWORD },
  });
  expect(changed.status).toBe(200);
  return token;
}

async function signInPage(page: Page, email: string, password: string, domain = "acme.test") {
  await page.getByLabel("E-mail").fill(email);
  await page.getByLabel("Password", { exact: true }).fill(password);
  await page.getByLabel("Workspace").fill(domain);
  await page.getByRole("button", { name: "Sign in" }).click();
}

beforeAll(async () => {
  if (!haveBrowser) return;
  await resetDatabase();
  server = await startServer({
    DATA_DIR: dataDir,
    AUTH_JWT_SECRET: "console-secret-that-is-long-enough-to-use",
    BOOTSTRAP_ADMIN_EMAIL: "root@example.test",
    BOOTSTRAP_ADMIN_PASSWORD: "a configured password",
    // The webhooks' receiver is the test, on loopback.
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true",
  });
  browser = await launchBrowser();

  const root = await apiCall<{ token: string }>("POST", "/auth/login", {
    body: { email: "root@example.test", password: "a configured password" },
  });
  world.tokens.platform = root.body.data.token;
  const tenant = await apiCall<{ tenant: { id: string } }>("POST", "/tenants", {
    token: world.tokens.platform,
    body: { name: "Acme", domain: "acme.test" },
  });
  world.tenantId = tenant.body.data.tenant.id;
  world.tokens.admin = await readyUser("admin@acme.test", "admin");
  world.tokens.supervisor = await readyUser("super@acme.test", "supervisor");
  const agent = await apiCall("POST", `/users?tenant_id=${world.tenantId}`, {
    token: world.tokens.platform,
    body: { email: "agent@acme.test", password: FIRST_PASSWORD, role: "agent" },
  });
  expect(agent.status).toBe(201);

  // The dialing tests call at any hour: no profile's calling hours, only the campaign's window.
  const campaign = await apiCall<{ campaign: { id: string } }>("POST", "/campaigns", {
    token: world.tokens.admin,
    body: {
      name: "Spring renewals",
      calling_window: { start: "00:00", end: "23:59" },
      regulatory_profile: "none",
      screen_pop_url: CRM_SCREEN_POP,
    },
  });
  world.campaignId = campaign.body.data.campaign.id;
  const list = await apiCall<{ lead_list: { id: string } }>(
    "POST",
    `/campaigns/${world.campaignId}/lead-lists`,
    { token: world.tokens.admin, body: { name: "November", caller_id: "+14155550100" } },
  );
  world.listId = list.body.data.lead_list.id;
  const form = new FormData();
  form.append("phone_column", "phone");
  form.append("timezone_column", "tz");
  form.append(
    "file",
    new Blob([`phone,tz,first_name,plan\n+14155552671,${ADA_ZONE},Ada,Gold\n`], {
      type: "text/csv",
    }),
    "leads.csv",
  );
  const imported = await apiCall(
    "POST",
    `/campaigns/${world.campaignId}/lead-lists/${world.listId}/import`,
    { token: world.tokens.admin, form },
  );
  expect(imported.status).toBe(200);
  const started = await apiCall("POST", `/campaigns/${world.campaignId}/status`, {
    token: world.tokens.admin,
    body: { action: "start" },
  });
  expect(started.status).toBe(200);
  const edge = await apiCall<{ key: string }>("POST", "/edge-nodes", {
    token: world.tokens.admin,
    body: { name: "edge-1", max_concurrent_calls: 10 },
  });
  world.nodeKey = edge.body.data.key;
}, SERVER_TEST_TIMEOUT_MS);

afterAll(async () => {
  await browser?.close();
  server?.process.kill("SIGTERM");
  await server?.process.exited;
  rmSync(dataDir, { recursive: true, force: true });
});

describe("console", () => {
  test.skipIf(!haveBrowser)(
    "an agent takes a call while a supervisor watches and pauses the campaign",
    async () => {
      const supervisorContext = await newContext(browser);
      const wallboard = await supervisorContext.newPage();
      await wallboard.goto(server.baseUrl);
      await expect(wallboard.getByRole("heading", { name: "Sign in" }).isVisible()).resolves.toBe(
        true,
      );
      await signInPage(wallboard, "super@acme.test", OWN_PASSWORD);
      const row = wallboard.locator(`tr[data-campaign="${world.campaignId}"]`);
      await row.locator("[data-status]", { hasText: "running" }).waitFor({ timeout: 10_000 });

      const agentContext = await newContext(browser);
      // The tabs the desktop opens (the CRM's, when a call connects), recorded rather than
      // opened: nothing leaves the machine, and the desktop stays the page in front.
      await agentContext.addInitScript(() => {
        const page = globalThis as unknown as Opened & {
          open: (url?: unknown, target?: unknown) => null;
        };
        page.opened = [];
        page.open = (url, target) => {
          page.opened.push({ url: String(url), target: String(target) });
          return null;
        };
      });
      const desk = await agentContext.newPage();
      // The agent's sockets pass through the test, which can drop them.
      const sockets: WebSocketRoute[] = [];
      await desk.routeWebSocket(/\/ws\/agent/, (socket) => {
        socket.connectToServer();
        sockets.push(socket);
      });
      await desk.goto(`${server.baseUrl}/agent`);
      await signInPage(desk, "agent@acme.test", FIRST_PASSWORD);
      // A mistyped current password is said next to its field; the session goes on.
      await desk.getByLabel("Current password").fill("not the first password");
      await desk.getByLabel("New password", { exact: true }).fill(OWN_PASSWORD);
      await desk.getByLabel("Repeat new password").fill(OWN_PASSWORD);
      await desk.getByRole("button", { name: "Change password" }).click();
      await desk.getByText("is not the current password").first().waitFor({ timeout: 10_000 });
      expect(await desk.getByLabel("Current password").getAttribute("aria-invalid")).toBe("true");
      await desk.getByRole("heading", { name: "Choose a new password" }).waitFor();
      await desk.getByLabel("Current password").fill(FIRST_PASSWORD);
      await desk.getByLabel("New password", { exact: true }).fill(OWN_PASSWORD);
      await desk.getByLabel("Repeat new password").fill(OWN_PASSWORD);
      await desk.getByRole("button", { name: "Change password" }).click();
      const state = desk.getByRole("status", { name: "Agent state" });
      await state.waitFor({ timeout: 10_000 });
      await captureView(desk, "sign-in-done-agent-desktop-offline");
      await desk.getByLabel("Campaign").selectOption(world.campaignId);
      await desk.getByRole("button", { name: /^Ready/ }).click();
      await state.getByText("ready").waitFor({ timeout: 10_000 });

      // The agent stays signed in across a reload.
      await desk.reload();
      await desk
        .getByRole("status", { name: "Agent state" })
        .getByText("ready")
        .waitFor({ timeout: 10_000 });

      await wallboard
        .locator('tr[data-agent="agent@acme.test"]', { hasText: "ready" })
        .waitFor({ timeout: 10_000 });

      // A dropped socket: the page says so, reconnects by itself, and the agent is still ready.
      await desk.getByText("Connected").waitFor({ timeout: 10_000 });
      await sockets.at(-1)?.close({ code: 1001 });
      await desk.getByText(/reconnecting/).waitFor({ timeout: 10_000 });
      await desk.getByText("Connected").waitFor({ timeout: 15_000 });
      await state.getByText("ready").waitFor({ timeout: 10_000 });

      // A simulated edge node places the call.
      expect((await node("/heartbeat", { active_calls: 0 })).status).toBe(200);
      const claim = await node("/jobs/claim", { max: 1, wait_ms: 5000 });
      const jobs = (claim.body.data as { jobs: { call_id: string }[] }).jobs;
      expect(jobs.length).toBe(1);
      const callId = (jobs[0] as { call_id: string }).call_id;
      const at = () => new Date().toISOString();
      await node(`/calls/${callId}/events`, { type: "ringing", at: at() });
      const answered = await node(`/calls/${callId}/events`, { type: "answered", at: at() });
      expect((answered.body.data as { call: { action: string } }).call.action).toBe("bridge");

      const call = desk.getByRole("region", { name: "Current call" });
      await call.waitFor({ timeout: 10_000 });
      await expect(call.getByText("+14155552671").isVisible()).resolves.toBe(true);
      await expect(
        call.locator('[data-field="name"]', { hasText: "Ada" }).isVisible(),
      ).resolves.toBe(true);
      await expect(call.getByText(ADA_ZONE).isVisible()).resolves.toBe(true);
      await call
        .getByText("None: this is the first call to this lead.")
        .waitFor({ timeout: 10_000 });
      const crmUrl = "https://crm.example/contacts?phone=%2B14155552671&name=Ada";
      await desk.waitForFunction(() => (globalThis as unknown as Opened).opened.length > 0, null, {
        timeout: 10_000,
      });
      expect(await desk.evaluate(() => (globalThis as unknown as Opened).opened)).toEqual([
        { url: crmUrl, target: "_blank" },
      ]);
      const crmLink = call.getByRole("link", { name: "Open the lead in the CRM" });
      expect(await crmLink.getAttribute("href")).toBe(crmUrl);
      await wallboard
        .locator('tr[data-agent="agent@acme.test"]', { hasText: "on call" })
        .waitFor({ timeout: 10_000 });
      await captureView(desk, "agent-desktop-on-call");
      await captureView(wallboard, "wallboard");

      // A reload mid-call keeps the lead on the page.
      await desk.reload();
      const reloaded = desk.getByRole("region", { name: "Current call" });
      await reloaded.waitFor({ timeout: 10_000 });
      await expect(reloaded.getByText("+14155552671").isVisible()).resolves.toBe(true);
      await expect(
        reloaded.locator('[data-field="name"]', { hasText: "Ada" }).isVisible(),
      ).resolves.toBe(true);
      await expect(reloaded.getByText(ADA_ZONE).isVisible()).resolves.toBe(true);

      // A pause during the call waits for its end and its disposition, for the reason chosen.
      await desk.getByLabel("Pause reason").selectOption("lunch");
      await desk.locator("h1").click();
      await desk.keyboard.press("p");
      await desk.getByText(/Pausing after this call \(Lunch\)/).waitFor({ timeout: 10_000 });
      await state.getByText("on call").waitFor({ timeout: 10_000 });
      await captureView(desk, "agent-desktop-pause-after-call");

      const ended = await node(`/calls/${callId}/events`, {
        type: "ended",
        at: at(),
        hangup_cause: "NORMAL_CLEARING",
      });
      expect(ended.status).toBe(200);
      await desk.getByRole("heading", { name: "Wrap-up" }).waitFor({ timeout: 10_000 });
      // A callback in the past is refused at its field, in words.
      await desk.getByLabel("Callback time").fill("2020-01-15T10:30");
      await desk.getByRole("button", { name: /^Callback/ }).click();
      await desk.getByText("must be a time to come").first().waitFor({ timeout: 10_000 });
      expect(await desk.getByLabel("Callback time").getAttribute("aria-invalid")).toBe("true");
      await desk.getByLabel("Callback time").fill("2030-01-15T10:30");
      // Put right, the message goes.
      expect(await desk.getByText("must be a time to come").count()).toBe(0);
      await desk.getByLabel("Notes").fill("Call back about the renewal; prefers mornings.");
      await captureView(desk, "agent-desktop-wrap-up");
      await desk.getByRole("button", { name: /^Callback/ }).click();
      await state.getByText("paused").waitFor({ timeout: 10_000 });
      await state.getByText("(Lunch)").waitFor({ timeout: 10_000 });
      await desk.getByRole("heading", { name: "Today" }).waitFor({ timeout: 10_000 });
      await desk.locator('[data-figure="calls"]', { hasText: "1" }).waitFor({ timeout: 10_000 });
      const callbacks = desk.getByRole("region", { name: "Your callbacks" });
      await callbacks.getByText("Call back about the renewal; prefers mornings.").waitFor({
        timeout: 10_000,
      });
      await captureView(desk, "agent-desktop-callbacks");
      const records = await apiCall<{ items: { call_id: string; notes: string | null }[] }>(
        "GET",
        "/cdrs",
        { token: world.tokens.admin },
      );
      expect(records.body.data.items.find((cdr) => cdr.call_id === callId)?.notes).toBe(
        "Call back about the renewal; prefers mornings.",
      );

      // The keyboard alone: r makes the agent ready again, p pauses.
      await desk.locator("h1").click();
      await desk.keyboard.press("r");
      await state.getByText("ready").waitFor({ timeout: 10_000 });
      await desk.keyboard.press("p");
      await state.getByText("paused").waitFor({ timeout: 10_000 });
      await desk.keyboard.press("r");
      await state.getByText("ready").waitFor({ timeout: 10_000 });

      const leads = await apiCall<{ items: { state: string; next_attempt_at: string }[] }>(
        "GET",
        `/campaigns/${world.campaignId}/lead-lists/${world.listId}/leads`,
        { token: world.tokens.admin },
      );
      expect(leads.body.data.items[0]?.state).toBe("Callback");
      // 10:30 where the lead is (in Los Angeles, 18:30 UTC).
      expect(leads.body.data.items[0]?.next_attempt_at).toBe(
        instantOfWallTime("2030-01-15T10:30", ADA_ZONE),
      );

      await row.getByRole("button", { name: "Pause Spring renewals" }).click();
      await row.locator("[data-status]", { hasText: "paused" }).waitFor({ timeout: 10_000 });
      // The agent is told, and by whom.
      await desk
        .getByRole("alert")
        .getByText(/Your campaign was paused by super@acme\.test/)
        .waitFor({ timeout: 10_000 });
      await captureView(desk, "agent-desktop-campaign-paused");
      expect(await row.getByRole("button", { name: "Pause Spring renewals" }).isDisabled()).toBe(
        true,
      );
      expect(await row.getByRole("button", { name: "Start Spring renewals" }).isDisabled()).toBe(
        false,
      );
      // The keyboard's place is kept: the focus went from Pause, now disabled, to Start.
      await wallboard.waitForFunction(
        () =>
          (
            globalThis as unknown as {
              document: { activeElement: { getAttribute(name: string): string | null } | null };
            }
          ).document.activeElement?.getAttribute("aria-label") === "Start Spring renewals",
        null,
        { timeout: 5_000 },
      );

      // The answer to Start is held while an admin pauses the campaign again: the socket tells
      // both changes, and the row keeps the later one when the answer lands.
      await wallboard.route(`**/api/v1/campaigns/${world.campaignId}/status`, async (route) => {
        const response = await route.fetch();
        await row.locator("[data-status]", { hasText: "running" }).waitFor({ timeout: 10_000 });
        await apiCall("POST", `/campaigns/${world.campaignId}/status`, {
          token: world.tokens.admin,
          body: { action: "pause" },
        });
        await row.locator("[data-status]", { hasText: "paused" }).waitFor({ timeout: 10_000 });
        await route.fulfill({ response });
      });
      await row.getByRole("button", { name: "Start Spring renewals" }).click();
      await Bun.sleep(300); // the held answer is asked for
      await wallboard.unrouteAll({ behavior: "wait" });
      await Bun.sleep(300); // the answer rendered
      expect(await row.locator("[data-status]").textContent()).toContain("paused");

      await supervisorContext.close();
      await agentContext.close();
    },
    SERVER_TEST_TIMEOUT_MS * 2,
  );
});

describe("preview dialing", () => {
  test.skipIf(!haveBrowser)(
    "the agent is offered the lead, after a reload too, dials it, and has the call when it connects",
    async () => {
      const campaign = await apiCall<{ campaign: { id: string } }>("POST", "/campaigns", {
        token: world.tokens.admin,
        body: {
          name: "Preview callbacks",
          dial_mode: "preview",
          calling_window: { start: "00:00", end: "23:59" },
          regulatory_profile: "none",
        },
      });
      const campaignId = campaign.body.data.campaign.id;
      const list = await apiCall<{ lead_list: { id: string } }>(
        "POST",
        `/campaigns/${campaignId}/lead-lists`,
        { token: world.tokens.admin, body: { name: "VIP", caller_id: "+14155550100" } },
      );
      const form = new FormData();
      form.append("phone_column", "phone");
      form.append("timezone_column", "tz");
      form.append(
        "file",
        new Blob([`phone,tz,name,company\n+442079460123,${VIP_ZONE},Grace Hopper,Initech\n`], {
          type: "text/csv",
        }),
        "vip.csv",
      );
      await apiCall(
        "POST",
        `/campaigns/${campaignId}/lead-lists/${list.body.data.lead_list.id}/import`,
        {
          token: world.tokens.admin,
          form,
        },
      );
      await apiCall("POST", `/campaigns/${campaignId}/status`, {
        token: world.tokens.admin,
        body: { action: "start" },
      });

      const context = await newContext(browser, "phone");
      const desk = await context.newPage();
      // The socket's first messages are held until the campaign is picked, as on a slow link:
      // the agent's state from the first test (paused on its campaign) must not undo the pick.
      let releaseSocket = () => {};
      const socketHeld = new Promise<void>((resolve) => {
        releaseSocket = resolve;
      });
      await desk.routeWebSocket(/\/ws\/agent/, (page) => {
        const upstream = page.connectToServer();
        upstream.onMessage((message) => void socketHeld.then(() => page.send(message)));
      });
      await desk.goto(`${server.baseUrl}/agent`);
      await signInPage(desk, "agent@acme.test", OWN_PASSWORD);
      const state = desk.getByRole("status", { name: "Agent state" });
      await state.waitFor({ timeout: 10_000 });
      await desk.getByLabel("Campaign").selectOption(campaignId);
      releaseSocket();
      await desk.getByText("Connected").waitFor({ timeout: 10_000 });
      // The agent may still be ready on the first test's campaign: wait for this change itself.
      const becameReady = desk.waitForResponse(
        (response) => response.url().endsWith("/agents/me/state") && response.status() === 200,
      );
      await desk.getByRole("button", { name: /^Ready/ }).click();
      await becameReady;
      await state.getByText("ready").waitFor({ timeout: 10_000 });
      await state.getByText("Preview callbacks").waitFor({ timeout: 10_000 });

      // The node's heartbeat makes it a place to dial from; its claim only offers the lead.
      await node("/heartbeat", { active_calls: 0 });
      const claim = await node("/jobs/claim", { max: 5, wait_ms: 1000 });
      expect((claim.body.data as { jobs: unknown[] }).jobs).toEqual([]);
      const offered = desk.getByRole("heading", { name: /^Preview/ });
      await offered.waitFor({ timeout: 10_000 });
      await expect(desk.getByText("Initech").isVisible()).resolves.toBe(true);
      // The name comes whole from its column: it is the headline, not listed again below it.
      const card = desk.getByRole("region", { name: /^Preview/ });
      expect(await card.locator("dl.details dt").allTextContents()).toEqual([
        "Name",
        "Number",
        "Company",
        "Lead's local time",
        "Attempt",
      ]);
      await captureView(desk, "agent-desktop-preview");
      // A reload while the lead is offered offers it again, from the agent's own view.
      await desk.reload();
      await offered.waitFor({ timeout: 10_000 });
      await expect(desk.getByText("Initech").isVisible()).resolves.toBe(true);
      await desk.getByRole("button", { name: /^Dial/ }).click();
      await desk.getByRole("heading", { name: /^Dialling/ }).waitFor({ timeout: 10_000 });
      await captureView(desk, "agent-desktop-dialling");
      const commands = await node("/commands", {});
      const dial = (
        commands.body.data as { commands: { id: string; type: string; call_id: string }[] }
      ).commands.find((command) => command.type === "dial");
      expect(dial).toBeDefined();
      const callId = (dial as { call_id: string }).call_id;
      await node("/commands", { ack: [(dial as { id: string }).id] });
      const at = () => new Date().toISOString();
      await node(`/calls/${callId}/events`, { type: "ringing", at: at() });
      await node(`/calls/${callId}/events`, { type: "answered", at: at() });
      const call = desk.getByRole("region", { name: "Current call" });
      await call.waitFor({ timeout: 10_000 });
      await expect(call.getByText(VIP_ZONE).isVisible()).resolves.toBe(true);
      await node(`/calls/${callId}/events`, {
        type: "ended",
        at: at(),
        hangup_cause: "NORMAL_CLEARING",
      });
      await desk.getByRole("heading", { name: "Wrap-up" }).waitFor({ timeout: 10_000 });
      await desk.locator("h1").click();
      await desk.keyboard.press("1");
      await state.getByText("ready").waitFor({ timeout: 10_000 });
      await desk.keyboard.press("p");
      await state.getByText("paused").waitFor({ timeout: 10_000 });
      await context.close();
    },
    SERVER_TEST_TIMEOUT_MS,
  );
});

describe("console for admins", () => {
  test.skipIf(!haveBrowser)(
    "an admin imports a file with bad rows, downloads them, and creates an API key seen once",
    async () => {
      const context = await newContext(browser);
      const page = await context.newPage();
      page.on("pageerror", (error) => console.log("page error", error));
      await page.goto(`${server.baseUrl}/campaigns/${world.campaignId}/lists/${world.listId}`);
      await signInPage(page, "admin@acme.test", OWN_PASSWORD);
      await page.getByRole("heading", { name: "Import leads" }).waitFor({ timeout: 10_000 });
      const csv = [
        "Mobile;Zone;Name",
        "+14155550101;America/New_York;Grace",
        "not a number;America/New_York;Bad phone",
        "+14155550102;EST;Bad zone",
        "+14155550103;Europe/Paris;Linus",
      ].join("\n");
      await page.getByLabel("CSV file").setInputFiles({
        name: "leads.csv",
        mimeType: "text/csv",
        buffer: Buffer.from(csv),
      });
      await page
        .getByRole("region", { name: "Preview of the first rows" })
        .getByText("Grace")
        .waitFor();
      expect(await page.getByLabel("Phone column").inputValue()).toBe("Mobile");
      expect(await page.getByLabel("Time zone column").inputValue()).toBe("Zone");
      await page.getByLabel("Default region").fill("US");
      await page.getByRole("button", { name: "Import", exact: true }).click();
      const report = page.getByRole("region", { name: "Import report" });
      await report.waitFor({ timeout: 10_000 });
      expect(await report.locator("[data-imported]").textContent()).toBe("2");
      expect(await report.locator("[data-rejected]").textContent()).toBe("2");
      expect(await page.getByRole("progressbar").getAttribute("value")).toBe("1");
      await expect(report.getByText("invalid phone").isVisible()).resolves.toBe(true);
      await captureView(page, "lead-list-import");
      const [download] = await Promise.all([
        page.waitForEvent("download"),
        report.getByRole("link", { name: "Download rejected rows" }).click(),
      ]);
      const rejected = readFileSync((await download.path()) as string, "utf8");
      expect(rejected).toContain("Bad phone");
      expect(rejected).toContain("invalid_timezone");

      // Every setting the API would refuse is said beside its field on the first submit,
      // before anything is sent: a blank name, a number out of range, a reversed window.
      await page.goto(`${server.baseUrl}/campaigns/new`);
      const sent: string[] = [];
      page.on("request", (request) => {
        if (request.method() === "POST" && request.url().endsWith("/api/v1/campaigns"))
          sent.push(request.url());
      });
      await page.getByLabel("Max attempts").fill("99");
      await page.getByLabel("Calling window start").fill("21:00");
      await page.getByLabel("Calling window end").fill("08:00");
      await page.getByRole("button", { name: "Create campaign" }).click();
      const errorOf = (label: string) =>
        page
          .locator(".field", { has: page.getByLabel(label, { exact: true }) })
          .locator(".field-error");
      await errorOf("Name").getByText("is required").waitFor({ timeout: 10_000 });
      await errorOf("Max attempts").getByText("must be at most 50").waitFor();
      await errorOf("Calling window start")
        .getByText("must be before calling_window.end")
        .waitFor();
      expect(sent).toEqual([]);
      await captureView(page, "campaign-new-invalid");
      // Leaving a field put right takes its message away at once.
      await page.getByLabel("Name").fill("Winter");
      await page.getByLabel("Max attempts").focus();
      await errorOf("Name").waitFor({ state: "detached" });
      await page.getByLabel("Calling window start").fill("08:00");
      await page.getByLabel("Calling window end").fill("21:00");
      await page.getByLabel("Max attempts").fill("5");
      await page.getByRole("button", { name: "Create campaign" }).click();
      await page.getByRole("heading", { name: "Winter" }).waitFor({ timeout: 10_000 });
      await page.getByRole("heading", { name: "Status history" }).waitFor();
      await captureView(page, "campaign-detail");
      const [evidence] = await Promise.all([
        page.waitForEvent("download"),
        page.getByRole("button", { name: "Download the counted calls (CSV)" }).click(),
      ]);
      expect(evidence.suggestedFilename()).toMatch(/^compliance-.*\.csv$/);

      await page.goto(`${server.baseUrl}/admin/api-keys`);
      await page.getByLabel("Key name").fill("CRM sync");
      await page.getByLabel("campaigns: read").check();
      await page.getByLabel("leads: write").check();
      await page.getByRole("button", { name: "Create key" }).click();
      const secret = page.locator("[data-secret]");
      await secret.waitFor({ timeout: 10_000 });
      const key = (await secret.textContent()) ?? "";
      expect(key.startsWith("svc_key_")).toBe(true);
      await expect(page.getByRole("button", { name: "Copy" }).isVisible()).resolves.toBe(true);
      await captureView(page, "admin-api-keys");
      const me = await apiCall<{ api_key: { scopes: Record<string, string> } }>("GET", "/auth/me", {
        token: key,
      });
      expect(me.body.data.api_key.scopes).toEqual({
        campaigns: "read",
        leads: "write",
        cdrs: "none",
        users: "none",
      });
      await page.reload();
      await page.getByRole("row", { name: /CRM sync/ }).waitFor({ timeout: 10_000 });
      expect(await page.locator("[data-secret]").count()).toBe(0);
      expect(await page.content()).not.toContain(key);

      // Call records: filtered by outcome, exported as CSV (the answered call is the first test's).
      await page.goto(`${server.baseUrl}/cdrs`);
      await page.getByLabel("Outcome").selectOption("answered");
      await page.getByRole("button", { name: "Apply" }).click();
      const answered = page.getByRole("row", { name: /\+14155552671/ });
      await answered.waitFor({ timeout: 10_000 });
      // The rules the call was placed under: the campaign's own settings alone.
      await answered.getByText("none 1970-01-01").waitFor();
      const [exported] = await Promise.all([
        page.waitForEvent("download"),
        page.getByRole("button", { name: "Export CSV" }).click(),
      ]);
      expect(readFileSync((await exported.path()) as string, "utf8")).toContain("14155552671");

      // Do not call: add, search, remove.
      await page.goto(`${server.baseUrl}/dnc`);
      await page.getByLabel("Number to add").fill("+1 415 555 0199");
      await page.getByRole("button", { name: "Add", exact: true }).click();
      await page.getByRole("row", { name: /\+14155550199/ }).waitFor({ timeout: 10_000 });
      await page.getByLabel("Search number").fill("+14155550199");
      await page.getByRole("button", { name: "Search" }).click();
      await page.getByRole("button", { name: "Remove +14155550199" }).click();
      await page.getByText("0–0 of 0").waitFor({ timeout: 10_000 });

      // Users: a new agent, then disabled.
      await page.goto(`${server.baseUrl}/admin/users`);
      await page.getByLabel("E-mail").fill("second@acme.test");
      await page.getByLabel("First password").fill(FIRST_PASSWORD);
      await page.getByRole("button", { name: "Create user" }).click();
      await page.getByRole("button", { name: "Disable second@acme.test" }).click();
      await page
        .getByRole("button", { name: "Enable second@acme.test" })
        .waitFor({ timeout: 10_000 });

      // Edge nodes: the key is shown once.
      await page.goto(`${server.baseUrl}/admin/edge-nodes`);
      await page.getByLabel("Node name").fill("edge-2");
      await page.getByRole("button", { name: "Register node" }).click();
      const nodeKey = (await page.locator("[data-secret]").textContent()) ?? "";
      expect(nodeKey.startsWith("svc_node_")).toBe(true);

      for (const [path, name, heading] of [
        ["/campaigns", "campaigns", "Campaigns"],
        ["/cdrs", "call-records", "Call records"],
        ["/dnc", "do-not-call", "Do not call"],
        ["/admin/users", "admin-users", "Users"],
        ["/admin/edge-nodes", "admin-edge-nodes", "Edge nodes"],
        ["/admin/settings", "admin-settings", "Workspace settings"],
      ] as const) {
        await page.goto(`${server.baseUrl}${path}`);
        await page
          .getByRole("heading", { name: heading, exact: true })
          .waitFor({ timeout: 10_000 });
        await page.waitForLoadState("networkidle");
        await captureView(page, name);
      }
      await page.getByRole("button", { name: "Sign out" }).click();
      await page.getByRole("heading", { name: "Sign in" }).waitFor({ timeout: 10_000 });
      // An empty sign-in names what is missing, in sentences.
      await page.getByRole("button", { name: "Sign in" }).click();
      await errorOf("E-mail").getByText("is required").waitFor({ timeout: 10_000 });
      await errorOf("Password").getByText("is required").waitFor();
      await page.getByRole("alert").getByText("Email is required; Password is required").waitFor();
      await page.getByLabel("E-mail").fill("admin@acme.test");
      await page.getByLabel("Password", { exact: true }).fill("not the password");
      await page.getByLabel("Workspace").fill("acme.test");
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.getByRole("alert").getByText("invalid credentials").waitFor({ timeout: 10_000 });
      await captureView(page, "sign-in-error");
      await context.close();
    },
    SERVER_TEST_TIMEOUT_MS * 2,
  );

  test.skipIf(!haveBrowser)(
    "a platform admin picks a workspace for every view",
    async () => {
      const context = await newContext(browser);
      const page = await context.newPage();
      await page.goto(server.baseUrl);
      // Signed in with the keyboard alone.
      await page.getByLabel("E-mail").focus();
      await page.keyboard.type("root@example.test");
      await page.keyboard.press("Tab");
      await page.keyboard.type("a configured password");
      await page.keyboard.press("Enter");
      await page.getByRole("heading", { name: "Workspaces" }).waitFor({ timeout: 10_000 });
      await page.getByRole("row", { name: /Acme/ }).waitFor({ timeout: 10_000 });
      await captureView(page, "tenants");
      await page.getByRole("button", { name: "Open Acme" }).click();
      const row = page.locator(`tr[data-campaign="${world.campaignId}"]`);
      await row.waitFor({ timeout: 10_000 });
      expect(await page.getByLabel("Workspace").inputValue()).toBe(world.tenantId);
      await page.goto(`${server.baseUrl}/campaigns`);
      await page.getByRole("link", { name: "Spring renewals" }).waitFor({ timeout: 10_000 });
      await context.close();
    },
    SERVER_TEST_TIMEOUT_MS,
  );
});

describe("regulatory rules in the console", () => {
  test.skipIf(!haveBrowser)(
    "a supervisor changes a campaign's profile, sees its window, the governor and a lead's eligibility; an admin chooses none, the workspace's default and imports without zones",
    async () => {
      // A campaign under the US rules, pacing two calls per ready agent: with no live answer
      // yet its abandon budget is nil, so the governor holds it once an agent is ready.
      const created = await apiCall<{ campaign: { id: string; regulatory_profile: string } }>(
        "POST",
        "/campaigns",
        {
          token: world.tokens.admin,
          body: {
            name: "Rules check",
            dial_ratio: 2,
            calling_window: { start: "00:00", end: "23:59" },
          },
        },
      );
      const campaignId = created.body.data.campaign.id;
      expect(created.body.data.campaign.regulatory_profile).toBe("us");
      const list = await apiCall<{ lead_list: { id: string } }>(
        "POST",
        `/campaigns/${campaignId}/lead-lists`,
        { token: world.tokens.admin, body: { name: "Rules leads", caller_id: "+14155550100" } },
      );
      const listId = list.body.data.lead_list.id;
      const form = new FormData();
      form.append("phone_column", "phone");
      form.append("file", new Blob(["phone,name\n+12125550123,Nina\n"]), "rules.csv");
      const imported = await apiCall(
        "POST",
        `/campaigns/${campaignId}/lead-lists/${listId}/import`,
        { token: world.tokens.admin, form },
      );
      expect(imported.status).toBe(200);
      // On the do-not-call list: never dialable, whatever the hour.
      await apiCall("POST", "/dnc", { token: world.tokens.admin, body: { phone: "+12125550123" } });
      await apiCall("POST", `/campaigns/${campaignId}/status`, {
        token: world.tokens.admin,
        body: { action: "start" },
      });
      const agent = await readyUser("rules-agent@acme.test", "agent");
      const ready = await apiCall("POST", "/agents/me/state", {
        token: agent,
        body: { state: "ready", campaign_id: campaignId },
      });
      expect(ready.status).toBe(200);

      const supervisorContext = await newContext(browser);
      const page = await supervisorContext.newPage();
      await page.goto(`${server.baseUrl}/campaigns/${campaignId}`);
      await signInPage(page, "super@acme.test", OWN_PASSWORD);
      await page.getByRole("heading", { name: "Rules check" }).waitFor({ timeout: 10_000 });
      const profile = page.getByLabel("Regulatory profile");
      expect(await profile.isEnabled()).toBe(true);
      expect(await page.getByLabel("Name").isDisabled()).toBe(true);
      expect(await profile.locator("option").allTextContents()).toEqual([
        "United States (TSR/TCPA)",
        "United Kingdom (Ofcom)",
        "Canada (CRTC)",
      ]);
      const window = page.locator("[data-effective-window]");
      await window.getByText("00:00–23:59 every day").waitFor();
      await window.getByText("08:00–21:00 every day").waitFor();
      await window.getByText(/Narrower than the campaign's window on every day/).waitFor();
      const governor = page.locator("[data-governor]");
      await governor.waitFor({ timeout: 10_000 });
      expect(await governor.textContent()).toMatch(
        /^Held by the abandon-rate governor: the abandon message the profile requires is missing, so no call may be abandoned; a reserved agent for each call until one is recorded$/,
      );
      await captureView(page, "campaign-detail-supervisor");

      await profile.selectOption("ca");
      await page.getByRole("button", { name: "Save rules and pacing" }).click();
      await window.getByText("Mon–Fri 09:00–21:30, Sat–Sun 10:00–18:00").waitFor({
        timeout: 10_000,
      });
      await page.getByRole("status").getByText("Saved").waitFor();
      const changed = await apiCall<{ campaign: { regulatory_profile: string; name: string } }>(
        "GET",
        `/campaigns/${campaignId}`,
        { token: world.tokens.supervisor },
      );
      expect(changed.body.data.campaign.regulatory_profile).toBe("ca");
      expect(changed.body.data.campaign.name).toBe("Rules check");

      // The wallboard says so in words, in the row and once for the page.
      await page.goto(server.baseUrl);
      const row = page.locator(`tr[data-campaign="${campaignId}"]`);
      await row.locator("[data-governor]").waitFor({ timeout: 10_000 });
      await page
        .getByText("Held by the abandon-rate governor: Rules check.", { exact: true })
        .waitFor();
      await captureView(page, "wallboard-governor");

      // A lead's eligibility, from its row.
      await page.goto(`${server.baseUrl}/campaigns/${campaignId}/lists/${listId}`);
      const check = page.getByRole("button", { name: "Check the eligibility of +12125550123" });
      await check.click();
      const dialog = page.getByRole("dialog", { name: "Eligibility of +12125550123" });
      await dialog.locator("[data-verdict]").getByText("Not dialable now").waitFor({
        timeout: 10_000,
      });
      const dnc = dialog.locator('[data-reason="do_not_call"]');
      expect(await dnc.textContent()).toContain("do-not-call list");
      expect(await dnc.locator("td").last().textContent()).toBe("—");
      expect(await dialog.locator("[data-next-eligible]").textContent()).toContain("—");
      expect(await dialog.locator("[data-zone]").textContent()).toBe(
        "America/New_York (inferred from the number)",
      );
      expect(await dialog.locator("[data-profile]").textContent()).toBe(
        "Canada (CRTC) version 2008-09-30",
      );
      await page.keyboard.press("Escape");
      await dialog.waitFor({ state: "detached" });
      // Focus goes back to the button that opened it.
      expect(await check.evaluate((button) => button.ownerDocument.activeElement === button)).toBe(
        true,
      );

      // The first test's lead, called back in 2030 on a paused campaign: reasons that end.
      await page.goto(`${server.baseUrl}/campaigns/${world.campaignId}/lists/${world.listId}`);
      await page.getByRole("button", { name: "Check the eligibility of +14155552671" }).click();
      const callback = page.getByRole("dialog", { name: "Eligibility of +14155552671" });
      const notDue = callback.locator('[data-reason="not_due"]');
      await notDue.waitFor({ timeout: 10_000 });
      // 10:30 where the lead is ("PST" in Los Angeles).
      expect(await notDue.locator("td").last().textContent()).toMatch(
        /\(Jan 15, 10:30 AM \S+ for the lead\)/,
      );
      await callback.locator('[data-reason="campaign_not_running"]').waitFor();
      expect(await callback.locator("[data-profile]").textContent()).toBe(
        "None: the campaign's own settings only version 1970-01-01",
      );
      await captureView(page, "lead-eligibility");
      await supervisorContext.close();

      const adminContext = await newContext(browser);
      const admin = await adminContext.newPage();
      await admin.goto(`${server.baseUrl}/campaigns/new`);
      await signInPage(admin, "admin@acme.test", OWN_PASSWORD);
      const choice = admin.getByLabel("Regulatory profile");
      await choice.waitFor({ timeout: 10_000 });
      expect(await choice.inputValue()).toBe("us");
      await choice.selectOption("none");
      await admin.getByText(/calling hours, state rules, attempt caps and cool-downs/).waitFor();
      await captureView(admin, "campaign-new-unregulated");
      // A window the US hours never allow: the API's 422 beside the window's field.
      await choice.selectOption("us");
      await admin.getByLabel("Name").fill("Night shift");
      await admin.getByLabel("Calling window start").fill("22:00");
      await admin.getByLabel("Calling window end").fill("23:00");
      await admin.getByRole("button", { name: "Create campaign" }).click();
      const start = admin.getByLabel("Calling window start");
      await admin.locator('input[aria-invalid="true"]').waitFor({ timeout: 10_000 });
      expect(await start.getAttribute("aria-invalid")).toBe("true");
      const describedBy = (await start.getAttribute("aria-describedby")) ?? "";
      expect(await admin.locator(`[id="${describedBy}"]`).textContent()).toContain(
        "never meets the us profile's calling hours",
      );
      await captureView(admin, "campaign-new-window-refused");

      // The workspace's default profile for new campaigns.
      await admin.goto(`${server.baseUrl}/admin/settings`);
      const fallback = admin.getByLabel("Default regulatory profile");
      await fallback.waitFor({ timeout: 10_000 });
      expect(await fallback.inputValue()).toBe("us");
      await fallback.selectOption("uk");
      await admin.getByRole("button", { name: "Save settings" }).click();
      await admin.getByRole("status").getByText("Saved").waitFor({ timeout: 10_000 });
      const me = await apiCall<{ tenant: { regulatory_profile: string } }>("GET", "/auth/me", {
        token: world.tokens.admin,
      });
      expect(me.body.data.tenant.regulatory_profile).toBe("uk");

      // An import without a zone column: zones from the numbers, else the default zone.
      await admin.goto(`${server.baseUrl}/campaigns/${campaignId}/lists/${listId}`);
      await admin.getByLabel("CSV file").setInputFiles({
        name: "zoneless.csv",
        mimeType: "text/csv",
        buffer: Buffer.from("phone,name\n+18005550100,Toll free\n+13125550111,Chicago\n"),
      });
      await admin.getByRole("region", { name: "Preview of the first rows" }).waitFor();
      expect(await admin.getByLabel("Time zone column").inputValue()).toBe("");
      await admin.getByLabel("Default time zone").fill("America/Denver");
      await captureView(admin, "lead-list-import-zoneless");
      await admin.getByRole("button", { name: "Import", exact: true }).click();
      const report = admin.getByRole("region", { name: "Import report" });
      await report.waitFor({ timeout: 10_000 });
      expect(await report.locator("[data-imported]").textContent()).toBe("2");
      await admin
        .locator('tr[data-lead="+18005550100"]')
        .getByText("the import's default zone")
        .waitFor({ timeout: 10_000 });
      expect(await admin.locator('tr[data-lead="+18005550100"]').textContent()).toContain(
        "America/Denver",
      );
      await admin
        .locator('tr[data-lead="+13125550111"]')
        .getByText("inferred from the number")
        .waitFor();
      await adminContext.close();
    },
    SERVER_TEST_TIMEOUT_MS * 2,
  );
});

describe("the API reference", () => {
  test.skipIf(!haveBrowser)(
    "/docs renders with the network cut off: everything comes from the server",
    async () => {
      const context = await newContext(browser);
      const outside: string[] = [];
      await context.route("**/*", (route) => {
        const { hostname } = new URL(route.request().url());
        if (hostname === "127.0.0.1" || hostname === "localhost") return route.continue();
        outside.push(route.request().url());
        return route.abort();
      });
      const page = await context.newPage();
      await page.goto(`${server.baseUrl}/docs`);
      await page
        .getByText("Dialer engine API", { exact: false })
        .first()
        .waitFor({ timeout: 15_000 });
      await page.locator(".opblock").first().waitFor({ timeout: 15_000 });
      expect(outside).toEqual([]);
      await page.screenshot({ path: `${SCREENSHOTS}/api-reference-offline.png` });
      await context.close();
    },
    SERVER_TEST_TIMEOUT_MS,
  );
});

describe("a supervisor's and an admin's day", () => {
  test.skipIf(!haveBrowser)(
    "figures per agent, a forced pause, pacing within the governor, an alert, the last hour on a fresh page, a bulk do-not-call upload and a platform admin's reload",
    async () => {
      // A workspace of its own: its node hands out only this walk-through's calls.
      const tenant = await apiCall<{ tenant: { id: string } }>("POST", "/tenants", {
        token: world.tokens.platform,
        body: { name: "Globex", domain: "globex.test" },
      });
      const globex = { id: tenant.body.data.tenant.id, domain: "globex.test" };
      const admin = await readyUser("admin@globex.test", "admin", globex);
      await readyUser("super@globex.test", "supervisor", globex);
      const agentToken = await readyUser("evening@globex.test", "agent", globex);
      const signIn = (page: Page, email: string) =>
        signInPage(page, email, OWN_PASSWORD, globex.domain);

      // A new workspace's admin is shown what to do first.
      const adminContext = await newContext(browser);
      const adminPage = await adminContext.newPage();
      await adminPage.goto(`${server.baseUrl}/campaigns`);
      await signIn(adminPage, "admin@globex.test");
      const firstRun = adminPage.getByRole("region", { name: "Getting started" });
      await firstRun.getByRole("link", { name: "Create a campaign" }).waitFor({ timeout: 10_000 });
      await firstRun.getByText("Add agents (and give each a phone)").waitFor();
      await captureView(adminPage, "first-run-checklist");

      const campaign = await apiCall<{ campaign: { id: string } }>("POST", "/campaigns", {
        token: admin,
        body: {
          name: "Evening sales",
          dial_mode: "progressive",
          dial_ratio: 2,
          calling_window: { start: "00:00", end: "23:59" },
          regulatory_profile: "uk",
        },
      });
      const campaignId = campaign.body.data.campaign.id;
      // The profile's abandon message, without which its governor allows no abandoned call.
      const message = await fetch(
        `${server.baseUrl}/api/v1/campaigns/${campaignId}/messages/abandon`,
        {
          method: "PUT",
          headers: { authorization: `Bearer ${admin}`, "content-type": "audio/wav" },
          body: encodeWav(tone(440, 1000), 8000),
        },
      );
      expect(message.status).toBe(201);
      const list = await apiCall<{ lead_list: { id: string } }>(
        "POST",
        `/campaigns/${campaignId}/lead-lists`,
        { token: admin, body: { name: "Evening", caller_id: "+14155550100" } },
      );
      const leads = new FormData();
      leads.append("phone_column", "phone");
      leads.append("timezone_column", "tz");
      // Leads where it is day now, whenever the test runs: inside the profile's hours.
      const zone = daytimeZone();
      leads.append(
        "file",
        new Blob(
          [
            [
              "phone,tz,name",
              ...Array.from({ length: 60 }, (_, n) => `+44207946${1000 + n},${zone},Lead ${n}`),
            ].join("\n"),
          ],
          { type: "text/csv" },
        ),
        "evening.csv",
      );
      const imported = await apiCall(
        "POST",
        `/campaigns/${campaignId}/lead-lists/${list.body.data.lead_list.id}/import`,
        { token: admin, form: leads },
      );
      expect(imported.status).toBe(200);
      const edge = await apiCall<{ key: string }>("POST", "/edge-nodes", {
        token: admin,
        body: { name: "globex-edge", max_concurrent_calls: 10 },
      });
      const nodeKey = edge.body.data.key;
      const globexNode = (path: string, body: unknown) =>
        apiCall<Record<string, unknown>>("POST", `/nodes${path}`, { token: nodeKey, body });
      expect(
        (
          await apiCall("POST", `/campaigns/${campaignId}/status`, {
            token: admin,
            body: { action: "start" },
          })
        ).status,
      ).toBe(200);

      // The agent is ready on the desktop; the supervisor watches the wallboard.
      const agentContext = await newContext(browser);
      const desk = await agentContext.newPage();
      await desk.goto(`${server.baseUrl}/agent`);
      await signIn(desk, "evening@globex.test");
      const state = desk.getByRole("status", { name: "Agent state" });
      await state.waitFor({ timeout: 10_000 });
      await desk.getByLabel("Campaign").selectOption(campaignId);
      await desk.getByRole("button", { name: /^Ready/ }).click();
      await state.getByText("ready").waitFor({ timeout: 10_000 });

      const supervisorContext = await newContext(browser);
      const wallboard = await supervisorContext.newPage();
      await wallboard.goto(server.baseUrl);
      await signIn(wallboard, "super@globex.test");
      const agentRow = wallboard.locator('tr[data-agent="evening@globex.test"]');
      await agentRow.getByText("ready").waitFor({ timeout: 10_000 });

      // A busy hour: calls put through one at a time while the profile's budget (3 % of
      // live answers) covers no abandoned call; once it covers one, ratio 2 places two calls
      // for the one agent, and the second is abandoned.
      expect((await globexNode("/heartbeat", { active_calls: 0 })).status).toBe(200);
      const at = () => new Date().toISOString();
      let bridged = 0;
      let abandoned = 0;
      for (let round = 0; abandoned === 0 && round < 60; round++) {
        const claim = await globexNode("/jobs/claim", { max: 2, wait_ms: 2000 });
        const jobs = (claim.body.data as { jobs: { call_id: string }[] }).jobs;
        const put: string[] = [];
        for (const { call_id } of jobs) {
          await globexNode(`/calls/${call_id}/events`, { type: "ringing", at: at() });
          const answered = await globexNode(`/calls/${call_id}/events`, {
            type: "answered",
            at: at(),
          });
          const action = (answered.body.data as { call: { action: string } }).call.action;
          if (action === "bridge") put.push(call_id);
          else abandoned++;
        }
        for (const { call_id } of jobs)
          await globexNode(`/calls/${call_id}/events`, {
            type: "ended",
            at: at(),
            hangup_cause: "NORMAL_CLEARING",
          });
        for (const callId of put) {
          const done = await apiCall("POST", `/calls/${callId}/disposition`, {
            token: agentToken,
            body: { disposition: "completed" },
          });
          expect(done.status).toBe(200);
          bridged++;
        }
      }
      expect(abandoned).toBe(1);
      expect(bridged).toBeGreaterThanOrEqual(34);
      await state.getByText("ready").waitFor({ timeout: 10_000 });

      // The supervisor sees the agent's figures and the alert, pushed.
      await agentRow
        .locator('[data-label="Calls today"]', { hasText: String(bridged) })
        .waitFor({ timeout: 20_000 });
      const alerts = wallboard.getByRole("region", { name: "Alerts" });
      await alerts.locator('[data-alert="abandon_budget"]').waitFor({ timeout: 15_000 });
      await captureView(wallboard, "wallboard-alert");

      // A forced pause: the agent's desktop says who did it.
      await agentRow.getByRole("button", { name: "Pause: evening@globex.test" }).click();
      await agentRow.getByText("paused").waitFor({ timeout: 10_000 });
      await state.getByText("paused").waitFor({ timeout: 10_000 });
      await desk
        .getByRole("alert")
        .getByText(/super@globex\.test paused you at/)
        .waitFor({ timeout: 10_000 });
      await captureView(desk, "agent-desktop-paused-by-supervisor");

      // The supervisor raises the ratio: stored as set, the governor caps what is used.
      await wallboard.goto(`${server.baseUrl}/campaigns/${campaignId}`);
      await wallboard.getByRole("heading", { name: "Status history" }).waitFor({ timeout: 10_000 });
      await wallboard.getByLabel("Dial ratio").fill("3");
      await wallboard.getByRole("button", { name: "Save rules and pacing" }).click();
      await wallboard.getByRole("status").getByText("Saved").waitFor({ timeout: 10_000 });
      const saved = await apiCall<{
        campaign: { dial_ratio: number; stats: { dial_ratio: number; dial_ratio_reason: string } };
      }>("GET", `/campaigns/${campaignId}`, { token: admin });
      expect(saved.body.data.campaign.dial_ratio).toBe(3);
      expect(saved.body.data.campaign.stats.dial_ratio).toBeLessThan(3);
      await wallboard.locator("[data-governor]").waitFor({ timeout: 10_000 });
      await captureView(wallboard, "campaign-pacing-supervisor");

      // A wallboard opened afresh has the minutes behind it, with their numbers.
      const freshContext = await newContext(browser);
      const fresh = await freshContext.newPage();
      await fresh.goto(server.baseUrl);
      await signIn(fresh, "super@globex.test");
      const chart = fresh.locator(`tr[data-campaign="${campaignId}"] svg.chart`);
      await chart.locator("title", { hasText: /1 abandoned of \d+ answered/ }).waitFor({
        state: "attached",
        timeout: 10_000,
      });
      await captureView(fresh, "wallboard-fresh");

      // The admin uploads do-not-call numbers, with a report by row.
      await adminPage.goto(`${server.baseUrl}/dnc`);
      await adminPage.getByLabel("Upload numbers (CSV)").setInputFiles({
        name: "opt-outs.csv",
        mimeType: "text/csv",
        buffer: Buffer.from("phone\n+12025550191\n+1 202 555 0192\nnot a number\n"),
      });
      await adminPage.getByRole("button", { name: "Upload", exact: true }).click();
      await adminPage
        .getByRole("status")
        .getByText("3 rows: 2 added, 0 already listed, 1 refused.")
        .waitFor({ timeout: 10_000 });
      await adminPage.getByRole("row", { name: /\+12025550192/ }).waitFor({ timeout: 10_000 });
      await captureView(adminPage, "do-not-call-upload");

      // A platform admin picks the workspace and reloads: every view still works.
      const rootContext = await newContext(browser);
      const root = await rootContext.newPage();
      await root.goto(server.baseUrl);
      await root.getByLabel("E-mail").fill("root@example.test");
      await root.getByLabel("Password", { exact: true }).fill("a configured password");
      await root.getByRole("button", { name: "Sign in" }).click();
      await root.getByRole("button", { name: "Open Globex" }).click();
      await root.locator(`tr[data-campaign="${campaignId}"]`).waitFor({ timeout: 10_000 });
      await root.reload();
      await root.locator(`tr[data-campaign="${campaignId}"]`).waitFor({ timeout: 10_000 });
      expect(await root.getByLabel("Workspace").inputValue()).toBe(globex.id);
      await root.goto(`${server.baseUrl}/tenants`);
      await root.getByRole("row", { name: /Globex/ }).waitFor({ timeout: 10_000 });
      expect(await root.getByText("invalid query parameters").count()).toBe(0);
      await captureView(root, "workspaces-after-reload");

      for (const context of [
        adminContext,
        agentContext,
        supervisorContext,
        freshContext,
        rootContext,
      ])
        await context.close();
    },
    SERVER_TEST_TIMEOUT_MS * 3,
  );
});

describe("webhooks in the console", () => {
  test.skipIf(!haveBrowser)(
    "an admin registers a CRM's endpoint, sees its secret once, reads its deliveries and sends one again",
    async () => {
      const received: { headers: Headers; body: string }[] = [];
      const crm = Bun.serve({
        hostname: "127.0.0.1",
        port: 0,
        async fetch(request) {
          received.push({ headers: request.headers, body: await request.text() });
          return new Response("noted");
        },
      });
      try {
        const hookUrl = `http://127.0.0.1:${crm.port}/dialer`;
        const context = await newContext(browser);
        const page = await context.newPage();
        await page.goto(`${server.baseUrl}/admin/webhooks`);
        await signInPage(page, "admin@acme.test", OWN_PASSWORD);
        await page.getByRole("heading", { name: "Webhooks", exact: true }).waitFor({
          timeout: 10_000,
        });
        // Nothing chosen: said at once, nothing sent.
        await page.getByLabel("Receiver URL").fill(hookUrl);
        await page.getByRole("button", { name: "Create webhook" }).click();
        await page
          .locator(".field-error", { hasText: "choose at least one event" })
          .waitFor({ timeout: 10_000 });
        await page.getByLabel("dnc.added").check();
        await page.getByLabel("Description").fill("CRM sync");
        await page.getByRole("button", { name: "Create webhook" }).click();
        const secret = (await page.locator("[data-secret]").textContent({ timeout: 10_000 })) ?? "";
        expect(secret.startsWith("whsec_")).toBe(true);
        await page.locator(`tr[data-webhook="${hookUrl}"]`).waitFor({ timeout: 10_000 });
        await captureView(page, "admin-webhooks");

        expect(
          (
            await apiCall("POST", "/dnc", {
              token: world.tokens.admin,
              body: { phone: "+14155550177" },
            })
          ).status,
        ).toBe(201);
        const deadline = Date.now() + 15_000;
        while (received.length === 0 && Date.now() < deadline) await Bun.sleep(50);
        const first = received[0];
        if (!first) throw new Error("the CRM heard nothing");
        const event = new Webhook(secret).verify(first.body, Object.fromEntries(first.headers)) as {
          type: string;
          data: { phone: string };
        };
        expect([event.type, event.data.phone]).toEqual(["dnc.added", "+14155550177"]);

        await page.getByRole("button", { name: `Deliveries of ${hookUrl}` }).click();
        const log = page.getByRole("region", { name: `Deliveries to ${hookUrl}` });
        await log.getByText("dnc.added").waitFor({ timeout: 10_000 });
        // Exact: an event's id may hold the same digits.
        await log.getByText("200", { exact: true }).waitFor();
        await log
          .getByRole("button", { name: /^Send .* again$/ })
          .first()
          .click();
        await log
          .getByRole("status")
          .getByText(/Sent again/)
          .waitFor({ timeout: 10_000 });
        while (received.length < 2 && Date.now() < deadline + 15_000) await Bun.sleep(50);
        expect(received[1]?.headers.get("webhook-id")).toBe(first.headers.get("webhook-id"));
        await page.reload();
        await page.locator(`tr[data-webhook="${hookUrl}"]`).waitFor({ timeout: 10_000 });
        expect(await page.content()).not.toContain(secret);
        await context.close();
      } finally {
        crm.stop(true);
      }
    },
    SERVER_TEST_TIMEOUT_MS,
  );
});
