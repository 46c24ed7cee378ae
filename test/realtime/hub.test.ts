import { describe, expect, test } from "bun:test";
import { silentLogger } from "../../src/logger.ts";
import {
  agentsTopic,
  agentTopic,
  campaignsTopic,
  campaignTopic,
  type Publisher,
  type PushRelay,
  RealtimeHub,
  STATS_INTERVAL_MS,
} from "../../src/realtime/hub.ts";

const TENANT = "tenant-a";
const OTHER_TENANT = "tenant-b";

/** A publisher that records what it is given, with the turn of the event loop it came in. */
function recordingPublisher(listeners: (topic: string) => number = () => 1) {
  let turn = 0;
  let counting = true;
  const tick = () => {
    turn++;
    if (counting) setImmediate(tick);
  };
  setImmediate(tick);
  const published: { topic: string; message: Record<string, unknown>; at: number; turn: number }[] =
    [];
  const publisher: Publisher = {
    publish(topic, data) {
      published.push({ topic, message: JSON.parse(data), at: performance.now(), turn });
      return data.length;
    },
    subscriberCount: listeners,
  };
  const stop = () => {
    counting = false;
  };
  return { publisher, published, stop };
}

const statsFor = (campaignId: string) => async () => ({ campaign: campaignId });

describe("campaign.stats pushes", () => {
  test("asks within an interval become one message per campaign, pushed together", async () => {
    const hub = new RealtimeHub(silentLogger, (_tenant, campaignId) => statsFor(campaignId)());
    const { publisher, published, stop } = recordingPublisher();
    hub.attach(publisher);
    for (let i = 0; i < 10; i++) hub.statsChanged(TENANT, "a");
    hub.statsChanged(TENANT, "b");
    await Bun.sleep(50);
    const first = published.filter((entry) => entry.topic === campaignsTopic(TENANT));
    expect(first.map((entry) => entry.message.campaign_id).sort()).toEqual(["a", "b"]);
    // Both campaigns' messages, to both of their topics, in one turn of the event loop.
    expect(new Set(published.map((entry) => entry.turn)).size).toBe(1);
    expect(published.map((entry) => entry.topic).sort()).toEqual(
      [
        campaignTopic(TENANT, "a"),
        campaignTopic(TENANT, "b"),
        campaignsTopic(TENANT),
        campaignsTopic(TENANT),
      ].sort(),
    );
    hub.close();
    stop();
  });

  test("a campaign asked for all the time gets at most one message per interval", async () => {
    const hub = new RealtimeHub(silentLogger, (_tenant, campaignId) => statsFor(campaignId)());
    const { publisher, published, stop } = recordingPublisher();
    hub.attach(publisher);
    const started = performance.now();
    while (performance.now() - started < 4 * STATS_INTERVAL_MS + 100) {
      hub.statsChanged(TENANT, "a");
      await Bun.sleep(10);
    }
    await Bun.sleep(STATS_INTERVAL_MS + 50);
    const times = published
      .filter((entry) => entry.topic === campaignTopic(TENANT, "a"))
      .map((entry) => entry.at);
    expect(times.length).toBeGreaterThanOrEqual(4);
    expect(times.length).toBeLessThanOrEqual(6);
    for (let i = 1; i < times.length; i++) {
      // Timers may fire a millisecond early on a loaded machine.
      expect((times[i] as number) - (times[i - 1] as number)).toBeGreaterThan(
        STATS_INTERVAL_MS - 2,
      );
    }
    hub.close();
    stop();
  });

  test("nothing is computed or pushed for a campaign nobody listens to", async () => {
    let computed = 0;
    const hub = new RealtimeHub(silentLogger, async () => {
      computed++;
      return {};
    });
    const { publisher, published, stop } = recordingPublisher(() => 0);
    hub.attach(publisher);
    hub.statsChanged(TENANT, "a");
    await Bun.sleep(50);
    expect(computed).toBe(0);
    expect(published).toEqual([]);
    hub.close();
    stop();
  });
});

/**
 * A relay that records what it is given; `active` says whether another process is there, and
 * `elsewhere` the tenants another process has supervisors of.
 */
function recordingRelay(active: boolean, elsewhere: string[] = [TENANT]) {
  const sent: { topics: string[]; text: string }[] = [];
  let announced = 0;
  const relay: PushRelay & { active: boolean } = {
    active,
    inCommit: { channel: "pushes", prefix: '{"m":[', suffix: "]}", maxBytes: 1_000 },
    send: (topics, text) => sent.push({ topics, text }),
    supervisedElsewhere: (tenantId) => elsewhere.includes(tenantId),
    supervisorsChanged: () => {
      announced++;
    },
  };
  return { relay, sent, announced: () => announced };
}

describe("messages", () => {
  test("a message no socket subscribes to is not serialised; one some topic has is published to every topic", () => {
    const hub = new RealtimeHub(silentLogger, async () => ({}));
    const listening = new Set<string>();
    const { publisher, published, stop } = recordingPublisher((topic) =>
      listening.has(topic) ? 1 : 0,
    );
    hub.attach(publisher);
    let serialised = 0;
    const message = { type: "call.event", toJSON: () => ({ type: "call.event", n: ++serialised }) };
    hub.toCampaign(TENANT, "a", message);
    hub.toAgent(TENANT, "u", message);
    expect(serialised).toBe(0);
    expect(published).toEqual([]);
    listening.add(campaignTopic(TENANT, "a"));
    hub.toCampaign(TENANT, "a", message);
    expect(serialised).toBe(1);
    expect(published.map((entry) => entry.topic)).toEqual([
      campaignsTopic(TENANT),
      campaignTopic(TENANT, "a"),
    ]);
    hub.close();
    stop();
  });
});

describe("pushes to other processes", () => {
  test("a message goes to the relay as the text published here, only while another process is there", () => {
    const hub = new RealtimeHub(silentLogger, async () => ({}));
    const { publisher, published, stop } = recordingPublisher();
    hub.attach(publisher);
    const { relay, sent } = recordingRelay(false);
    const detach = hub.relayTo(relay);
    hub.toCampaign(TENANT, "a", { type: "campaign.status", status: "running" });
    expect(sent).toEqual([]);
    relay.active = true;
    hub.toCampaign(TENANT, "a", { type: "campaign.status", status: "paused" });
    expect(sent).toEqual([
      {
        topics: [campaignsTopic(TENANT), campaignTopic(TENANT, "a")],
        text: JSON.stringify({ type: "campaign.status", status: "paused" }),
      },
    ]);
    expect(published).toHaveLength(4);
    detach();
    hub.toCampaign(TENANT, "a", { type: "campaign.status", status: "running" });
    expect(sent).toHaveLength(1);
    hub.close();
    stop();
  });

  test("a campaign message goes in a write's commit while another process is there; published after, it is not relayed again", () => {
    const hub = new RealtimeHub(silentLogger, async () => ({}));
    const { publisher, published, stop } = recordingPublisher();
    hub.attach(publisher);
    const { relay, sent } = recordingRelay(false);
    hub.relayTo(relay);
    const message = { type: "campaign.status", status: "paused" };
    expect(hub.campaignMessageInCommit(TENANT, "a", message)).toBeUndefined();
    relay.active = true;
    const notice = hub.campaignMessageInCommit(TENANT, "a", message);
    expect(notice?.notices).toBe(relay.inCommit);
    expect(JSON.parse(notice?.entry ?? "")).toEqual([
      [campaignsTopic(TENANT), campaignTopic(TENANT, "a")],
      JSON.stringify(message),
    ]);
    // Larger than a notification carries: the relay stores it instead.
    expect(hub.campaignMessageInCommit(TENANT, "a", { text: "x".repeat(1_000) })).toBeUndefined();
    hub.toCampaign(TENANT, "a", message, true);
    expect(published).toHaveLength(2);
    expect(sent).toEqual([]);
    hub.close();
    stop();
  });

  test("a supervisor message goes to other processes only while one has a supervisor of the tenant; an agent's goes to all", () => {
    const hub = new RealtimeHub(silentLogger, async () => ({}));
    const { publisher, published, stop } = recordingPublisher();
    hub.attach(publisher);
    const { relay, sent } = recordingRelay(true, []);
    hub.relayTo(relay);
    const message = { type: "campaign.status", status: "paused" };
    expect(hub.campaignMessageInCommit(TENANT, "a", message)).toBeUndefined();
    hub.toCampaign(TENANT, "a", message);
    hub.toSupervisors(TENANT, { type: "agent.state" });
    hub.toAgent(TENANT, "u", { type: "agent.state" });
    expect(sent.map((entry) => entry.topics)).toEqual([[agentTopic(TENANT, "u")]]);
    // Every push is still published here.
    expect(published).toHaveLength(4);
    const supervised = recordingRelay(true, [TENANT]);
    hub.relayTo(supervised.relay);
    expect(hub.campaignMessageInCommit(TENANT, "a", message)).toBeDefined();
    hub.toSupervisors(TENANT, { type: "agent.state" });
    expect(supervised.sent.map((entry) => entry.topics)).toEqual([[agentsTopic(TENANT)]]);
    hub.close();
    stop();
  });

  test("a tenant's first supervisor here gets a second snapshot once the others have surely heard of it", async () => {
    const hub = new RealtimeHub(silentLogger, async () => ({}), 20);
    const caughtUp: (string | undefined)[] = [];
    hub.onPushesMissed((supervisorsOf) => caughtUp.push(supervisorsOf));
    hub.supervisorSocket(TENANT, 1);
    hub.supervisorSocket(TENANT, -1);
    const { relay } = recordingRelay(true);
    hub.relayTo(relay);
    hub.supervisorSocket(TENANT, 1);
    hub.supervisorSocket(TENANT, 1);
    expect(caughtUp).toEqual([]);
    await Bun.sleep(60);
    // Alone, nobody held the tenant's pushes back: no second snapshot.
    expect(caughtUp).toEqual([TENANT]);
    hub.pushesMissed();
    expect(caughtUp).toEqual([TENANT, undefined]);
    hub.close();
  });

  test("what another process relayed is published here and not relayed again", () => {
    const hub = new RealtimeHub(silentLogger, async () => ({}));
    const { publisher, published, stop } = recordingPublisher();
    hub.attach(publisher);
    const { relay, sent } = recordingRelay(true);
    hub.relayTo(relay);
    hub.deliver([campaignsTopic(TENANT)], '{"type":"campaign.status"}');
    expect(published.map((entry) => entry.topic)).toEqual([campaignsTopic(TENANT)]);
    expect(sent).toEqual([]);
    hub.close();
    stop();
  });

  test("stats are computed for a tenant supervised on another process though nobody listens here, and only then", async () => {
    let computed = 0;
    const hub = new RealtimeHub(silentLogger, async () => {
      computed++;
      return { calls: 1 };
    });
    // Not even listening itself: the process's server may not be up yet.
    const { relay, sent } = recordingRelay(true);
    hub.relayTo(relay);
    hub.statsChanged(TENANT, "a");
    hub.statsChanged(OTHER_TENANT, "b");
    await Bun.sleep(50);
    expect(computed).toBe(1);
    expect(sent.map((entry) => JSON.parse(entry.text))).toEqual([
      { type: "campaign.stats", campaign_id: "a", stats: { calls: 1 } },
    ]);
    hub.close();
  });

  test("a tenant's first supervisor socket here is announced to the other processes; later ones and closes are not", () => {
    const hub = new RealtimeHub(silentLogger, async () => ({}));
    const { relay, announced } = recordingRelay(true);
    hub.relayTo(relay);
    hub.supervisorSocket(TENANT, 1);
    hub.supervisorSocket(TENANT, 1);
    hub.supervisorSocket(OTHER_TENANT, 1);
    expect(announced()).toBe(2);
    expect(hub.supervisedTenants().sort()).toEqual([TENANT, OTHER_TENANT].sort());
    hub.supervisorSocket(TENANT, -1);
    hub.supervisorSocket(OTHER_TENANT, -1);
    expect(hub.supervisedTenants()).toEqual([TENANT]);
    expect(announced()).toBe(2);
    hub.close();
  });
});
