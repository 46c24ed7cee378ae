import { verifyWebhook, WebhookVerificationError } from "@dialer-engine/sdk";

/** A fetch handler: `Bun.serve({ port: 8080, fetch: receive })`, `Deno.serve(receive)`… */
export async function receive(request: Request): Promise<Response> {
  try {
    const secret = process.env.WEBHOOK_SECRET ?? "";
    const event = verifyWebhook(secret, await request.text(), request.headers);
    console.log(request.headers.get("webhook-id"), event.type, event.timestamp, event.data);
    return new Response(null, { status: 204 });
  } catch (error) {
    if (error instanceof WebhookVerificationError) return new Response(null, { status: 401 });
    throw error;
  }
}
