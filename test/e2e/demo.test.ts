import { afterAll, expect, test } from "bun:test";
import type { Subprocess } from "bun";

const ROOT = new URL("../..", import.meta.url).pathname;
let demo: Subprocess<"ignore", "pipe", "inherit"> | undefined;

afterAll(async () => {
  demo?.kill("SIGTERM");
  await demo?.exited;
});

test("npm run demo prints its sign-ins and its simulated agents take calls within a minute", async () => {
  demo = Bun.spawn([process.execPath, "src/demo/index.ts"], {
    cwd: ROOT,
    env: { ...process.env, PORT: "0", HOST: "127.0.0.1" },
    stdout: "pipe",
    stderr: "inherit",
  });
  const reader = demo.stdout.getReader();
  const decoder = new TextDecoder();
  let printed = "";
  while (!printed.includes("Ctrl-C")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the demo stopped:\n${printed}`);
    printed += decoder.decode(value);
  }
  expect(printed).toContain("supervisor@demo.test");
  expect(printed).toContain("you@demo.test");
  const baseUrl = /Dialer demo at (http:\/\/\S+)/.exec(printed)?.[1] as string;
  const login = await fetch(`${baseUrl}/api/v1/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      email: "supervisor@demo.test",
      password: /supervisor@demo\.test\s+(.+?)\s+→/.exec(printed)?.[1],
      tenant_domain: "demo.test",
    }),
  });
  expect(login.status).toBe(200);
  const { token } = ((await login.json()) as { data: { token: string } }).data;
  const deadline = Date.now() + 60_000;
  let agents: { email: string; state: string }[] = [];
  let ended = 0;
  while (Date.now() < deadline) {
    const listed = await fetch(`${baseUrl}/api/v1/agents`, {
      headers: { authorization: `Bearer ${token}` },
    });
    agents = ((await listed.json()) as { data: { items: typeof agents } }).data.items;
    const records = await fetch(`${baseUrl}/api/v1/cdrs`, {
      headers: { authorization: `Bearer ${token}` },
    });
    ended = ((await records.json()) as { total: number }).total;
    if (ended > 0 && agents.some((agent) => agent.state === "on_call")) break;
    await Bun.sleep(1_000);
  }
  expect(agents.map((agent) => agent.email).sort()).toEqual([
    "sim1@demo.test",
    "sim2@demo.test",
    "sim3@demo.test",
    "sim4@demo.test",
  ]);
  expect(ended).toBeGreaterThan(0);
  expect(agents.some((agent) => agent.state === "on_call")).toBe(true);
}, 120_000);
