import { Webhook, WebhookVerificationError } from "standardwebhooks";
import type { webhooks } from "./generated/openapi.ts";

export { WebhookVerificationError };

/** What every webhook carries, whatever its type. */
export interface GenericWebhookEvent {
  type: string;
  /** ISO 8601. */
  timestamp: string;
  data: unknown;
}

/** The JSON body of a `webhooks` entry as openapi-typescript emits it. */
type BodyOf<Entry> = Entry extends {
  post: { requestBody?: { content: { "application/json": infer Body } } };
}
  ? Body
  : unknown;

/** An entry's event: its body when that is the whole event, else the body as its `data`. */
type EventOf<Type extends string, Body> = Body extends { type: string; timestamp: string }
  ? Body
  : { type: Type; timestamp: string; data: Body };

/**
 * The events a generated `webhooks` section describes, keyed by event type (`call.ended`), as
 * a union that narrows on `type`; `GenericWebhookEvent` while the document has none
 * (openapi-typescript then emits `Record<string, never>`, whose keys are any string).
 */
export type WebhookEventOf<Webhooks> = string extends keyof Webhooks
  ? GenericWebhookEvent
  : { [Type in keyof Webhooks & string]: EventOf<Type, BodyOf<Webhooks[Type]>> }[keyof Webhooks &
      string];

/** An event of the server's webhooks, typed from its OpenAPI document. */
export type WebhookEvent = WebhookEventOf<webhooks>;

/** A fetch `Headers`, or a plain object of them as Node's `request.headers` is. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

/**
 * Checks a webhook as Standard Webhooks defines it and returns its event. `secret` is the
 * endpoint's `whsec_…`; `payload` is the body exactly as it came (parse it only after, since a
 * re-serialised body no longer matches its signature); `headers` carry `webhook-id`,
 * `webhook-timestamp` and `webhook-signature` (`v1,<base64>`, several space-separated while a
 * secret is rotated: one match is enough).
 *
 * Throws `WebhookVerificationError` when a header is missing, no signature matches, the
 * timestamp is more than five minutes from now (a replay), or the body is no event.
 */
export function verifyWebhook(
  secret: string,
  payload: string | Uint8Array,
  headers: WebhookHeaders,
): WebhookEvent {
  const body = typeof payload === "string" ? payload : new TextDecoder().decode(payload);
  const event = new Webhook(secret).verify(body, headerRecord(headers));
  if (!isEvent(event)) throw new WebhookVerificationError("the payload is not a webhook event");
  return event as WebhookEvent;
}

function headerRecord(headers: WebhookHeaders): Record<string, string> {
  const record: Record<string, string> = {};
  if (headers instanceof Headers) {
    headers.forEach((value, name) => {
      record[name] = value;
    });
    return record;
  }
  for (const [name, value] of Object.entries(headers)) {
    // A header sent twice arrives as an array; signatures are space-separated anyway.
    if (value !== undefined) record[name.toLowerCase()] = [value].flat().join(" ");
  }
  return record;
}

const isEvent = (value: unknown): value is GenericWebhookEvent =>
  typeof value === "object" &&
  value !== null &&
  typeof (value as GenericWebhookEvent).type === "string" &&
  typeof (value as GenericWebhookEvent).timestamp === "string" &&
  "data" in value;
