import { post } from "./connections.ts";

/** What a receiver answered, or why it did not. */
export type SendResult =
  | { status: number; body: string; error?: undefined }
  | { status?: undefined; body?: undefined; error: string };

/**
 * POSTs one event: no redirect followed (a redirect is an answer, not a success), at most
 * `timeoutMs` for the whole exchange, and at most `maxBytes` of the answer read, so that a
 * slow or endless receiver costs a bounded time and memory. `keepBytes` of it are kept.
 */
export async function postEvent(
  url: string,
  headers: Record<string, string>,
  body: string,
  limits: { timeoutMs: number; maxBytes: number; keepBytes: number },
): Promise<SendResult> {
  try {
    const answer = await post(
      new URL(url),
      { "content-type": "application/json", "user-agent": "dialer-engine-webhooks", ...headers },
      body,
      limits,
    );
    return { status: answer.status, body: answer.body };
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  }
}
