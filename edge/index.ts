/**
 * The reference edge node: `npm run edge-node` (settings in README.md), or with `--dry-run`
 * to play calls from the simulator's model without SIP.
 */
import { loadEdgeConfig } from "./config.ts";
import { DryRunPlacer } from "./dry-run-placer.ts";
import { EdgeNode } from "./node.ts";
import type { Placer } from "./placer.ts";
import { RtpPorts } from "./rtp-ports.ts";
import { ServiceClient, ServiceError } from "./service-client.ts";
import { SipAdapter } from "./sip-adapter.ts";
import { SipPlacer } from "./sip-placer.ts";

const log = (line: string) => console.log(`${new Date().toISOString()} ${line}`);

const loaded = loadEdgeConfig(process.env, process.argv.slice(2));
if (!loaded.config) {
  for (const error of loaded.errors) console.error(error);
  process.exit(2);
}
const config = loaded.config;

const client = new ServiceClient(config.apiUrl, config.nodeKey, undefined, (what, error) =>
  log(`retrying ${what}: ${String(error)}`),
);

let adapter: SipAdapter | undefined;
let placer: Placer;
if (config.dryRun) placer = new DryRunPlacer();
else {
  const trunk = config.trunk;
  if (!trunk) throw new Error("unreachable: the trunk is checked with the settings");
  adapter = new SipAdapter({
    address: config.sipAddress,
    port: config.sipPort,
    trunk,
    credentials: config.credentials,
    log,
  });
  adapter.start();
  placer = new SipPlacer(
    adapter,
    new RtpPorts(config.sipAddress, config.rtpPorts.min, config.rtpPorts.max),
  );
}

const node = new EdgeNode({
  client,
  placer,
  maxRingSeconds: config.maxRingSeconds,
  heartbeatMs: config.heartbeatMs,
  claimWaitMs: config.claimWaitMs,
  log,
});

const drainAndExit = async (signal: string) => {
  log(`${signal}: no more claims; waiting up to ${config.drainSeconds} s for live calls`);
  await node.stop(config.drainSeconds * 1000);
  adapter?.stop();
  log("every call ended and reported; exiting");
  process.exit(0);
};

// Signals are heard from the start: a node still waiting for its service stops as cleanly.
const starting = new AbortController();
let up = false;
let signalled: string | undefined;
const onSignal = (signal: string) => {
  if (signalled) return;
  signalled = signal;
  if (up) void drainAndExit(signal);
  else starting.abort();
};
process.on("SIGTERM", () => onSignal("SIGTERM"));
process.on("SIGINT", () => onSignal("SIGINT"));

try {
  await node.start(starting.signal);
} catch (error) {
  adapter?.stop();
  if (signalled) {
    log(`${signalled} before the service answered; exiting`);
    process.exit(0);
  }
  const keyRefused =
    error instanceof ServiceError && (error.status === 401 || error.status === 403);
  console.error(
    keyRefused
      ? `the service at ${config.apiUrl} refused the node key (EDGE_NODE_KEY): ${String(error)}`
      : `the service at ${config.apiUrl} refused the node: ${String(error)}`,
  );
  process.exit(1);
}
up = true;
log(
  `edge node up: ${config.dryRun ? "dry run (no SIP)" : `SIP on ${config.sipAddress}:${config.sipPort}`}, ` +
    `up to ${node.maxConcurrentCalls} calls`,
);
// A signal heard as the first heartbeat got through: the node is up, so it drains.
if (signalled) await drainAndExit(signalled);
