import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resetDatabase } from "../helpers/database.ts";
import {
  callServer,
  type Json,
  SERVER_TEST_TIMEOUT_MS,
  startServer,
} from "../helpers/server-process.ts";
import { awakeZone } from "../helpers/zones.ts";

const dataDir = mkdtempSync(join(tmpdir(), "dialer-calls-"));
const env = {
  DATA_DIR: dataDir,
  AUTH_JWT_SECRET: "dialer-restart-secret-long-enough-to-use",
  BOOTSTRAP_ADMIN_EMAIL: "ops@example.test",
  BOOTSTRAP_ADMIN_PASSWORD: "a configured password",
};

beforeAll(async () => {
  await resetDatabase();
});
/** Servers still running when a test ends, failed or not, are killed before the next. */
const running: Awaited<ReturnType<typeof startServer>>[] = [];
afterEach(() => {
  for (const server of running.splice(0)) server.process.kill("SIGKILL");
});
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

const call = callServer;

describe("kill -9 with calls in flight", () => {
  test(
    "calls still take their events by call_id; every lead ends in one state; one CDR per call",
    async () => {
      const first = await startServer(env);
      running.push(first);
      const login = await call(first.baseUrl, "POST", "/api/v1/auth/login", undefined, {
        email: "ops@example.test",
        password: "a configured password",
      });
      const token = login.body.data.token as string;
      // A window open all day under no profile's hours, so that the test does not depend on the
      // hour it runs.
      const campaign = (
        await call(first.baseUrl, "POST", "/api/v1/campaigns", token, {
          name: "Restart",
          regulatory_profile: "none",
          dial_ratio: 3,
          calling_window: { start: "00:00", end: "23:59" },
        })
      ).body.data.campaign;
      const list = (
        await call(first.baseUrl, "POST", `/api/v1/campaigns/${campaign.id}/lead-lists`, token, {
          name: "L",
          caller_id: "+14155550100",
        })
      ).body.data.lead_list;
      const form = new FormData();
      form.append("phone_column", "phone");
      form.append("timezone_column", "timezone");
      form.append(
        "file",
        new Blob([
          `phone,timezone\n${["+14155552671", "+14155552672", "+14155552673"].map((phone) => `${phone},${awakeZone()}`).join("\n")}\n`,
        ]),
        "l.csv",
      );
      const imported = await call(
        first.baseUrl,
        "POST",
        `/api/v1/campaigns/${campaign.id}/lead-lists/${list.id}/import`,
        token,
        form,
      );
      expect(imported.body.data.import.imported).toBe(3);
      const node = (
        await call(first.baseUrl, "POST", "/api/v1/edge-nodes", token, {
          name: "edge",
          max_concurrent_calls: 10,
        })
      ).body.data.key as string;
      await call(first.baseUrl, "POST", `/api/v1/campaigns/${campaign.id}/status`, token, {
        action: "start",
      });
      await call(first.baseUrl, "POST", "/api/v1/agents/me/state", token, {
        state: "ready",
        campaign_id: campaign.id,
      });
      const jobs = (
        await call(first.baseUrl, "POST", "/api/v1/nodes/jobs/claim", node, { max: 10 })
      ).body.data.jobs as Json[];
      expect(jobs).toHaveLength(3);
      const at = () => new Date().toISOString();
      await call(first.baseUrl, "POST", `/api/v1/nodes/calls/${jobs[0]?.call_id}/events`, node, {
        type: "ringing",
        at: at(),
      });
      first.process.kill("SIGKILL");
      await first.process.exited;

      const second = await startServer(env);
      running.push(second);
      try {
        // Each call in flight still takes its events, by its id alone.
        for (const job of jobs) {
          const ended = await call(
            second.baseUrl,
            "POST",
            `/api/v1/nodes/calls/${job.call_id}/events`,
            node,
            {
              type: "ended",
              at: at(),
              hangup_cause: "NO_ANSWER",
            },
          );
          expect(ended.body.data.call).toMatchObject({ status: "ended", outcome: "no_answer" });
        }
        const leads = (
          await call(
            second.baseUrl,
            "GET",
            `/api/v1/campaigns/${campaign.id}/lead-lists/${list.id}/leads`,
            token,
          )
        ).body.data.items as Json[];
        expect(leads.map((lead) => lead.state)).toEqual(["Retry", "Retry", "Retry"]);
        const cdrs = await call(second.baseUrl, "GET", "/api/v1/cdrs", token);
        expect(cdrs.body.total).toBe(3);
        // Nothing is dialled twice at once: the retries are not due yet.
        expect(
          (await call(second.baseUrl, "POST", "/api/v1/nodes/jobs/claim", node, { max: 10 })).body
            .data.jobs,
        ).toEqual([]);
      } finally {
        second.process.kill("SIGTERM");
        await second.process.exited;
      }
    },
    SERVER_TEST_TIMEOUT_MS,
  );
});
