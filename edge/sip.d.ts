/** The parts of the `sip` package (a SIP transaction layer in plain JavaScript) the node uses. */
declare module "sip" {
  export interface SipUri {
    schema?: string;
    user?: string;
    password?: string;
    host: string;
    port?: number;
    params: Record<string, string | null | undefined>;
    headers?: Record<string, string>;
  }
  export interface NameAddr {
    name?: string;
    uri: string;
    params: Record<string, string | null | undefined>;
  }
  export interface Via {
    version?: string;
    protocol?: string;
    host?: string;
    port?: number;
    params: Record<string, string | null | undefined>;
  }
  export interface Headers {
    to: NameAddr;
    from: NameAddr;
    "call-id": string;
    cseq: { method: string; seq: number };
    via?: Via[];
    contact?: NameAddr[] | string;
    route?: NameAddr[];
    "record-route"?: NameAddr[];
    "content-type"?: string;
    "max-forwards"?: number;
    [name: string]: unknown;
  }
  export interface Message {
    method?: string;
    uri?: string;
    status?: number;
    reason?: string;
    version?: string;
    headers: Headers;
    content?: string;
  }
  export interface Remote {
    protocol: string;
    address: string;
    port: number;
  }
  export interface Options {
    address?: string;
    port?: number;
    publicAddress?: string;
    udp?: boolean;
    tcp?: boolean;
    logger?: {
      send?: (m: Message, target: Remote) => void;
      recv?: (m: Message, remote: Remote) => void;
      error?: (e: unknown) => void;
    };
  }
  export interface Stack {
    send(m: Message, callback?: (rs: Message) => void): void;
    destroy(): void;
    hostname(): string;
  }
  export interface Address {
    protocol: string;
    address: string;
    port: number;
  }
  export interface Connection {
    send(m: Message): void;
    release(): void;
    protocol: string;
  }
  export interface Transport {
    open(target: Address, onError: (e: unknown) => void): Connection;
    get(target: Remote): Connection;
    destroy(): void;
  }
  export interface Transaction {
    message?: (m: Message, remote?: Remote) => void;
    send?: (m: Message) => void;
  }
  export interface TransactionLayer {
    createServerTransaction(rq: Message, connection: Connection): { send(m: Message): void };
    createClientTransaction(
      connection: Connection,
      rq: Message,
      callback: (rs: Message) => void,
    ): { message(m: Message): void };
    getServer(m: Message): Transaction | undefined;
    getClient(m: Message): Transaction | undefined;
    destroy(): void;
  }
  export function makeTransport(
    options: Options,
    onMessage: (m: Message, remote: Remote) => void,
  ): Transport;
  export function makeTransactionLayer(
    options: Options,
    open: (target: Address, onError: (e: unknown) => void) => Connection,
  ): TransactionLayer;
  export function resolve(uri: SipUri, action: (addresses: Address[]) => void): void;
  export function create(options: Options, onRequest: (rq: Message, remote: Remote) => void): Stack;
  export function makeResponse(
    rq: Message,
    status: number,
    reason?: string,
    extension?: { headers?: Record<string, unknown>; content?: string },
  ): Message;
  export function parseUri(uri: string): SipUri;
  export function stringifyUri(uri: SipUri | string): string;
  export function generateBranch(): string;
}

declare module "sip/digest" {
  import type { Message } from "sip";
  export function signRequest(
    ctx: Record<string, unknown>,
    rq: Message,
    rs: Message,
    creds: { user: string; password: string },
  ): unknown;
  export function challenge(ctx: Record<string, unknown>, rs: Message): Message;
  export function authenticateRequest(
    ctx: Record<string, unknown>,
    rq: Message,
    creds: { user: string; password: string },
  ): boolean;
}
