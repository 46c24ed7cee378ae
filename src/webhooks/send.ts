import { storableText } from "../lib/storable-text.ts";

/** What a receiver answered, or why it did not. */
export type SendResult =
  | { status: number; body: string; error?: undefined }
  | { status?: undefined; body?: undefined; error: string };

/**
 * POSTs one event: no redirect followed (a redirect is an answer, not a success), at most
 * `timeoutMs` for the whole exchange, and at most `maxBytes` of the answer read, so that a
 * slow or endless receiver costs a bounded time and memory. `keepBytes` of it are kept, as
 * text the log can store whatever the receiver sent (a NUL would fail the whole settle).
 */
export async function postEvent(
  url: string,
  headers: Record<string, string>,
  body: string,
  limits: { timeoutMs: number; maxBytes: number; keepBytes: number },
): Promise<SendResult> {
  const signal = AbortSignal.timeout(limits.timeoutMs);
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "user-agent": "dialer-engine-webhooks",
        ...headers,
      },
      body,
      redirect: "manual",
      signal,
    });
    return { status: response.status, body: await firstBytes(response, limits) };
  } catch (error) {
    if (signal.aborted) return { error: `no answer within ${limits.timeoutMs} ms` };
    return { error: storableText(error instanceof Error ? error.message : String(error)) };
  }
}

async function firstBytes(
  response: Response,
  limits: { maxBytes: number; keepBytes: number },
): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return "";
  const chunks: Uint8Array[] = [];
  let read = 0;
  try {
    while (read < limits.maxBytes) {
      const { value, done } = await reader.read();
      if (done) break;
      chunks.push(value);
      read += value.byteLength;
    }
  } finally {
    // The rest of a long answer is never read.
    await reader.cancel().catch(() => {});
  }
  const bytes = Buffer.concat(chunks).subarray(0, limits.keepBytes);
  return storableText(new TextDecoder().decode(bytes));
}
