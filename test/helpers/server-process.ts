import type { Subprocess } from "bun";

/** Starting a server process (PGlite boot and migrations) takes seconds on a busy machine. */
export const SERVER_TEST_TIMEOUT_MS = 60_000;

const ROOT = new URL("../..", import.meta.url).pathname;

export interface ServerProcess {
  process: Subprocess<"ignore", "pipe", "pipe">;
  baseUrl: string;
  /** Everything the server printed on stdout so far. */
  output(): string;
}

/**
 * Starts `bun src/index.ts` (or `command`, e.g. `npm start`) on a free loopback port and waits
 * until it says it listens.
 */
export async function startServer(
  env: Record<string, string>,
  timeoutMs = 30_000,
  command: string[] = [process.execPath, "src/index.ts"],
): Promise<ServerProcess> {
  const child = Bun.spawn(command, {
    cwd: ROOT,
    env: { ...process.env, HOST: "127.0.0.1", PORT: "0", LOG_LEVEL: "info", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  let printed = "";
  const reader = child.stdout.getReader();
  const decoder = new TextDecoder();
  const deadline = Date.now() + timeoutMs;
  let baseUrl: string | undefined;
  while (!baseUrl) {
    if (Date.now() > deadline) throw new Error(`server did not start:\n${printed}`);
    const { value, done } = await reader.read();
    if (done)
      throw new Error(
        `server exited before listening:\n${printed}${await new Response(child.stderr).text()}`,
      );
    printed += decoder.decode(value);
    const port = /listening on http:\/\/[^:]+:(\d+)/.exec(printed)?.[1];
    if (port) baseUrl = `http://127.0.0.1:${port}`;
  }
  void (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      printed += decoder.decode(value);
    }
  })();
  return { process: child, baseUrl, output: () => printed };
}

/** Runs the server expecting it to refuse to start; returns its exit code and stderr. */
export async function startExpectingFailure(env: Record<string, string>) {
  const child = Bun.spawn([process.execPath, "src/index.ts"], {
    cwd: ROOT,
    env: { ...process.env, HOST: "127.0.0.1", PORT: "0", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const code = await child.exited;
  return { code, stderr: await new Response(child.stderr).text() };
}

// biome-ignore lint/suspicious/noExplicitAny: test assertions read arbitrary JSON.
export type Json = Record<string, any>;

/** A request to a server process: JSON or multipart body, a bearer token, extra headers. */
export async function callServer(
  baseUrl: string,
  method: string,
  path: string,
  token?: string,
  body?: unknown,
  extraHeaders: Record<string, string> = {},
) {
  const headers: Record<string, string> = { ...extraHeaders };
  if (token) headers.authorization = `Bearer ${token}`;
  let payload: FormData | string | undefined;
  if (body instanceof FormData) payload = body;
  else if (body !== undefined) {
    headers["content-type"] = "application/json";
    payload = JSON.stringify(body);
  }
  const response = await fetch(`${baseUrl}${path}`, { method, headers, body: payload });
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as Json,
  };
}
