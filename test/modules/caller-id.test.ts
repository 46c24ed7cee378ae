import { describe, expect, test } from "bun:test";
import { createWorkspace } from "../helpers/app.ts";

/** The number shown to the called: the law asks for one they could call back. */
describe("a caller ID", () => {
  test("that is E.164 in form but no valid number is refused, on a campaign and on a list", async () => {
    const w = await createWorkspace();
    const admin = await w.login("admin@acme.test");
    const refusedCampaign = await w.request("POST", "/api/v1/campaigns", {
      token: admin,
      body: { name: "Spring", caller_id: "+10000000000" },
    });
    expect(refusedCampaign.status).toBe(422);
    expect(refusedCampaign.body.field_errors[0].field).toBe("caller_id");
    const created = await w.request("POST", "/api/v1/campaigns", {
      token: admin,
      body: { name: "Spring", caller_id: "+14155550100" },
    });
    expect(created.status).toBe(201);
    const id = created.body.data.campaign.id as string;
    const patched = await w.request("PATCH", `/api/v1/campaigns/${id}`, {
      token: admin,
      body: { caller_id: "+15555550100", version: created.body.data.campaign.version },
    });
    expect(patched.status).toBe(422);
    expect(patched.body.field_errors[0].field).toBe("caller_id");
    for (const [callerId, status] of [
      ["+999", 422],
      ["+15555550100", 422],
      ["+442071838750", 201],
    ] as const) {
      const list = await w.request("POST", `/api/v1/campaigns/${id}/lead-lists`, {
        token: admin,
        body: { name: `L ${callerId}`, caller_id: callerId },
      });
      expect({ callerId, status: list.status }).toEqual({ callerId, status });
    }
  });
});
