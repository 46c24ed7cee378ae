import createFetchClient, { type Client } from "openapi-fetch";
import type { paths } from "./generated/openapi.ts";

export type { paths };

/** The typed client: `GET`, `POST`, `PATCH`, `PUT`, `DELETE` on the paths of `/api/v1`. */
export type ApiClient = Client<paths>;

export interface ClientOptions {
  /** Where the server is, e.g. `http://127.0.0.1:3000`; each path carries its own `/api/v1`. */
  baseUrl: string;
  /** A user's token (`POST /api/v1/auth/login`) or an API key (`svc_key_…`); none to sign in. */
  token?: string;
  /** A `fetch` of your own (a proxy, a test double); the global one by default. */
  fetch?: (request: Request) => Promise<Response>;
}

/** An `openapi-fetch` client of the API whose requests carry `token` as their bearer. */
export function createClient({ baseUrl, token, fetch }: ClientOptions): ApiClient {
  return createFetchClient<paths>({
    baseUrl,
    ...(token && { headers: { authorization: `Bearer ${token}` } }),
    ...(fetch && { fetch }),
  });
}

/**
 * A `bodySerializer` for the routes that take `multipart/form-data` (a lead import): the typed
 * body's fields, a `Blob` or `File` among them, as a `FormData`.
 */
export function formData(body: object): FormData {
  const form = new FormData();
  for (const [name, value] of Object.entries(body)) {
    if (value === undefined) continue;
    form.append(name, value instanceof Blob ? value : String(value));
  }
  return form;
}
