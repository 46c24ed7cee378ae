import { beforeEach, describe, expect, test } from "bun:test";
import { findApiKeyByHash, findNodeByHash } from "../../db/queries/access.ts";
import { CredentialDirectory, type CredentialFinders } from "../../src/identity/credentials.ts";
import { silentLogger } from "../../src/logger.ts";
import { createWorkspace } from "../helpers/app.ts";

let w: Awaited<ReturnType<typeof createWorkspace>>;
let adminToken: string;
beforeEach(async () => {
  w = await createWorkspace();
  adminToken = await w.login("admin@acme.test");
});

/** Finders over the real database that count their reads and can hold one after it read. */
function watchedFinders() {
  const counts = { apiKey: 0, node: 0 };
  let held:
    | { reached: PromiseWithResolvers<void>; release: PromiseWithResolvers<void> }
    | undefined;
  const gate = async () => {
    const hold = held;
    held = undefined;
    if (!hold) return;
    hold.reached.resolve();
    await hold.release.promise;
  };
  const finders: CredentialFinders = {
    async apiKey(hash) {
      counts.apiKey++;
      const row = await findApiKeyByHash(w.deps.db, hash);
      await gate();
      return row;
    },
    async node(hash) {
      counts.node++;
      const row = await findNodeByHash(w.deps.db, hash);
      await gate();
      return row;
    },
  };
  /** The next read is held after it read the database, until `release()`. */
  const holdNextRead = () => {
    const hold = { reached: Promise.withResolvers<void>(), release: Promise.withResolvers<void>() };
    held = hold;
    return { read: () => hold.reached.promise, release: () => hold.release.resolve() };
  };
  return { counts, finders, holdNextRead };
}

const useDirectory = (finders: CredentialFinders, options = {}) => {
  w.deps.credentials = new CredentialDirectory(w.deps.db, silentLogger, {
    finders,
    now: () => w.clock.now(),
    ...options,
  });
};

const randomKey = () =>
  `svc_key_${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url")}`;

const newApiKey = async () => {
  const response = await w.request("POST", "/api/v1/api-keys", {
    token: adminToken,
    body: { name: "integration", scopes: { campaigns: "read" } },
  });
  expect(response.status).toBe(201);
  return response.body.data as { key: string; api_key: { id: string } };
};

describe("a revocation is never undone by a lookup in flight", () => {
  test("API key: a read that predates the revocation does not let the key in", async () => {
    const watched = watchedFinders();
    const { key, api_key } = await newApiKey();
    useDirectory(watched.finders);
    const hold = watched.holdNextRead();
    const inFlight = w.request("GET", "/api/v1/campaigns", { token: key });
    await hold.read();
    const revoke = await w.request("DELETE", `/api/v1/api-keys/${api_key.id}`, {
      token: adminToken,
    });
    expect(revoke.status).toBe(200);
    hold.release();
    expect((await inFlight).status).toBe(401);
    expect((await w.request("GET", "/api/v1/campaigns", { token: key })).status).toBe(401);
    expect(watched.counts.apiKey).toBe(1);
  });

  test("node key: the same holds for edge nodes", async () => {
    const watched = watchedFinders();
    const created = await w.request("POST", "/api/v1/edge-nodes", {
      token: adminToken,
      body: { name: "edge-1", max_concurrent_calls: 5 },
    });
    const { key, edge_node } = created.body.data;
    useDirectory(watched.finders);
    const hold = watched.holdNextRead();
    const beat = () =>
      w.request("POST", "/api/v1/nodes/heartbeat", { token: key, body: { active_calls: 0 } });
    const inFlight = beat();
    await hold.read();
    const revoke = await w.request("DELETE", `/api/v1/edge-nodes/${edge_node.id}`, {
      token: adminToken,
    });
    expect(revoke.status).toBe(200);
    hold.release();
    expect((await inFlight).status).toBe(401);
    expect((await beat()).status).toBe(401);
  });

  test("an older row never replaces a revoked one in the cache", async () => {
    const { key, api_key } = await newApiKey();
    expect((await w.request("GET", "/api/v1/campaigns", { token: key })).status).toBe(200);
    const before = await findApiKeyByHash(
      w.deps.db,
      new Bun.CryptoHasher("sha256").update(key).digest("hex"),
    );
    await w.request("DELETE", `/api/v1/api-keys/${api_key.id}`, { token: adminToken });
    w.deps.credentials.apiKeyChanged(before as NonNullable<typeof before>);
    expect((await w.request("GET", "/api/v1/campaigns", { token: key })).status).toBe(401);
  });
});

describe("unknown keys", () => {
  test("real keys never spend the lookups rationed for guesses", async () => {
    const watched = watchedFinders();
    const keys = [];
    for (let i = 0; i < 5; i++) keys.push((await newApiKey()).key);
    useDirectory(watched.finders, { unknownLookupsPerSecond: 2 });
    for (const key of keys) {
      expect((await w.request("GET", "/api/v1/campaigns", { token: key })).status).toBe(200);
    }
    expect(watched.counts.apiKey).toBe(5);
    for (let i = 0; i < 2; i++) {
      expect((await w.request("GET", "/api/v1/campaigns", { token: randomKey() })).status).toBe(
        401,
      );
    }
    expect((await w.request("GET", "/api/v1/campaigns", { token: randomKey() })).status).toBe(503);
  });

  test("guesses never evict a real key, and each distinct guess is read once", async () => {
    const watched = watchedFinders();
    const { key } = await newApiKey();
    useDirectory(watched.finders, {
      knownEntries: 50,
      unknownEntries: 50,
      unknownLookupsPerSecond: 20,
    });
    expect((await w.request("GET", "/api/v1/campaigns", { token: key })).status).toBe(200);
    const guess = randomKey();
    for (let i = 0; i < 200; i++) {
      w.clock.advance(100);
      const response = await w.request("GET", "/api/v1/campaigns", {
        token: i % 2 ? guess : randomKey(),
      });
      expect(response.status).toBe(401);
    }
    expect(watched.counts.apiKey).toBe(1 + 100 + 1);
    expect(w.deps.credentials.sizes.keys.unknown).toBe(50);
    const reads = watched.counts.apiKey;
    expect((await w.request("GET", "/api/v1/campaigns", { token: key })).status).toBe(200);
    expect(watched.counts.apiKey).toBe(reads);
  });

  test("database reads that find nothing are rationed per second", async () => {
    const watched = watchedFinders();
    const { key } = await newApiKey();
    useDirectory(watched.finders, { unknownLookupsPerSecond: 20 });
    expect((await w.request("GET", "/api/v1/campaigns", { token: key })).status).toBe(200);
    const statuses = new Set<number>();
    for (let i = 0; i < 100; i++) {
      const response = await w.request("GET", "/api/v1/campaigns", { token: randomKey() });
      statuses.add(response.status);
      if (response.status === 503) expect(response.headers.get("retry-after")).toBe("1");
    }
    expect([...statuses].sort()).toEqual([401, 503]);
    // The real key's read, then at most one second's worth of reads that found nothing.
    expect(watched.counts.apiKey).toBe(1 + 20);
    expect((await w.request("GET", "/api/v1/campaigns", { token: key })).status).toBe(200);
    w.clock.advance(1_000);
    expect((await w.request("GET", "/api/v1/campaigns", { token: randomKey() })).status).toBe(401);
  });
});
