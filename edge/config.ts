/** The edge node's settings, read from the environment once and checked at start. */

export interface TrunkAddress {
  host: string;
  port: number;
  transport: "udp" | "tcp";
}

export interface EdgeConfig {
  /** The service's base URL, without `/api/v1`. */
  apiUrl: string;
  nodeKey: string;
  /** Absent in dry-run mode. */
  trunk: TrunkAddress | null;
  credentials: { user: string; password: string } | null;
  sipAddress: string;
  sipPort: number;
  rtpPorts: { min: number; max: number };
  /** Caps each job's `timeout_seconds` when set. */
  maxRingSeconds: number | null;
  /** How long `SIGTERM` waits for live calls before hanging them up. */
  drainSeconds: number;
  heartbeatMs: number;
  /** How long one claim waits for jobs when there are none yet (the service allows 30 s). */
  claimWaitMs: number;
  dryRun: boolean;
}

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

function port(value: string): number | undefined {
  const n = Number(value);
  return /^\d{1,5}$/.test(value) && n >= 1 && n <= 65_535 ? n : undefined;
}

function integer(value: string, min: number, max: number): number | undefined {
  const n = Number(value);
  return /^\d+$/.test(value) && n >= min && n <= max ? n : undefined;
}

/** `sip:host:port`, optionally `;transport=tcp`; the port defaults to 5060. */
export function parseTrunk(value: string): TrunkAddress | undefined {
  const match = /^sip:([A-Za-z0-9.-]+)(?::(\d{1,5}))?(?:;transport=(udp|tcp))?$/i.exec(
    value.trim(),
  );
  if (!match?.[1]) return undefined;
  const trunkPort = match[2] === undefined ? 5060 : port(match[2]);
  if (trunkPort === undefined) return undefined;
  return {
    host: match[1],
    port: trunkPort,
    transport: (match[3]?.toLowerCase() as "udp" | "tcp" | undefined) ?? "udp",
  };
}

/**
 * Reads the settings; a bad value is one line in `errors`, naming the variable. Nothing
 * else is checked here: the service's reply to the first heartbeat says whether the key works.
 */
export function loadEdgeConfig(
  env: Record<string, string | undefined>,
  argv: readonly string[],
): { config: EdgeConfig; errors: [] } | { config: null; errors: string[] } {
  const errors: string[] = [];
  const dryRun = argv.includes("--dry-run");
  const read = (name: string) => env[name]?.trim() || undefined;

  const apiUrl = read("EDGE_API_URL");
  let base = "";
  if (!apiUrl)
    errors.push("EDGE_API_URL is required: the service's base URL, e.g. http://127.0.0.1:3000");
  else {
    try {
      const url = new URL(apiUrl);
      if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error();
      base = url
        .toString()
        .replace(/\/+$/, "")
        .replace(/\/api\/v1$/, "");
    } catch {
      errors.push(`EDGE_API_URL is not an http(s) URL: ${apiUrl}`);
    }
  }

  const nodeKey = read("EDGE_NODE_KEY");
  if (!nodeKey) errors.push("EDGE_NODE_KEY is required: the node's svc_node_… key");
  else if (!/^svc_node_[A-Za-z0-9_-]{16,}$/.test(nodeKey))
    errors.push("EDGE_NODE_KEY must be a node key starting with svc_node_");

  let trunk: TrunkAddress | null = null;
  const trunkText = read("EDGE_SIP_TRUNK");
  if (trunkText) {
    trunk = parseTrunk(trunkText) ?? null;
    if (!trunk)
      errors.push(
        `EDGE_SIP_TRUNK must be sip:host[:port][;transport=udp|tcp], not ${JSON.stringify(trunkText)}`,
      );
  } else if (!dryRun) errors.push("EDGE_SIP_TRUNK is required (or run with --dry-run)");

  const user = read("EDGE_SIP_USERNAME");
  const password = env.EDGE_SIP_PASSWORD;
  if (user && !password) errors.push("EDGE_SIP_PASSWORD is required with EDGE_SIP_USERNAME");
  if (!user && password) errors.push("EDGE_SIP_USERNAME is required with EDGE_SIP_PASSWORD");

  const sipAddress = read("EDGE_SIP_ADDRESS") ?? "127.0.0.1";
  const octets = IPV4.exec(sipAddress);
  if (!octets || octets.slice(1).some((o) => Number(o) > 255))
    errors.push(`EDGE_SIP_ADDRESS must be a local IPv4 address, not ${JSON.stringify(sipAddress)}`);

  const sipPortText = read("EDGE_SIP_PORT") ?? "5060";
  const sipPort = port(sipPortText);
  if (sipPort === undefined)
    errors.push(`EDGE_SIP_PORT must be a port 1–65535, not ${sipPortText}`);

  const rtpText = read("EDGE_RTP_PORTS") ?? "20000-20999";
  const rtp = /^(\d{1,5})-(\d{1,5})$/.exec(rtpText);
  const rtpMin = rtp?.[1] === undefined ? undefined : port(rtp[1]);
  const rtpMax = rtp?.[2] === undefined ? undefined : port(rtp[2]);
  if (rtpMin === undefined || rtpMax === undefined || rtpMax - rtpMin < 1)
    errors.push(`EDGE_RTP_PORTS must be a range such as 20000-20999, not ${rtpText}`);

  // Never below the 15 s of ringing the US and UK profiles require before a call is given up.
  const ringText = read("EDGE_MAX_RING_SECONDS");
  const maxRingSeconds = ringText === undefined ? null : integer(ringText, 15, 300);
  if (maxRingSeconds === undefined)
    errors.push(`EDGE_MAX_RING_SECONDS must be 15–300 seconds, not ${ringText}`);

  const drainText = read("EDGE_DRAIN_SECONDS") ?? "300";
  const drainSeconds = integer(drainText, 0, 86_400);
  if (drainSeconds === undefined)
    errors.push(`EDGE_DRAIN_SECONDS must be 0–86400 seconds, not ${drainText}`);

  // At least a second: a claim that returned at once with nothing would be sent again at once.
  const claimWaitText = read("EDGE_CLAIM_WAIT_SECONDS") ?? "5";
  const claimWaitSeconds = integer(claimWaitText, 1, 30);
  if (claimWaitSeconds === undefined)
    errors.push(`EDGE_CLAIM_WAIT_SECONDS must be 1–30 seconds, not ${claimWaitText}`);

  if (errors.length > 0) return { config: null, errors };
  return {
    config: {
      apiUrl: base,
      nodeKey: nodeKey as string,
      trunk,
      credentials: user && password ? { user, password } : null,
      sipAddress,
      sipPort: sipPort as number,
      rtpPorts: { min: rtpMin as number, max: rtpMax as number },
      maxRingSeconds: maxRingSeconds ?? null,
      drainSeconds: drainSeconds as number,
      heartbeatMs: 10_000,
      claimWaitMs: (claimWaitSeconds as number) * 1000,
      dryRun,
    },
    errors: [],
  };
}
