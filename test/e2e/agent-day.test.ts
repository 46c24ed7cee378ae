import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { captureView, haveBrowser, launchBrowser, newContext } from "../helpers/browser.ts";
import { resetDatabase } from "../helpers/database.ts";
import { startSipNode, until } from "../helpers/edge.ts";
import { sipPort } from "../helpers/ports.ts";
import {
  SERVER_TEST_TIMEOUT_MS,
  type ServerProcess,
  startServer,
} from "../helpers/server-process.ts";
import { SipPhone } from "../helpers/sip-phone.ts";
import { awakeZone } from "../helpers/zones.ts";

/**
 * An agent's working day in Chromium, through the real service and the reference node (SIP)
 * against scripted phones: the leads behind a trunk, the agents' desk phones. The agent
 * previews a lead and skips it, dials the next, talks and transfers it to a second agent,
 * hangs up another, pauses in wrap-up and still picks a code, dials a number by hand, and
 * sees the supervisor pause the campaign.
 */

const dataDir = mkdtempSync(join(tmpdir(), "dialer-agent-day-"));
const PASSWORD = "my own password 22";
const FIRST = "a first password 1";
let server: ServerProcess;
let browser: Browser;
const cleanups: (() => Promise<void> | void)[] = [];

const world = {
  tokens: {} as Record<string, string>,
  tenantId: "",
  campaignId: "",
  nodeKey: "",
  trunk: undefined as SipPhone | undefined,
  firstPhone: undefined as SipPhone | undefined,
  secondPhone: undefined as SipPhone | undefined,
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

/** A user of the workspace, with its own password set; its token. */
async function user(email: string, role: string, phoneUri?: string): Promise<string> {
  const created = await apiCall<{ user: { id: string } }>(
    "POST",
    `/users?tenant_id=${world.tenantId}`,
    { token: world.tokens.platform, body: { email, password: FIRST, role } },
  );
  expect(created.status).toBe(201);
  if (phoneUri) {
    await apiCall("PATCH", `/users/${created.body.data.user.id}?tenant_id=${world.tenantId}`, {
      token: world.tokens.platform,
      body: { phone_uri: phoneUri },
    });
  }
  const login = await apiCall<{ token: string }>("POST", "/auth/login", {
    body: { email, password: FIRST, tenant_domain: "day.test" },
  });
  const token = login.body.data.token;
  await apiCall("POST", "/auth/me/password", {
    token,
    body: { current_password: FIRST, new_password: PASSWORD },
  });
  return (
    await apiCall<{ token: string }>("POST", "/auth/login", {
      body: { email, password: PASSWORD, tenant_domain: "day.test" },
    })
  ).body.data.token;
}

beforeAll(async () => {
  if (!haveBrowser) return;
  await resetDatabase();
  server = await startServer({
    DATA_DIR: dataDir,
    AUTH_JWT_SECRET: "agent-day-secret-that-is-long-enough-to-use",
    BOOTSTRAP_ADMIN_EMAIL: "root@example.test",
    BOOTSTRAP_ADMIN_PASSWORD: "a configured password",
  });
  browser = await launchBrowser();
  const trunk = await SipPhone.start(sipPort());
  const firstPhone = await SipPhone.start(sipPort());
  const secondPhone = await SipPhone.start(sipPort());
  Object.assign(world, { trunk, firstPhone, secondPhone });
  cleanups.push(
    () => trunk.stop(),
    () => firstPhone.stop(),
    () => secondPhone.stop(),
  );
  // The leads answer and stay on the line until someone hangs up.
  trunk.defaultBehaviour = { kind: "answer", afterMs: 300 };

  const root = await apiCall<{ token: string }>("POST", "/auth/login", {
    body: { email: "root@example.test", password: "a configured password" },
  });
  world.tokens.platform = root.body.data.token;
  const tenant = await apiCall<{ tenant: { id: string } }>("POST", "/tenants", {
    token: world.tokens.platform,
    body: { name: "Day", domain: "day.test" },
  });
  world.tenantId = tenant.body.data.tenant.id;
  world.tokens.admin = await user("admin@day.test", "admin");
  world.tokens.supervisor = await user("super@day.test", "supervisor");
  world.tokens.first = await user(
    "first@day.test",
    "agent",
    `sip:first@127.0.0.1:${firstPhone.port}`,
  );
  world.tokens.second = await user(
    "second@day.test",
    "agent",
    `sip:second@127.0.0.1:${secondPhone.port}`,
  );
  const campaign = await apiCall<{ campaign: { id: string } }>("POST", "/campaigns", {
    token: world.tokens.admin,
    body: {
      name: "Renewals preview",
      dial_mode: "preview",
      calling_window: { start: "00:00", end: "23:59" },
      regulatory_profile: "none",
    },
  });
  world.campaignId = campaign.body.data.campaign.id;
  const list = await apiCall<{ lead_list: { id: string } }>(
    "POST",
    `/campaigns/${world.campaignId}/lead-lists`,
    { token: world.tokens.admin, body: { name: "November", caller_id: "+14155550100" } },
  );
  const zone = awakeZone(["America/New_York"]);
  const form = new FormData();
  form.append("phone_column", "phone");
  form.append("timezone_column", "tz");
  form.append(
    "file",
    new Blob(
      [
        "phone,tz,first_name,last_name,plan\n" +
          `+14155552671,${zone},Ada,Lovelace,Gold\n` +
          `+14155552672,${zone},Grace,Hopper,Silver\n`,
      ],
      { type: "text/csv" },
    ),
    "leads.csv",
  );
  await apiCall(
    "POST",
    `/campaigns/${world.campaignId}/lead-lists/${list.body.data.lead_list.id}/import`,
    {
      token: world.tokens.admin,
      form,
    },
  );
  await apiCall("PATCH", `/tenants/${world.tenantId}`, {
    token: world.tokens.admin,
    body: { transfer_numbers: ["+14155550199"] },
  });
  await apiCall("POST", `/campaigns/${world.campaignId}/status`, {
    token: world.tokens.admin,
    body: { action: "start" },
  });
  const edge = await apiCall<{ key: string }>("POST", "/edge-nodes", {
    token: world.tokens.admin,
    body: { name: "edge-1", max_concurrent_calls: 10 },
  });
  world.nodeKey = edge.body.data.key;
  const node = await startSipNode({
    baseUrl: server.baseUrl,
    nodeKey: world.nodeKey,
    port: sipPort(),
    trunkPort: trunk.port,
  });
  cleanups.push(() => node.stop(1_000));
}, SERVER_TEST_TIMEOUT_MS);

afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await browser?.close();
  server?.process.kill("SIGTERM");
  await server?.process.exited;
  rmSync(dataDir, { recursive: true, force: true });
});

async function signIn(page: Page, email: string) {
  await page.goto(`${server.baseUrl}/agent`);
  await page.getByLabel("E-mail").fill(email);
  await page.getByLabel("Password", { exact: true }).fill(PASSWORD);
  await page.getByLabel("Workspace").fill("day.test");
  await page.getByRole("button", { name: "Sign in" }).click();
}

describe("an agent's day", () => {
  test.skipIf(!haveBrowser)(
    "preview, skip, dial, transfer, hang up, pause in wrap-up, dial by hand, the supervisor's pause",
    async () => {
      const trunk = world.trunk as SipPhone;
      const firstPhone = world.firstPhone as SipPhone;
      const secondPhone = world.secondPhone as SipPhone;
      const context = await newContext(browser);
      const desk = await context.newPage();
      desk.on("pageerror", (error) => console.log("page error", error));
      await signIn(desk, "first@day.test");
      const state = desk.getByRole("status", { name: "Agent state" });
      await state.waitFor({ timeout: 10_000 });
      await desk.getByText("Connected").waitFor({ timeout: 10_000 });
      await desk.getByLabel("Campaign").selectOption(world.campaignId);
      // The answer to Ready is held until Ada is reserved for the agent, which the socket tells
      // at once: the later state stays on the page, the answer's "ready" does not undo it.
      await desk.route("**/api/v1/agents/me/state", async (route) => {
        const response = await route.fetch();
        await until(
          async () =>
            (
              await apiCall<{ agent: { state: string } }>("GET", "/agents/me", {
                token: world.tokens.first,
              })
            ).body.data.agent.state === "reserved",
          "Ada reserved",
        );
        await Bun.sleep(300);
        await route.fulfill({ response });
      });
      await desk.getByRole("button", { name: /^Ready/ }).click();

      // Offered Ada first: her name is the headline, her columns in the file's order.
      const preview = desk.getByRole("heading", { name: /^Preview/ });
      const adaOffered = desk.getByRole("heading", { name: "Preview: Ada Lovelace" });
      await adaOffered.waitFor({ timeout: 15_000 });
      await desk.unrouteAll({ behavior: "wait" });
      await Bun.sleep(300); // the answer rendered
      expect(await adaOffered.isVisible()).toBe(true);
      await captureView(desk, "agent-day-preview");
      expect(trunk.calls).toHaveLength(0);
      await desk.getByLabel("Skip reason").selectOption("Wrong region");
      await desk.getByRole("button", { name: /^Skip/ }).click();

      // Grace next; dialled, she answers and is put through to the agent's desk phone.
      await desk
        .getByRole("heading", { name: "Preview: Grace Hopper" })
        .waitFor({ timeout: 15_000 });
      await desk.getByRole("button", { name: /^Dial/ }).click();
      const grace = await until(() => trunk.calls[0], "the INVITE to Grace");
      expect(grace.user).toBe("+14155552672");
      const call = desk.getByRole("region", { name: "Current call" });
      await call.waitFor({ timeout: 15_000 });
      await until(
        () => firstPhone.calls[0]?.answerAckedAt ?? undefined,
        "the first agent's bridge",
      );
      // Her columns are labelled, in the file's order.
      expect(await call.locator("dt").allTextContents()).toEqual([
        "Name",
        "Number",
        "First name",
        "Last name",
        "Plan",
        "Lead's local time",
        "Attempt",
      ]);
      await captureView(desk, "agent-day-on-call");

      // The second agent is signed in too (its own preview waits): the call goes to them.
      await apiCall("POST", "/agents/me/state", {
        token: world.tokens.second,
        body: { state: "ready", campaign_id: world.campaignId },
      });
      await call.getByRole("button", { name: /^Transfer/ }).click();
      const target = desk.getByLabel("Transfer to");
      await until(
        async () =>
          (await target.locator("option").allTextContents()).includes("second@day.test")
            ? true
            : undefined,
        "the second agent among the targets",
      );
      await target.selectOption({ label: "second@day.test" });
      await desk.getByRole("button", { name: "Transfer now" }).click();
      await until(
        () => secondPhone.calls[0]?.answerAckedAt ?? undefined,
        "the second agent's bridge",
      );
      await until(() => firstPhone.calls[0]?.ended ?? undefined, "the first agent's leg let go");
      // The node reports the transfer once both legs are settled: the phones may be first.
      await until(async () => {
        const second = await apiCall<{ agent: { state: string } }>("GET", "/agents/me", {
          token: world.tokens.second,
        });
        return second.body.data.agent.state === "on_call" ? true : undefined;
      }, "the second agent on the call");

      // Free again, the first agent is offered Ada once more, dials her and hangs up.
      await desk
        .getByRole("heading", { name: "Preview: Ada Lovelace" })
        .waitFor({ timeout: 15_000 });
      await desk.getByRole("button", { name: /^Dial/ }).click();
      await call.waitFor({ timeout: 15_000 });
      await until(() => firstPhone.calls[1]?.answerAckedAt ?? undefined, "the second bridge");
      await call.getByRole("button", { name: /^Hang up/ }).click();
      await until(
        () => trunk.calls.find((c) => c.user === "+14155552671")?.ended ?? undefined,
        "Ada hung up on",
      );
      const wrapUp = desk.getByRole("heading", { name: "Wrap-up" });
      await wrapUp.waitFor({ timeout: 15_000 });

      // A pause in wrap-up waits for the code, which is still asked for.
      await desk.locator("h1").click();
      await desk.keyboard.press("p");
      await desk.getByText(/Pausing after this call/).waitFor({ timeout: 10_000 });
      expect(await wrapUp.isVisible()).toBe(true);
      await captureView(desk, "agent-day-pause-in-wrap-up");
      await desk.getByLabel("Notes").fill("Asked for a brochure");
      await desk.getByRole("button", { name: /^Completed/ }).click();
      await state.getByText("paused").waitFor({ timeout: 10_000 });

      // A number dialled by hand: placed through the node, and the agent is paused after it.
      await desk.getByRole("textbox", { name: "Number" }).fill("+14155550123");
      await desk.getByRole("button", { name: "Dial", exact: true }).click();
      await call.waitFor({ timeout: 15_000 });
      expect(trunk.calls.some((c) => c.user === "+14155550123")).toBe(true);
      await call.getByRole("button", { name: /^Hang up/ }).click();
      await wrapUp.waitFor({ timeout: 15_000 });
      await desk.locator("h1").click();
      await desk.keyboard.press("1");
      await state.getByText("paused").waitFor({ timeout: 10_000 });

      // A do-not-call number is refused with the reason, nothing dialled.
      await apiCall("POST", "/dnc", { token: world.tokens.admin, body: { phone: "+14155550124" } });
      await desk.getByRole("textbox", { name: "Number" }).fill("+14155550124");
      await desk.getByRole("button", { name: "Dial", exact: true }).click();
      // Said at the number's field, and read with it.
      const refusal = desk.locator("#manual-error", {
        hasText: /on the workspace.s do-not-call list/,
      });
      await refusal.waitFor({ timeout: 10_000 });
      expect(
        await desk.getByRole("textbox", { name: "Number" }).getAttribute("aria-describedby"),
      ).toContain("manual-error");
      expect(trunk.calls.some((c) => c.user === "+14155550124")).toBe(false);

      // The supervisor pauses the agent, then the campaign: the agent is told who did each.
      const me = await apiCall<{ agent: { user_id: string } }>("GET", "/agents/me", {
        token: world.tokens.first,
      });
      await apiCall("POST", `/agents/${me.body.data.agent.user_id}/state`, {
        token: world.tokens.supervisor,
        body: { state: "paused", reason: "meeting" },
      });
      await desk.getByText(/super@day\.test paused you/).waitFor({ timeout: 10_000 });
      await desk.getByRole("button", { name: "Dismiss" }).click();
      await apiCall("POST", `/campaigns/${world.campaignId}/status`, {
        token: world.tokens.supervisor,
        body: { action: "pause" },
      });
      await desk.getByText(/paused by super@day\.test/).waitFor({ timeout: 10_000 });
      await captureView(desk, "agent-day-campaign-paused");

      const cdrs = await apiCall<{ items: Record<string, unknown>[] }>("GET", "/cdrs", {
        token: world.tokens.admin,
      });
      const graceCdr = cdrs.body.data.items.find((cdr) => cdr.phone === "+14155552672");
      // Grace's call is still with the second agent: no CDR until it ends.
      expect(graceCdr).toBeUndefined();
      const ada = cdrs.body.data.items.find((cdr) => cdr.phone === "+14155552671");
      expect(ada).toMatchObject({
        outcome: "answered",
        disposition: "completed",
        notes: "Asked for a brochure",
      });
      expect(cdrs.body.data.items.some((cdr) => cdr.phone === "+14155550123")).toBe(true);
      expect(await preview.count()).toBe(0);
      await context.close();
    },
    SERVER_TEST_TIMEOUT_MS * 2,
  );
});
