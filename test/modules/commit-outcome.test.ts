import { expect, test } from "bun:test";
import { DatabaseUnavailableError } from "../../db/availability.ts";
import { commitStatusChanges } from "../../db/queries/campaigns.ts";
import { GroupCommit } from "../../src/lib/group-commit.ts";
import { createWorkspace } from "../helpers/app.ts";

/**
 * A status change whose COMMIT went through but whose connection dropped before the answer:
 * the caller hears 503 `outcome_unknown`, the campaign's memory does not claim the change,
 * and repeating the request with its Idempotency-Key settles it from what the database holds.
 */
test("a commit of unknown outcome is 503 outcome_unknown, and its key settles it on retry", async () => {
  const w = await createWorkspace();
  const admin = await w.login("admin@acme.test");
  const created = await w.request("POST", "/api/v1/campaigns", {
    token: admin,
    body: { name: "Uncertain" },
  });
  const id = created.body.data.campaign.id as string;
  const healthy = w.deps.statusCommits;
  // The change is written, then the connection is "lost" before the reply.
  w.deps.statusCommits = new GroupCommit(
    async (changes) => {
      await commitStatusChanges(w.deps.rawDb, changes);
      throw new DatabaseUnavailableError(
        "outcome_unknown",
        "database connection lost during COMMIT",
      );
    },
    1,
    1,
  );
  const start = {
    token: admin,
    body: { action: "start" },
    headers: { "idempotency-key": "k-lost" },
  };
  const lost = await w.request("POST", `/api/v1/campaigns/${id}/status`, start);
  expect([lost.status, lost.body.code]).toEqual([503, "outcome_unknown"]);
  expect(lost.headers.get("retry-after")).toBe("1");
  w.deps.statusCommits = healthy;
  // On PostgreSQL the lost connection opened the availability breaker; its probe closes it.
  for (let waited = 0; !w.deps.availability.available && waited < 3_000; waited += 50)
    await Bun.sleep(50);

  const retried = await w.request("POST", `/api/v1/campaigns/${id}/status`, start);
  expect(retried.status).toBe(200);
  expect(retried.headers.get("idempotent-replayed")).toBe("true");
  expect(retried.body.data.campaign.status).toBe("running");
  const history = await w.request("GET", `/api/v1/campaigns/${id}/history`, { token: admin });
  expect(history.body.data.items).toHaveLength(1);
  const read = await w.request("GET", `/api/v1/campaigns/${id}`, { token: admin });
  expect(read.body.data.campaign.status).toBe("running");
});
