/**
 * The console's one API client. Request and response types are the route schemas' own
 * (TypeBox `Static<>` of src/modules/<feature>/model.ts), imported as types only: nothing of
 * the server reaches the browser bundle.
 */
import type { Static, TSchema } from "@sinclair/typebox";
import type { EligibilitySchema, PreviewSchema } from "../../dialer/model.ts";
import type { AgentBoardSchema } from "../../modules/agents/board.ts";
import type { AttemptSchema, CallbackSchema } from "../../modules/agents/desk.ts";
import type { AgentFiguresSchema } from "../../modules/agents/figures.ts";
import type {
  AgentStateBody,
  DispositionBody,
  ManualDialBody,
  TransferBody,
} from "../../modules/agents/index.ts";
import type { AlertSchema } from "../../modules/alerts/service.ts";
import type { ApiKeySchema, CreateApiKeyBody } from "../../modules/api-keys/model.ts";
import type {
  ChangePasswordBody,
  LoginBody,
  LoginResult,
  MeResult,
} from "../../modules/auth/model.ts";
import type { campaignCompliance } from "../../modules/campaigns/compliance.ts";
import type {
  CampaignSchema,
  CampaignStatsSchema,
  CreateCampaignBody,
  PatchCampaignBody,
  StatusActionBody,
  StatusChangeSchema,
} from "../../modules/campaigns/model.ts";
import type { MinuteFiguresSchema } from "../../modules/campaigns/stats-history.ts";
import type { CdrQuery, CdrSchema } from "../../modules/cdrs/model.ts";
import type { DncEntrySchema } from "../../modules/dnc/index.ts";
import type { CreateEdgeNodeBody, EdgeNodeSchema } from "../../modules/edge-nodes/model.ts";
import type {
  CreateLeadListBody,
  ImportSchema,
  LeadListSchema,
  LeadSchema,
  LeadsQuery,
} from "../../modules/leads/model.ts";
import type {
  CreateTenantBody,
  NotReadyReasonSchema,
  PatchTenantBody,
  TenantSchema,
} from "../../modules/tenants/model.ts";
import type { CreateUserBody, PatchUserBody, UserSchema } from "../../modules/users/model.ts";
import type {
  CreateWebhookBody,
  DeliverySchema,
  PatchWebhookBody,
  WebhookSchema,
} from "../../modules/webhooks/model.ts";
import type { SERVER_MESSAGES } from "../../realtime/asyncapi.ts";

type S<T extends TSchema> = Static<T>;
/** A list route's query, with its page as numbers (the schema takes them as query text). */
type Paged<T extends TSchema> = Omit<Partial<S<T>>, "limit" | "offset" | "tenant_id"> & {
  limit?: number;
  offset?: number;
};

export type Campaign = S<typeof CampaignSchema>;
export type Preview = S<typeof PreviewSchema>;
export type Alert = S<typeof AlertSchema>;
export type CampaignStats = S<typeof CampaignStatsSchema>;
export type CampaignWithStats = Campaign & { stats?: CampaignStats };
export type StatusChange = S<typeof StatusChangeSchema>;
export type Compliance = Awaited<ReturnType<typeof campaignCompliance>>["compliance"];
export type User = S<typeof UserSchema>;
export type Tenant = S<typeof TenantSchema>;
export type ApiKey = S<typeof ApiKeySchema>;
export type EdgeNode = S<typeof EdgeNodeSchema>;
export type Webhook = S<typeof WebhookSchema>;
export type WebhookDelivery = S<typeof DeliverySchema>;
export type LeadList = S<typeof LeadListSchema>;
export type Lead = S<typeof LeadSchema>;
export type Eligibility = S<typeof EligibilitySchema>;
export type Import = S<typeof ImportSchema>;
export type Cdr = S<typeof CdrSchema>;
export type DncEntry = S<typeof DncEntrySchema>;
export type AgentFigures = S<typeof AgentFiguresSchema>;
export type NotReadyReason = S<typeof NotReadyReasonSchema>;
export type Agent = S<(typeof SERVER_MESSAGES)["agent.state"]>["agent"];
export type ServerMessage = {
  [K in keyof typeof SERVER_MESSAGES]: S<(typeof SERVER_MESSAGES)[K]>;
}[keyof typeof SERVER_MESSAGES];
type Connected = Extract<ServerMessage, { type: "call.connected" }>;
export type Login = S<typeof LoginResult>;
export type Me = S<typeof MeResult>;

export interface FieldError {
  field: string;
  message: string;
}

/** An error reply of the API, in its envelope. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code: string,
    readonly fieldErrors: FieldError[] = [],
  ) {
    super(message);
  }
  /** The message the API gave for one field, if any. */
  field(name: string): string | undefined {
    return this.fieldErrors.find((error) => error.field === name)?.message;
  }
}

export interface Page<T> {
  items: T[];
  total: number;
  limit: number;
  offset: number;
}

type Query = Record<string, string | number | undefined>;

interface Credentials {
  token(): string | undefined;
  /** The workspace a platform admin is looking at, added to every request as `tenant_id`. */
  tenantId(): string | undefined;
  /** Called when the token is refused: the session is over. */
  expired(): void;
}

let credentials: Credentials = {
  token: () => undefined,
  tenantId: () => undefined,
  expired: () => {},
};
export const useCredentials = (given: Credentials) => {
  credentials = given;
};

export function url(path: string, query: Query = {}): string {
  const params = new URLSearchParams();
  const tenantId = credentials.tenantId();
  if (tenantId) params.set("tenant_id", tenantId);
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== "") params.set(name, String(value));
  }
  const search = params.toString();
  return `/api/v1${path}${search ? `?${search}` : ""}`;
}

function headers(extra: Record<string, string> = {}): Record<string, string> {
  const token = credentials.token();
  return { ...(token ? { authorization: `Bearer ${token}` } : {}), ...extra };
}

/** What a request that never reached the service says, in place of the browser's own words. */
const unreachable = () =>
  new ApiError(
    "the service could not be reached: check the connection and try again",
    0,
    "network",
  );

/**
 * The error of a reply. A 401 ends the session, save where it answers a password the user
 * typed (`checksPassword`): there it says the password is wrong, next to its field.
 */
async function failure(
  response: Response,
  options: { checksPassword?: string } = {},
): Promise<ApiError> {
  let body: { message?: string; code?: string; field_errors?: FieldError[] } = {};
  try {
    body = await response.json();
  } catch {}
  if (response.status === 401 && options.checksPassword) {
    return new ApiError(body.message ?? "invalid credentials", 401, body.code ?? "error", [
      { field: options.checksPassword, message: "is not the current password" },
    ]);
  }
  if (response.status === 401 && credentials.token()) credentials.expired();
  return new ApiError(
    body.message ?? `${response.status} ${response.statusText}`,
    response.status,
    body.code ?? "error",
    body.field_errors,
  );
}

async function call<T>(
  method: string,
  path: string,
  options: {
    query?: Query;
    body?: unknown;
    headers?: Record<string, string>;
    /** A file sent as it is, with its type. */
    raw?: Blob;
    contentType?: string;
    /** The body's field holding a password the service checks (see `failure`). */
    checksPassword?: string;
  } = {},
): Promise<T> {
  const json = options.body !== undefined;
  const type = json ? "application/json" : options.contentType;
  const response = await reach(url(path, options.query), {
    method,
    headers: headers({ ...(type ? { "content-type": type } : {}), ...options.headers }),
    body: json ? JSON.stringify(options.body) : options.raw,
  });
  if (!response.ok) throw await failure(response, options);
  return (await response.json()) as T;
}

/** `fetch`, its network failure said as the console says it. */
async function reach(input: string, init?: RequestInit): Promise<Response> {
  try {
    return await fetch(input, init);
  } catch {
    throw unreachable();
  }
}

const one = async <T>(promise: Promise<{ data: T }>) => (await promise).data;
async function list<T>(path: string, query?: Query): Promise<Page<T>> {
  const reply = await call<{ data: { items: T[] }; total: number; limit: number; offset: number }>(
    "GET",
    path,
    { query },
  );
  return { items: reply.data.items, total: reply.total, limit: reply.limit, offset: reply.offset };
}

/** A CSV the API streams, fetched with the session's token and handed to the browser to save. */
async function download(path: string, query: Query, fileName: string): Promise<void> {
  const response = await reach(url(path, query), { headers: headers({ accept: "text/csv" }) });
  if (!response.ok) throw await failure(response);
  const link = document.createElement("a");
  link.href = URL.createObjectURL(await response.blob());
  link.download = fileName;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
}

/** An upload through XMLHttpRequest, the one browser API that reports the upload's progress. */
function upload<T>(path: string, form: FormData, progress: (share: number) => void): Promise<T> {
  return new Promise((resolve, reject) => {
    const request = new XMLHttpRequest();
    request.open("POST", url(path));
    for (const [name, value] of Object.entries(headers())) request.setRequestHeader(name, value);
    request.upload.onprogress = (event) => {
      if (event.lengthComputable) progress(event.loaded / event.total);
    };
    request.onerror = () => reject(unreachable());
    request.onload = () => {
      let body: {
        data?: T;
        message?: string;
        code?: string;
        field_errors?: FieldError[];
      } = {};
      try {
        body = JSON.parse(request.responseText);
      } catch {}
      if (request.status >= 200 && request.status < 300 && body.data) resolve(body.data);
      else
        reject(
          new ApiError(
            body.message ?? `${request.status}`,
            request.status,
            body.code ?? "error",
            body.field_errors,
          ),
        );
    };
    request.send(form);
  });
}

const campaignPath = (id: string) => `/campaigns/${encodeURIComponent(id)}`;
const listPath = (campaignId: string, listId: string) =>
  `${campaignPath(campaignId)}/lead-lists/${encodeURIComponent(listId)}`;

export const api = {
  login: (body: S<typeof LoginBody>) => one(call<{ data: Login }>("POST", "/auth/login", { body })),
  me: () => one(call<{ data: Me }>("GET", "/auth/me")),
  changePassword: (body: S<typeof ChangePasswordBody>) =>
    one(
      call<{ data: { user: User } }>("POST", "/auth/me/password", {
        body,
        checksPassword: "current_password",
      }),
    ),
  logout: () => call("POST", "/auth/logout"),

  campaigns: (query: { status?: Campaign["status"]; limit?: number; offset?: number } = {}) =>
    list<Campaign>("/campaigns", query),
  campaign: (id: string) =>
    one(call<{ data: { campaign: CampaignWithStats } }>("GET", campaignPath(id))),
  createCampaign: (body: S<typeof CreateCampaignBody>) =>
    one(call<{ data: { campaign: Campaign } }>("POST", "/campaigns", { body })),
  patchCampaign: (id: string, body: S<typeof PatchCampaignBody>) =>
    one(call<{ data: { campaign: Campaign } }>("PATCH", campaignPath(id), { body })),
  campaignAction: (id: string, body: S<typeof StatusActionBody>) =>
    one(
      call<{ data: { campaign: Campaign } }>("POST", `${campaignPath(id)}/status`, {
        body,
        headers: { "idempotency-key": crypto.randomUUID() },
      }),
    ),
  campaignHistory: (id: string, query: Query = {}) =>
    list<StatusChange>(`${campaignPath(id)}/history`, query),
  compliance: (id: string) =>
    one(call<{ data: { compliance: Compliance } }>("GET", `${campaignPath(id)}/compliance`)),
  complianceEvidence: (id: string) =>
    download(`${campaignPath(id)}/compliance`, {}, `compliance-${id}.csv`),

  leadLists: (campaignId: string) => list<LeadList>(`${campaignPath(campaignId)}/lead-lists`),
  leadList: (campaignId: string, listId: string) =>
    one(call<{ data: { lead_list: LeadList } }>("GET", listPath(campaignId, listId))),
  createLeadList: (campaignId: string, body: S<typeof CreateLeadListBody>) =>
    one(
      call<{ data: { lead_list: LeadList } }>("POST", `${campaignPath(campaignId)}/lead-lists`, {
        body,
      }),
    ),
  leads: (campaignId: string, listId: string, query: Paged<typeof LeadsQuery>) =>
    list<Lead>(`${listPath(campaignId, listId)}/leads`, query),
  eligibility: (campaignId: string, leadId: string) =>
    one(
      call<{ data: Eligibility }>(
        "GET",
        `${campaignPath(campaignId)}/leads/${encodeURIComponent(leadId)}/eligibility`,
      ),
    ),
  importLeads: (
    campaignId: string,
    listId: string,
    form: FormData,
    progress: (share: number) => void,
  ) => upload<{ import: Import }>(`${listPath(campaignId, listId)}/import`, form, progress),
  imports: (campaignId: string, listId: string, query: { limit?: number; offset?: number } = {}) =>
    list<Import>(`${listPath(campaignId, listId)}/imports`, query),
  downloadRejected: (campaignId: string, listId: string, importId: string) =>
    download(
      `${listPath(campaignId, listId)}/imports/${encodeURIComponent(importId)}/rejected.csv`,
      {},
      `rejected-${importId}.csv`,
    ),

  cdrs: (query: Paged<typeof CdrQuery>) => list<Cdr>("/cdrs", query),
  exportCdrs: (query: Paged<typeof CdrQuery>) =>
    download("/cdrs", { ...query, limit: undefined, offset: undefined }, "call-records.csv"),

  dnc: (query: { phone?: string; limit?: number; offset?: number }) =>
    list<DncEntry>("/dnc", query),
  addDnc: (phone: string) =>
    one(
      call<{ data: { dnc_entry: DncEntry; already_listed: boolean } }>("POST", "/dnc", {
        body: { phone },
      }),
    ),
  uploadDnc: (file: File) =>
    one(
      call<{
        data: {
          report: {
            rows: number;
            added: number;
            already_listed: number;
            rejected: number;
            rejections: { row: number; value: string; reason: string }[];
          };
        };
      }>("POST", "/dnc/import", { raw: file, contentType: "text/csv" }),
    ),
  removeDnc: (phone: string) => call("DELETE", `/dnc/${encodeURIComponent(phone)}`),

  agentMe: () =>
    one(
      call<{
        data: {
          agent: Agent;
          call: Connected["call"] | null;
          lead: Connected["lead"] | null;
          screen_pop_url: string | null;
          preview: Preview | null;
        };
      }>("GET", "/agents/me"),
    ),
  agentPreview: () =>
    one(
      call<{ data: { preview: Preview | null; eligibility: Eligibility | null } }>(
        "GET",
        "/agents/me/preview",
      ),
    ),
  dialPreview: () =>
    one(call<{ data: { call: Connected["call"] } }>("POST", "/agents/me/preview/dial")),
  skipPreview: (reason: string) =>
    one(call<{ data: unknown }>("POST", "/agents/me/preview/skip", { body: { reason } })),
  dialByHand: (body: S<typeof ManualDialBody>) =>
    one(call<{ data: { call: Connected["call"] } }>("POST", "/agents/me/dial", { body })),
  transferTargets: () =>
    one(
      call<{ data: { agents: { user_id: string; email: string }[]; numbers: string[] } }>(
        "GET",
        "/agents/me/transfer-targets",
      ),
    ),
  hangUp: (callId: string) =>
    one(call<{ data: unknown }>("POST", `/calls/${encodeURIComponent(callId)}/hangup`)),
  transfer: (callId: string, body: S<typeof TransferBody>) =>
    one(
      call<{ data: { call: Connected["call"] } }>(
        "POST",
        `/calls/${encodeURIComponent(callId)}/transfer`,
        { body },
      ),
    ),
  agentFigures: (timeZone: string) =>
    one(
      call<{ data: { figures: AgentFigures } }>("GET", "/agents/me/figures", {
        query: { time_zone: timeZone },
      }),
    ),
  notReadyReasons: () => list<NotReadyReason>("/agents/not-ready-reasons"),
  alerts: () => list<Alert>("/alerts", { open: "true" }),
  agentBoard: (timeZone: string) =>
    one(
      call<{ data: S<typeof AgentBoardSchema> }>("GET", "/agents/board", {
        query: { time_zone: timeZone },
      }),
    ),
  superviseAgent: (userId: string, body: { state: "paused" | "offline"; reason?: string }) =>
    one(
      call<{ data: { agent: Agent } }>("POST", `/agents/${encodeURIComponent(userId)}/state`, {
        body,
      }),
    ),
  statsHistory: (campaignId: string, from: string) =>
    list<S<typeof MinuteFiguresSchema>>(
      `/campaigns/${encodeURIComponent(campaignId)}/stats/history`,
      { from },
    ),
  ownHistory: () => list<S<typeof AttemptSchema>>("/agents/me/history"),
  ownCallbacks: () => list<S<typeof CallbackSchema>>("/agents/me/callbacks"),
  agentState: (body: S<typeof AgentStateBody>) =>
    one(call<{ data: { agent: Agent } }>("POST", "/agents/me/state", { body })),
  disposition: (callId: string, body: S<typeof DispositionBody>) =>
    one(
      call<{ data: unknown }>("POST", `/calls/${encodeURIComponent(callId)}/disposition`, { body }),
    ),

  users: (query: Query = {}) => list<User>("/users", query),
  createUser: (body: S<typeof CreateUserBody>) =>
    one(call<{ data: { user: User } }>("POST", "/users", { body })),
  patchUser: (id: string, body: S<typeof PatchUserBody>) =>
    one(call<{ data: { user: User } }>("PATCH", `/users/${encodeURIComponent(id)}`, { body })),

  apiKeys: () => list<ApiKey>("/api-keys", { limit: 500 }),
  createApiKey: (body: S<typeof CreateApiKeyBody>) =>
    one(call<{ data: { api_key: ApiKey; key: string } }>("POST", "/api-keys", { body })),
  revokeApiKey: (id: string) =>
    one(call<{ data: { api_key: ApiKey } }>("DELETE", `/api-keys/${encodeURIComponent(id)}`)),

  webhooks: () => list<Webhook>("/webhooks", { limit: 500 }),
  createWebhook: (body: S<typeof CreateWebhookBody>) =>
    one(call<{ data: { webhook: Webhook; secret: string } }>("POST", "/webhooks", { body })),
  patchWebhook: (id: string, body: S<typeof PatchWebhookBody>) =>
    one(
      call<{ data: { webhook: Webhook } }>("PATCH", `/webhooks/${encodeURIComponent(id)}`, {
        body,
      }),
    ),
  deleteWebhook: (id: string) =>
    one(call<{ data: { webhook: Webhook } }>("DELETE", `/webhooks/${encodeURIComponent(id)}`)),
  rotateWebhookSecret: (id: string) =>
    one(
      call<{ data: { webhook: Webhook; secret: string } }>(
        "POST",
        `/webhooks/${encodeURIComponent(id)}/rotate-secret`,
        { body: {} },
      ),
    ),
  webhookDeliveries: (id: string, query: Query = {}) =>
    list<WebhookDelivery>(`/webhooks/${encodeURIComponent(id)}/deliveries`, query),
  resendDelivery: (id: string, attemptId: string) =>
    one(
      call<{ data: unknown }>(
        "POST",
        `/webhooks/${encodeURIComponent(id)}/deliveries/${encodeURIComponent(attemptId)}/resend`,
      ),
    ),

  edgeNodes: () => list<EdgeNode>("/edge-nodes", { limit: 500 }),
  createEdgeNode: (body: S<typeof CreateEdgeNodeBody>) =>
    one(call<{ data: { edge_node: EdgeNode; key: string } }>("POST", "/edge-nodes", { body })),
  revokeEdgeNode: (id: string) =>
    one(call<{ data: { edge_node: EdgeNode } }>("DELETE", `/edge-nodes/${encodeURIComponent(id)}`)),

  tenants: () => list<Tenant>("/tenants", { limit: 500 }),
  tenant: (id: string) =>
    one(call<{ data: { tenant: Tenant } }>("GET", `/tenants/${encodeURIComponent(id)}`)),
  createTenant: (body: S<typeof CreateTenantBody>) =>
    one(call<{ data: { tenant: Tenant } }>("POST", "/tenants", { body })),
  patchTenant: (id: string, body: S<typeof PatchTenantBody>) =>
    one(
      call<{ data: { tenant: Tenant } }>("PATCH", `/tenants/${encodeURIComponent(id)}`, { body }),
    ),
};

/** The socket address of a route, with the token and a platform admin's workspace. */
export function socketUrl(path: "/ws/agent" | "/ws/supervisor"): string {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const params = new URLSearchParams({ token: credentials.token() ?? "" });
  const tenantId = credentials.tenantId();
  if (tenantId) params.set("tenant_id", tenantId);
  return `${scheme}://${location.host}${path}?${params}`;
}
