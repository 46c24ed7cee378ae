export {
  type ApiClient,
  type ClientOptions,
  createClient,
  formData,
  type paths,
} from "./client.ts";
export { ApiError, type ApiErrorBody, unwrap } from "./errors.ts";
export {
  type ClientMessage,
  connectAgent,
  connectSupervisor,
  type MessageOf,
  RealtimeSocket,
  type ServerMessage,
  type SocketClose,
  type SocketOptions,
  SupervisorSocket,
} from "./socket.ts";
export {
  type GenericWebhookEvent,
  verifyWebhook,
  type WebhookEvent,
  type WebhookEventOf,
  type WebhookHeaders,
  WebhookVerificationError,
} from "./webhooks.ts";
