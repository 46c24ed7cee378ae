import { afterEach, describe, expect, test } from "bun:test";
import { Baresip, baresipInstalled } from "../helpers/baresip.ts";
import { dialerOnLoopback, startSipNode, until } from "../helpers/edge.ts";
import { portBlock, sipPort } from "../helpers/ports.ts";

/**
 * The node against Debian's baresip: one instance behind the "trunk" holds the leads (one
 * account per number: one answers, one rings, one is made busy over ctrl_tcp), another is
 * the agent's phone. .ci/run installs baresip-core; without it this file is skipped.
 */

const installed = baresipInstalled();
if (!installed)
  console.warn(
    "baresip is not installed (apt-get install baresip-core): the baresip tests are skipped",
  );

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const rtpRange = (): [number, number] => portBlock(100);

describe.skipIf(!installed)("edge node against baresip", () => {
  test("busy, no answer, then an answer bridged to the agent's baresip: RTP both ways between the phones", async () => {
    const BUSY = "+14155552671";
    const RINGS = "+14155552672";
    const ANSWERS = "+14155552673";
    const leadRtp = rtpRange();
    const agentRtp = rtpRange();
    const leads = await Baresip.start({
      sipPort: sipPort(),
      ctrlPort: sipPort(),
      rtpPorts: leadRtp,
      accounts: [
        { user: BUSY, answer: "manual" },
        { user: RINGS, answer: "manual" },
        { user: ANSWERS, answer: "auto" },
      ],
    });
    cleanups.push(() => leads.stop());
    leads.onEvent((event) => {
      if (event.type === "CALL_INCOMING" && event.accountaor?.startsWith(`sip:${BUSY}@`))
        leads.command("hangup");
    });
    const agentPhone = await Baresip.start({
      sipPort: sipPort(),
      ctrlPort: sipPort(),
      rtpPorts: agentRtp,
      accounts: [{ user: "agent", answer: "auto" }],
    });
    cleanups.push(() => agentPhone.stop());

    const service = await dialerOnLoopback({
      phones: [BUSY, RINGS, ANSWERS],
      agentUri: `sip:agent@127.0.0.1:${agentPhone.sipPort}`,
    });
    cleanups.push(() => service.server.stop(true));
    const edge = await startSipNode({
      baseUrl: service.baseUrl,
      nodeKey: service.nodeKey,
      port: sipPort(),
      trunkPort: leads.sipPort,
      maxRingSeconds: 2,
    });
    cleanups.push(() => edge.stop(1_000));
    await service.start();

    const established = await until(
      () => agentPhone.events.find((e) => e.type === "CALL_ESTABLISHED"),
      "the agent's phone to answer",
      20_000,
    );
    expect(established.accountaor).toContain("sip:agent@");
    // Each phone receives RTP from the other's ports, never from the node: the media flows
    // between them once the lead is re-INVITEd to the agent's offer.
    const within = (range: [number, number]) => (source: { address: string; port: number }) =>
      source.address === "127.0.0.1" && source.port >= range[0] && source.port <= range[1];
    await until(
      () =>
        leads.rtpSources().some(within(agentRtp)) && agentPhone.rtpSources().some(within(leadRtp))
          ? true
          : undefined,
      "RTP both ways between the lead and the agent's phone",
      10_000,
    );
    await until(
      () => (agentPhone.audioBitrates().a > 0 && agentPhone.audioBitrates().b > 0) || undefined,
      "audio on the agent's phone",
    );
    await Bun.sleep(1_200);
    // The lead hangs up: its account is made the current one, then its call is hung up.
    leads.command("uafind", `sip:${ANSWERS}@127.0.0.1:${leads.sipPort}`);
    await Bun.sleep(100);
    leads.command("hangup");
    const rows = await until(async () => {
      const all = await service.cdrs();
      return all.length === 3 ? all : undefined;
    }, "three CDRs");
    const byPhone = Object.fromEntries(rows.map((r) => [r.phone, r]));
    expect(byPhone[BUSY]).toMatchObject({ outcome: "busy", hangup_cause: "USER_BUSY" });
    expect(byPhone[RINGS]).toMatchObject({ outcome: "no_answer", hangup_cause: "NO_ANSWER" });
    expect(byPhone[ANSWERS]).toMatchObject({
      outcome: "answered",
      hangup_cause: "NORMAL_CLEARING",
      agent_id: service.agentId,
    });
    expect(byPhone[ANSWERS].talk_seconds).toBeGreaterThanOrEqual(1);
    expect(byPhone[ANSWERS].bridge_ms).toBeGreaterThan(0);
    // The lead's hang-up reached the agent's phone too.
    await until(
      () => agentPhone.events.find((e) => e.type === "CALL_CLOSED"),
      "the agent's phone to hang up",
    );
    await until(() => edge.node.liveCallIds.length === 0 || undefined, "no call left on the node");
    expect(await service.inFlight()).toBe(0);
  }, 60_000);
});
