import { describe, expect, test } from "bun:test";
import { loadEdgeConfig, parseTrunk } from "../../edge/config.ts";

const KEY = "svc_node_abcdefghijklmnopqrstuvwxyz0123456789ABC";
const good = {
  EDGE_API_URL: "http://127.0.0.1:3000/",
  EDGE_NODE_KEY: KEY,
  EDGE_SIP_TRUNK: "sip:trunk.example.com:5080",
};

describe("edge node settings", () => {
  test("defaults", () => {
    const { config } = loadEdgeConfig(good, []);
    expect(config).toMatchObject({
      apiUrl: "http://127.0.0.1:3000",
      trunk: { host: "trunk.example.com", port: 5080, transport: "udp" },
      credentials: null,
      sipAddress: "127.0.0.1",
      sipPort: 5060,
      rtpPorts: { min: 20000, max: 20999 },
      maxRingSeconds: null,
      drainSeconds: 300,
      heartbeatMs: 10_000,
      claimWaitMs: 5_000,
      dryRun: false,
    });
  });

  test("trunks: UDP by default, TCP when asked, 5060 when no port is named", () => {
    expect(parseTrunk("sip:10.0.0.1")).toEqual({ host: "10.0.0.1", port: 5060, transport: "udp" });
    expect(parseTrunk("sip:pbx:5070;transport=tcp")).toEqual({
      host: "pbx",
      port: 5070,
      transport: "tcp",
    });
    for (const bad of ["10.0.0.1", "sips:pbx", "sip:pbx:0", "sip:pbx;transport=tls", "sip:"])
      expect(parseTrunk(bad)).toBeUndefined();
  });

  test("one line per bad value, naming the setting", () => {
    const { config, errors } = loadEdgeConfig(
      {
        EDGE_API_URL: "ftp://x",
        EDGE_NODE_KEY: "svc_key_nope",
        EDGE_SIP_TRUNK: "trunk",
        EDGE_SIP_USERNAME: "u",
        EDGE_SIP_ADDRESS: "300.1.1.1",
        EDGE_SIP_PORT: "70000",
        EDGE_RTP_PORTS: "30000-20000",
        EDGE_MAX_RING_SECONDS: "0",
        EDGE_DRAIN_SECONDS: "-1",
        EDGE_CLAIM_WAIT_SECONDS: "31",
      },
      [],
    );
    expect(config).toBeNull();
    expect(errors.map((line) => line.split(" ")[0])).toEqual([
      "EDGE_API_URL",
      "EDGE_NODE_KEY",
      "EDGE_SIP_TRUNK",
      "EDGE_SIP_PASSWORD",
      "EDGE_SIP_ADDRESS",
      "EDGE_SIP_PORT",
      "EDGE_RTP_PORTS",
      "EDGE_MAX_RING_SECONDS",
      "EDGE_DRAIN_SECONDS",
      "EDGE_CLAIM_WAIT_SECONDS",
    ]);
  });

  test("a ring cap: never below the 15 s the US and UK profiles require", () => {
    const cap = (value: string) =>
      loadEdgeConfig({ ...good, EDGE_MAX_RING_SECONDS: value }, []).config?.maxRingSeconds;
    expect(cap("15")).toBe(15);
    expect(cap("300")).toBe(300);
    for (const bad of ["14", "1", "301"]) {
      const { config, errors } = loadEdgeConfig({ ...good, EDGE_MAX_RING_SECONDS: bad }, []);
      expect(config).toBeNull();
      expect(errors).toEqual([`EDGE_MAX_RING_SECONDS must be 15–300 seconds, not ${bad}`]);
    }
  });

  test("a claim's wait: whole seconds from 1 to the service's 30", () => {
    const wait = (value: string) =>
      loadEdgeConfig({ ...good, EDGE_CLAIM_WAIT_SECONDS: value }, []).config?.claimWaitMs;
    expect(wait("1")).toBe(1_000);
    expect(wait(" 30 ")).toBe(30_000);
    for (const bad of ["0", "31", "2.5", "-1", "5s"]) {
      const { config, errors } = loadEdgeConfig({ ...good, EDGE_CLAIM_WAIT_SECONDS: bad }, []);
      expect(config).toBeNull();
      expect(errors).toEqual([`EDGE_CLAIM_WAIT_SECONDS must be 1–30 seconds, not ${bad}`]);
    }
  });

  test("the dry run needs no trunk; missing settings are named", () => {
    expect(loadEdgeConfig({ ...good, EDGE_SIP_TRUNK: "" }, ["--dry-run"]).config?.dryRun).toBe(
      true,
    );
    expect(loadEdgeConfig({}, []).errors).toHaveLength(3);
  });
});
