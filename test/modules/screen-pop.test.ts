import { afterEach, describe, expect, test } from "bun:test";
import { screenPopProblem, screenPopUrl } from "../../src/dialer/screen-pop.ts";
import { createWorkspace } from "../helpers/app.ts";
import { runningCampaign } from "../helpers/leads.ts";
import { listenOnLoopback, openSocket } from "../helpers/sockets.ts";

/** Noon in New York: inside the calling window. */
const NOON_NEW_YORK = Date.parse("2026-03-02T17:00:00Z");
const TEMPLATE = "https://crm.example/contacts?phone={phone}&id={lead.external_id}&call={call.id}";

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

describe("a screen pop's template", () => {
  test("takes the call's values, each URL-encoded; a field the lead lacks is empty", () => {
    const values = {
      call: { id: "c-1", campaign_id: "k-1" },
      lead: { id: "l-1", phone: "+14155552671", fields: { external_id: "A&B 7/8" } },
    };
    expect(screenPopUrl(TEMPLATE, values)).toBe(
      "https://crm.example/contacts?phone=%2B14155552671&id=A%26B%207%2F8&call=c-1",
    );
    expect(screenPopUrl("https://crm.example/{lead.missing}/{campaign.id}", values)).toBe(
      "https://crm.example//k-1",
    );
    // Only the lead's own columns: nothing every object inherits.
    expect(
      screenPopUrl("https://crm.example/?c={lead.constructor}&p={lead.__proto__}", values),
    ).toBe("https://crm.example/?c=&p=");
  });

  test("is an http(s) URL with known placeholders", () => {
    expect(screenPopProblem(TEMPLATE)).toBeUndefined();
    expect(screenPopProblem("javascript:alert({phone})")).toBe("must be an http or https URL");
    expect(screenPopProblem("crm/{phone}")).toContain("must be an absolute URL");
    expect(screenPopProblem("https://crm.example/{agent.password}")).toContain(
      "unknown placeholder {agent.password}",
    );
    expect(screenPopProblem("")).toContain("must be an absolute URL");
    // The lead's data never chooses the site.
    for (const template of ["https://{phone}/x", "https:{phone}", "https://crm.{lead.id}.example/"])
      expect(screenPopProblem(template)).toContain("not in the host");
    expect(screenPopProblem("https://crm.example:8443/{lead.id}#{phone}")).toBeUndefined();
  });
});

describe("the screen pop of a connected call", () => {
  test("is stored with the campaign, refused when it is not a URL, and reaches the agent with the call's values", async () => {
    const w = await createWorkspace();
    w.clock.advance(NOON_NEW_YORK - w.clock.now());
    const admin = await w.login("admin@acme.test");
    const refused = await w.request("POST", "/api/v1/campaigns", {
      token: admin,
      body: { name: "Pop", screen_pop_url: "javascript:alert(1)" },
    });
    expect(refused.status).toBe(422);
    expect(refused.body.field_errors).toEqual([
      { field: "screen_pop_url", message: "must be an http or https URL" },
    ]);
    const { campaignId, nodeKey } = await runningCampaign(
      w,
      admin,
      { name: "Pop", regulatory_profile: "none", screen_pop_url: TEMPLATE },
      "phone,timezone,external_id\n+14155552671,America/New_York,CRM-42\n",
    );
    const shown = await w.request("GET", `/api/v1/campaigns/${campaignId}`, { token: admin });
    expect(shown.body.data.campaign.screen_pop_url).toBe(TEMPLATE);
    const patched = await w.request("PATCH", `/api/v1/campaigns/${campaignId}`, {
      token: admin,
      body: { version: shown.body.data.campaign.version, screen_pop_url: "https://x/{nope}" },
    });
    expect(patched.status).toBe(422);
    await w.user(w.acme.id, "agent@acme.test", "agent", { phoneUri: "sip:1001@127.0.0.1:5091" });
    const agent = await w.login("agent@acme.test");
    const listening = listenOnLoopback(w);
    stops.push(() => listening.stop());
    const desk = await openSocket(listening.wsUrl("/ws/agent", agent));
    stops.push(async () => desk.socket.close());
    await w.request("POST", "/api/v1/agents/me/state", {
      token: agent,
      body: { state: "ready", campaign_id: campaignId },
    });
    const claimed = await w.request("POST", "/api/v1/nodes/jobs/claim", {
      token: nodeKey,
      body: { max: 1 },
    });
    const callId = claimed.body.data.jobs[0].call_id;
    await w.request("POST", `/api/v1/nodes/calls/${callId}/events`, {
      token: nodeKey,
      body: { type: "answered", at: new Date(w.clock.now()).toISOString() },
    });
    const expected = `https://crm.example/contacts?phone=%2B14155552671&id=CRM-42&call=${callId}`;
    const connected = await desk.next("call.connected");
    expect(connected.screen_pop_url).toBe(expected);
    const me = await w.request("GET", "/api/v1/agents/me", { token: agent });
    expect(me.body.data.screen_pop_url).toBe(expected);
  });
});
