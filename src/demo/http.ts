/** A small JSON client for the demo's own server: the demo uses the API as any client would. */
export class DemoClient {
  constructor(
    readonly baseUrl: string,
    private token?: string,
  ) {}

  as(token: string): DemoClient {
    return new DemoClient(this.baseUrl, token);
  }

  async call<T = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
    form?: FormData | { type: string; bytes: Uint8Array },
  ): Promise<T> {
    const raw = form && !(form instanceof FormData) ? form : undefined;
    const response = await fetch(`${this.baseUrl}/api/v1${path}`, {
      method,
      headers: {
        ...(this.token ? { authorization: `Bearer ${this.token}` } : {}),
        ...(body === undefined ? {} : { "content-type": "application/json" }),
        ...(raw ? { "content-type": raw.type } : {}),
      },
      body: raw
        ? raw.bytes
        : ((form as FormData | undefined) ??
          (body === undefined ? undefined : JSON.stringify(body))),
    });
    const reply = (await response.json()) as { data: T; message?: string };
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${reply.message}`);
    return reply.data;
  }

  socketUrl(path: string): string {
    return `${this.baseUrl.replace(/^http/, "ws")}${path}?token=${encodeURIComponent(this.token ?? "")}`;
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
