import { describe, expect, test } from "bun:test";
import net from "node:net";
import {
  answeredWithin,
  DatabaseAvailability,
  DatabaseUnavailableError,
  databaseFailureOf,
} from "../../db/availability.ts";
import { databaseError } from "../../src/plugins/errors.ts";
import { createHarness } from "../helpers/app.ts";

const driverError = (code: string, message = code) => Object.assign(new Error(message), { code });
/** Drizzle wraps what the driver throws: the failure is found through `cause`. */
const wrapped = (cause: unknown) => Object.assign(new Error("Failed query: insert …"), { cause });

describe("database failures", () => {
  const cases: [string, unknown, string | undefined][] = [
    ["refused", driverError("ECONNREFUSED"), "unreachable"],
    ["connect time-out", wrapped(driverError("CONNECT_TIMEOUT")), "unreachable"],
    ["server starting", driverError("57P03", "the database system is starting up"), "unreachable"],
    ["closed mid-query", wrapped(driverError("CONNECTION_CLOSED")), "outcome_unknown"],
    ["admin shutdown", driverError("57P01", "terminating connection"), "outcome_unknown"],
    ["statement time-out", wrapped(driverError("57014", "canceling statement")), "timeout"],
    ["full disk", new Error("ENOSPC: no space left on device, write"), "storage"],
    ["deadlock", wrapped(driverError("40P01", "deadlock detected")), "conflict"],
    ["serialization failure", driverError("40001", "could not serialize access"), "conflict"],
    ["breaker", new DatabaseUnavailableError("unreachable", "refused"), "unreachable"],
    ["unique violation", driverError("23505", "duplicate key"), undefined],
    ["bug", new TypeError("a bug"), undefined],
  ];
  test("each error is classified by what it means for the request", () => {
    for (const [label, error, failure] of cases) {
      expect([label, databaseFailureOf(error)]).toEqual([label, failure]);
    }
  });

  test("a read never has an unknown outcome; a write says it may have happened", () => {
    expect(databaseError("outcome_unknown", "GET").code).toBe("unavailable");
    const write = databaseError("outcome_unknown", "POST");
    expect(write.code).toBe("outcome_unknown");
    expect(write.status).toBe(503);
    expect(write.headers?.["retry-after"]).toBe("1");
    expect(databaseError("timeout", "POST").message).toMatch(/did not answer in time/);
    // A transaction the database undid changed nothing: try again.
    expect(databaseError("conflict", "POST")).toMatchObject({ status: 503, code: "unavailable" });
  });
});

describe("the availability breaker", () => {
  test("opens on a connection failure, refuses at once, and closes when the probe answers", async () => {
    let answering = true;
    const changes: boolean[] = [];
    const availability = new DatabaseAvailability({
      probe: async () => {
        if (!answering) throw driverError("ECONNREFUSED");
      },
      upIntervalMs: 1_000,
      downIntervalMs: 10,
      onChange: (available) => changes.push(available),
    });
    let recovered = 0;
    availability.onRecovered(() => recovered++);
    availability.start();
    expect(availability.available).toBe(true);
    answering = false;
    expect(availability.report(wrapped(driverError("ECONNREFUSED")))).toBe("unreachable");
    expect(availability.available).toBe(false);
    expect(() => availability.assertAvailable()).toThrow(DatabaseUnavailableError);
    // Errors that are not the database's leave it alone.
    availability.report(driverError("23505"));
    await Bun.sleep(50);
    expect(availability.available).toBe(false);
    answering = true;
    await Bun.sleep(50);
    expect(availability.available).toBe(true);
    expect(changes).toEqual([false, true]);
    expect(recovered).toBe(1);
    availability.stop();
  });

  test("a storage failure keeps it open for good: files and memory may disagree", async () => {
    const availability = new DatabaseAvailability({
      probe: async () => {},
      upIntervalMs: 10,
      downIntervalMs: 10,
    });
    availability.start();
    availability.report(new Error("could not write to file: No space left on device"));
    await Bun.sleep(60);
    expect(availability.available).toBe(false);
    availability.stop();
  });
});

describe("the probe's time bound", () => {
  /** Holds this thread, as a long piece of work would. */
  const stall = (ms: number) => {
    const until = performance.now() + ms;
    while (performance.now() < until) {}
  };

  test("an answer that arrived while this thread was held counts, though the time is up", async () => {
    // An echo server in another process answers while this one is held, as a database would.
    const echo = Bun.spawn(
      [
        process.execPath,
        "-e",
        "const s = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data(c, d) { c.write(d) } } }); console.log(s.port)",
      ],
      { stdout: "pipe" },
    );
    try {
      const port = Number(new TextDecoder().decode((await echo.stdout.getReader().read()).value));
      const socket = await connectTo(port);
      const answer = new Promise<string>((resolve) =>
        socket.once("data", (data) => resolve(data.toString())),
      );
      const probe = answeredWithin(answer, 100);
      socket.write("select 1");
      stall(400);
      expect(await probe).toBe("select 1");
      socket.destroy();
    } finally {
      echo.kill();
    }
  });

  test("no answer at all is a time-out", async () => {
    await expect(answeredWithin(new Promise(() => {}), 50)).rejects.toThrow(
      "no answer within 50 ms",
    );
  });
});

describe("health probes", () => {
  test("/healthz and /readyz need no credentials and say live or ready, nothing more", async () => {
    const h = await createHarness();
    const live = await h.request("GET", "/healthz");
    expect([live.status, live.body]).toEqual([200, { status: "success", data: { live: true } }]);
    const ready = await h.request("GET", "/readyz");
    expect([ready.status, ready.body]).toEqual([200, { status: "success", data: { ready: true } }]);

    // A breaker of its own: the suite's database handle (and its breaker) is shared.
    const broken = new DatabaseAvailability();
    broken.report(new Error("ENOSPC: no space left on device"));
    h.deps.availability = broken;
    const down = await h.request("GET", "/readyz");
    expect(down.status).toBe(503);
    expect(down.body).toMatchObject({ status: "error", code: "unavailable", message: "not ready" });
    expect(down.headers.get("retry-after")).toBe("1");
    expect((await h.request("GET", "/healthz")).status).toBe(200);
  });

  test("a draining process is not ready", async () => {
    const h = await createHarness();
    h.deps.lifecycle.accepting = false;
    expect((await h.request("GET", "/readyz")).status).toBe(503);
  });

  test("a process restoring its campaigns is not ready until they are restored", async () => {
    const h = await createHarness();
    h.deps.lifecycle.restored = false;
    expect((await h.request("GET", "/readyz")).status).toBe(503);
    h.deps.lifecycle.restored = true;
    expect((await h.request("GET", "/readyz")).status).toBe(200);
  });
});

function connectTo(port: number) {
  const socket = net.connect(port, "127.0.0.1");
  return new Promise<net.Socket>((resolve, reject) => {
    socket.once("connect", () => resolve(socket));
    socket.once("error", reject);
  });
}
