import { afterEach, describe, expect, test } from "bun:test";
import { createWorkspace } from "../helpers/app.ts";
import { startLeasedProcess } from "../helpers/leased-process.ts";
import { campaignWithLeads, requestOn } from "../helpers/process-requests.ts";

/**
 * A number's attempt cap holds across processes: two campaigns of one workspace, each owned by
 * its own process, both dial the same Florida number, and two nodes claim, one from each
 * process, at once, round after round. Florida allows three attempts in 24 hours.
 */
const enabled = Boolean(process.env.DATABASE_URL);
const stops: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

/** 17:00Z is noon in Miami. */
const NOON_MIAMI = Date.parse("2026-03-02T17:00:00Z");
/** Florida numbers (305 is Miami), each in both campaigns. */
const PHONES = Array.from({ length: 10 }, (_, index) => `+1305555${2660 + index}`);

describe.skipIf(!enabled)("a number's limits with two processes", () => {
  test("Florida numbers are dialled at most 3 times in 24 h when both processes claim at once", async () => {
    const w = await createWorkspace();
    w.clock.advance(NOON_MIAMI - w.clock.now());
    const processes = [await startLeasedProcess(w.clock), await startLeasedProcess(w.clock)];
    for (const started of processes) stops.push(() => started.stop());
    const admin = await w.login("admin@acme.test");
    // Two nodes, so that the claims do not take turns on a node's own lock.
    const nodes: { key: string }[] = [];
    for (const name of ["edge-a", "edge-b"]) {
      nodes.push(
        (
          await requestOn(processes[0]?.url as string, admin, "POST", "/api/v1/edge-nodes", {
            name,
            max_concurrent_calls: 20,
          })
        ).data,
      );
    }
    // Each process starts, and so owns, one campaign with the number in it.
    for (const [index, started] of processes.entries()) {
      const { campaign } = await campaignWithLeads(
        w,
        started.url,
        admin,
        { name: `Campaign ${index}`, max_attempts: 10, retry_delay_seconds: 60 },
        { phones: PHONES, timezone: "America/New_York" },
      );
      await requestOn(started.url, admin, "POST", `/api/v1/campaigns/${campaign.id}/status`, {
        action: "start",
      });
      for (let agent = 0; agent < PHONES.length; agent++) {
        const email = `agent${index}-${agent}@acme.test`;
        await w.user(w.acme.id, email, "agent");
        await requestOn(started.url, await w.login(email), "POST", "/api/v1/agents/me/state", {
          state: "ready",
          campaign_id: campaign.id,
        });
      }
    }

    let placed = 0;
    for (let round = 0; round < 4; round++) {
      const claims = await Promise.all(
        processes.map((started, index) =>
          requestOn(started.url, nodes[index]?.key as string, "POST", "/api/v1/nodes/jobs/claim", {
            max: 20,
          }),
        ),
      );
      for (const [index, claim] of claims.entries()) {
        for (const job of claim.data.jobs as { call_id: string }[]) {
          placed++;
          await requestOn(
            processes[0]?.url as string,
            nodes[index]?.key as string,
            "POST",
            `/api/v1/nodes/calls/${job.call_id}/events`,
            {
              type: "ended",
              at: new Date(w.clock.now()).toISOString(),
              hangup_cause: "NO_ANSWER",
            },
          );
        }
      }
      w.clock.advance(61_000);
    }
    expect(placed).toBe(3 * PHONES.length);
  });
});
