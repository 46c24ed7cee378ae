import { randomBytes } from "node:crypto";
import { Webhook } from "standardwebhooks";
import type { WebhookEndpointRow } from "../../db/queries/webhooks.ts";

/** A new signing secret in Standard Webhooks' form: `whsec_` and 24 random bytes in base64. */
export const newWebhookSecret = () => `whsec_${randomBytes(24).toString("base64")}`;

/** The secrets that sign now: the current one, and the previous one until its overlap ends. */
export function signingSecrets(endpoint: WebhookEndpointRow, now: Date): string[] {
  const overlapping =
    endpoint.previousSecret !== null &&
    endpoint.previousSecretExpiresAt !== null &&
    endpoint.previousSecretExpiresAt > now;
  return overlapping && endpoint.previousSecret
    ? [endpoint.secret, endpoint.previousSecret]
    : [endpoint.secret];
}

/** A signer per secret: building one decodes the secret, which every event would repeat. */
const signers = new Map<string, Webhook>();
const MAX_SIGNERS = 1_000;

function signerOf(secret: string): Webhook {
  let signer = signers.get(secret);
  if (!signer) {
    if (signers.size >= MAX_SIGNERS) signers.clear();
    signer = new Webhook(secret);
    signers.set(secret, signer);
  }
  return signer;
}

/**
 * Standard Webhooks' headers for one attempt: the event's id (the same on every retry), the
 * time of this attempt, and one `v1,` signature per secret that signs now, space-separated.
 */
export function signedHeaders(
  secrets: readonly string[],
  eventId: string,
  at: Date,
  body: string,
): Record<string, string> {
  return {
    "webhook-id": eventId,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": secrets
      .map((secret) => signerOf(secret).sign(eventId, at, body))
      .join(" "),
  };
}
