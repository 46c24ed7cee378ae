import { afterEach, describe, expect, test } from "bun:test";
import { clientAddress } from "../../src/http-meta.ts";
import { createWorkspace, PASSWORD } from "../helpers/app.ts";

/**
 * The throttle keys on the client address, which only a real socket has: these tests listen
 * on loopback and send real requests.
 */
type Workspace = Awaited<ReturnType<typeof createWorkspace>>;
let w: Workspace | undefined;
afterEach(async () => {
  await w?.app.stop(true);
  w = undefined;
});

async function listening(env: Record<string, string>) {
  w = await createWorkspace({ env: { LOGIN_RATE_LIMIT_PER_MINUTE: "5", ...env } });
  w.app.listen({ port: 0, hostname: "127.0.0.1" });
  const base = `http://127.0.0.1:${w.app.server?.port}`;
  const login = async (password: string, headers: Record<string, string> = {}) => {
    const response = await fetch(`${base}/api/v1/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify({ email: "admin@acme.test", password }),
    });
    const body = (await response.json()) as { code?: string };
    return { status: response.status, headers: response.headers, body };
  };
  return { w, login };
}

describe("login throttle per client address", () => {
  test("successes never count; the failure past the limit is 429 with Retry-After", async () => {
    const { w, login } = await listening({});
    for (let i = 0; i < 20; i++) expect((await login(PASSWORD)).status).toBe(200);
    for (let i = 0; i < 5; i++) expect((await login("wrong password!")).status).toBe(401);
    const refused = await login("wrong password!");
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe("rate_limited");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    // The budget is spent: the address waits, whatever it sends.
    expect((await login(PASSWORD)).status).toBe(429);
    w.clock.advance(60_000);
    expect((await login(PASSWORD)).status).toBe(200);
  });

  test("attempts sent at once past the limit: failures are judged only as far as it goes, successes wait their turn", async () => {
    const { login } = await listening({});
    const wrong = await Promise.all(Array.from({ length: 12 }, () => login("wrong password!")));
    const statuses = wrong.map((answer) => answer.status);
    expect(statuses.filter((status) => status === 401)).toHaveLength(5);
    expect(statuses.filter((status) => status === 429)).toHaveLength(7);
    w?.clock.advance(60_000);
    const right = await Promise.all(Array.from({ length: 12 }, () => login(PASSWORD)));
    expect(right.map((answer) => answer.status)).toEqual(Array(12).fill(200));
  });

  test("behind a trusted proxy, a forged left-most X-Forwarded-For entry changes nothing", async () => {
    const { login } = await listening({ TRUST_PROXY: "true" });
    for (let i = 0; i < 5; i++) {
      const forged = { "x-forwarded-for": `198.51.100.${i}, 203.0.113.7` };
      expect((await login("wrong password!", forged)).status).toBe(401);
    }
    const forged = { "x-forwarded-for": "198.51.100.99, 203.0.113.7" };
    expect((await login("wrong password!", forged)).status).toBe(429);
    // Another client of the same proxy has its own budget.
    const neighbour = { "x-forwarded-for": "203.0.113.8" };
    expect((await login(PASSWORD, neighbour)).status).toBe(200);
  });

  test("without TRUST_PROXY the socket's peer is the address, whatever the header says", async () => {
    const { login } = await listening({});
    for (let i = 0; i < 5; i++) {
      const header = { "x-forwarded-for": `203.0.113.${i}` };
      expect((await login("wrong password!", header)).status).toBe(401);
    }
    expect((await login(PASSWORD, { "x-forwarded-for": "203.0.113.200" })).status).toBe(429);
  });
});

describe("client address", () => {
  const serverFrom = (address: string) => ({ requestIP: () => ({ address }) });
  const requestWith = (forwardedFor?: string) =>
    new Request("http://localhost/", {
      headers: forwardedFor ? { "x-forwarded-for": forwardedFor } : {},
    });
  const proxies = (list: string) => ({ TRUST_PROXY: true, TRUSTED_PROXIES: list });

  test("is the right-most forwarded entry that is no trusted proxy", () => {
    const settings = proxies("127.0.0.1,10.0.0.0/8");
    const request = requestWith("1.1.1.1, 203.0.113.7, 10.1.2.3");
    expect(clientAddress(request, serverFrom("127.0.0.1"), settings)).toBe("203.0.113.7");
    expect(
      clientAddress(requestWith("2001:db8::7"), serverFrom("::ffff:127.0.0.1"), settings),
    ).toBe("2001:db8::7");
    expect(clientAddress(requestWith("[2001:db8::8]:443"), serverFrom("10.0.0.1"), settings)).toBe(
      "2001:db8::8",
    );
  });

  test("is the peer when the peer is no trusted proxy, or proxies are not trusted at all", () => {
    const request = requestWith("203.0.113.7");
    expect(clientAddress(request, serverFrom("192.0.2.1"), proxies("127.0.0.1"))).toBe("192.0.2.1");
    const off = { TRUST_PROXY: false, TRUSTED_PROXIES: "127.0.0.1" };
    expect(clientAddress(request, serverFrom("127.0.0.1"), off)).toBe("127.0.0.1");
    expect(clientAddress(request, null, proxies("127.0.0.1"))).toBeUndefined();
  });

  test("stops at the last trusted hop before an entry that is no address", () => {
    const settings = proxies("127.0.0.1,10.0.0.0/8");
    const request = requestWith("203.0.113.7, not-an-address, 10.0.0.9");
    expect(clientAddress(request, serverFrom("127.0.0.1"), settings)).toBe("10.0.0.9");
    expect(
      clientAddress(requestWith("10.0.0.5, 10.0.0.9"), serverFrom("127.0.0.1"), settings),
    ).toBe("10.0.0.5");
    expect(clientAddress(requestWith(), serverFrom("127.0.0.1"), settings)).toBe("127.0.0.1");
  });
});
