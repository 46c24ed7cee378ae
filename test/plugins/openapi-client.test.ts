import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import openapiTS, { astToString, type OpenAPI3 } from "openapi-typescript";
import { createWorkspace } from "../helpers/app.ts";
import { importFile } from "../helpers/leads.ts";

/**
 * A client generated from the OpenAPI document must accept what the app really sends: real
 * bodies, captured in-process, are assigned to the generated response types and type-checked.
 * Object literals get TypeScript's excess-property check, so a field the document leaves out
 * fails as surely as a missing or mistyped one.
 */

const TSC = resolve(import.meta.dir, "../../node_modules/.bin/tsc");
/** 2026-03-02T17:00Z is noon in New York: inside the default calling window. */
const NOON_NEW_YORK = Date.parse("2026-03-02T17:00:00Z");

interface Capture {
  name: string;
  path: string;
  method: "get" | "post" | "patch" | "delete";
  status: number;
  body: unknown;
}

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "openapi-client-"));
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        target: "ES2022",
        module: "ESNext",
        moduleResolution: "bundler",
        types: [],
        lib: ["ES2022"],
      },
      files: ["payloads.ts"],
    }),
  );
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function capturePayloads() {
  const w = await createWorkspace();
  w.clock.advance(NOON_NEW_YORK - w.clock.now());
  const captures: Capture[] = [];
  const take = async <T = unknown>(
    name: string,
    method: Capture["method"],
    path: string,
    documentedPath: string,
    response: Promise<{ status: number; body: unknown }>,
  ) => {
    const { status, body } = await response;
    if (status >= 300) throw new Error(`${name}: ${method} ${path} answered ${status}`);
    captures.push({ name, path: documentedPath, method, status, body });
    return body as { data: T };
  };

  const login = await take<{ token: string }>(
    "login",
    "post",
    "/api/v1/auth/login",
    "/api/v1/auth/login",
    w.request("POST", "/api/v1/auth/login", {
      body: { email: "admin@acme.test", password: "correct horse battery staple" },
    }),
  );
  const admin = login.data.token;
  await w.user(w.acme.id, "agent@acme.test", "agent");
  const agent = await w.login("agent@acme.test");
  await take(
    "me",
    "get",
    "/api/v1/auth/me",
    "/api/v1/auth/me",
    w.request("GET", "/api/v1/auth/me", { token: admin }),
  );

  const created = await take<{ campaign: { id: string } }>(
    "campaignCreated",
    "post",
    "/api/v1/campaigns",
    "/api/v1/campaigns",
    w.request("POST", "/api/v1/campaigns", {
      token: admin,
      body: { name: "Spring", caller_id: "+14155550100" },
    }),
  );
  const campaignId = created.data.campaign.id;
  const campaignPath = `/api/v1/campaigns/${campaignId}`;
  const list = await w.request("POST", `${campaignPath}/lead-lists`, {
    token: admin,
    body: { name: "March", caller_id: "+14155550100" },
  });
  const listPath = `${campaignPath}/lead-lists/${list.body.data.lead_list.id}`;
  const documentedList = "/api/v1/campaigns/{id}/lead-lists/{list_id}";
  await take(
    "importReport",
    "post",
    `${listPath}/import`,
    `${documentedList}/import`,
    importFile(
      w,
      `${listPath}/import`,
      admin,
      "phone,timezone,name\n+14155552671,America/New_York,Ada\nnot a phone,UTC,Bob\n",
    ),
  );
  await take(
    "statusChanged",
    "post",
    `${campaignPath}/status`,
    "/api/v1/campaigns/{id}/status",
    w.request("POST", `${campaignPath}/status`, { token: admin, body: { action: "start" } }),
  );
  await take(
    "campaign",
    "get",
    campaignPath,
    "/api/v1/campaigns/{id}",
    w.request("GET", campaignPath, { token: admin }),
  );
  await take(
    "campaigns",
    "get",
    "/api/v1/campaigns",
    "/api/v1/campaigns",
    w.request("GET", "/api/v1/campaigns", { token: admin }),
  );
  await take(
    "leads",
    "get",
    `${listPath}/leads`,
    `${documentedList}/leads`,
    w.request("GET", `${listPath}/leads`, { token: admin }),
  );

  // One call from claim to wrap-up, by a node, with the agent's own view on the way.
  const nodeKey = (
    await w.request("POST", "/api/v1/edge-nodes", {
      token: admin,
      body: { name: "edge", max_concurrent_calls: 5 },
    })
  ).body.data.key as string;
  await w.request("POST", "/api/v1/agents/me/state", {
    token: agent,
    body: { state: "ready", campaign_id: campaignId },
  });
  await take(
    "heartbeat",
    "post",
    "/api/v1/nodes/heartbeat",
    "/api/v1/nodes/heartbeat",
    w.request("POST", "/api/v1/nodes/heartbeat", { token: nodeKey, body: { active_calls: 0 } }),
  );
  const claim = await take<{ jobs: { call_id: string; lead_id: string }[] }>(
    "claim",
    "post",
    "/api/v1/nodes/jobs/claim",
    "/api/v1/nodes/jobs/claim",
    w.request("POST", "/api/v1/nodes/jobs/claim", { token: nodeKey, body: { max: 1 } }),
  );
  const jobs = claim.data.jobs;
  expect(jobs).toHaveLength(1);
  const job = jobs[0] as { call_id: string; lead_id: string };
  const event = (type: string, extra: Record<string, unknown> = {}) =>
    w.request("POST", `/api/v1/nodes/calls/${job.call_id}/events`, {
      token: nodeKey,
      body: { type, at: new Date(w.clock.now()).toISOString(), ...extra },
    });
  const eventPath = "/api/v1/nodes/calls/{call_id}/events";
  await take("answered", "post", eventPath, eventPath, event("answered"));
  await take(
    "agentOnCall",
    "get",
    "/api/v1/agents/me",
    "/api/v1/agents/me",
    w.request("GET", "/api/v1/agents/me", { token: agent }),
  );
  w.clock.advance(30_000);
  await take(
    "ended",
    "post",
    eventPath,
    eventPath,
    event("ended", { hangup_cause: "NORMAL_CLEARING" }),
  );
  await take(
    "disposition",
    "post",
    `/api/v1/calls/${job.call_id}/disposition`,
    "/api/v1/calls/{call_id}/disposition",
    w.request("POST", `/api/v1/calls/${job.call_id}/disposition`, {
      token: agent,
      body: { disposition: "completed" },
    }),
  );
  const cdrs = await take<{ items: unknown[] }>(
    "cdrs",
    "get",
    "/api/v1/cdrs",
    "/api/v1/cdrs",
    w.request("GET", "/api/v1/cdrs", { token: admin }),
  );
  expect(cdrs.data.items).toHaveLength(1);
  await take(
    "compliance",
    "get",
    `${campaignPath}/compliance`,
    "/api/v1/campaigns/{id}/compliance",
    w.request("GET", `${campaignPath}/compliance`, { token: admin }),
  );
  await take(
    "eligibility",
    "get",
    `${campaignPath}/leads/${job.lead_id}/eligibility`,
    "/api/v1/campaigns/{id}/leads/{lead_id}/eligibility",
    w.request("GET", `${campaignPath}/leads/${job.lead_id}/eligibility`, { token: admin }),
  );

  const document = await w.request("GET", "/api/v1/openapi.json");
  expect(document.status).toBe(200);
  return { document: document.body, captures };
}

/** Generates the types of `document` and type-checks `payloads` against them; tsc's report. */
async function typeCheck(document: object, payloads: string) {
  writeFileSync(join(dir, "api.ts"), astToString(await openapiTS(document as OpenAPI3)));
  writeFileSync(join(dir, "payloads.ts"), payloads);
  const tsc = Bun.spawnSync([TSC, "-p", join(dir, "tsconfig.json")], { cwd: dir });
  return { exitCode: tsc.exitCode, report: `${tsc.stdout.toString()}${tsc.stderr.toString()}` };
}

/** `const name: <the generated type of that response> = <the body the app sent>;` per capture. */
function payloadModule(captures: Capture[]): string {
  const lines = ['import type { paths } from "./api";', ""];
  for (const { name, path, method, status, body } of captures) {
    lines.push(
      `export const ${name}: paths[${JSON.stringify(path)}][${JSON.stringify(method)}]["responses"][${status}]["content"]["application/json"] =`,
      `  ${JSON.stringify(body)};`,
    );
  }
  return `${lines.join("\n")}\n`;
}

describe("generated client types", () => {
  test("real bodies of the main routes type-check against the types generated from the OpenAPI document", async () => {
    const { document, captures } = await capturePayloads();
    const { exitCode, report } = await typeCheck(document, payloadModule(captures));
    expect(report).toBe("");
    expect(exitCode).toBe(0);
  }, 60_000);

  test("a body the document does not describe is refused by the same check", async () => {
    const document = {
      openapi: "3.0.3",
      info: { title: "t", version: "1" },
      paths: {
        "/x": {
          get: {
            responses: {
              200: {
                description: "OK",
                content: {
                  "application/json": {
                    schema: {
                      type: "object",
                      required: ["a"],
                      properties: { a: { type: "string" } },
                    },
                  },
                },
              },
            },
          },
        },
      },
    };
    const { exitCode, report } = await typeCheck(
      document,
      payloadModule([
        { name: "x", path: "/x", method: "get", status: 200, body: { a: "1", b: 2 } },
      ]),
    );
    expect(report).toContain("'\"b\"' does not exist");
    expect(exitCode).not.toBe(0);
  }, 30_000);
});
