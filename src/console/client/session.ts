import { computed, effect, signal } from "@preact/signals";
import { api, type Login, type Tenant, type User, useCredentials } from "./api.ts";

const STORAGE_KEY = "dialer.session";
const TENANT_KEY = "dialer.tenant";

export interface Session {
  token: string;
  expiresAt: string;
  user: User;
  tenant?: Tenant;
}

function stored(): Session | undefined {
  try {
    const session = JSON.parse(localStorage.getItem(STORAGE_KEY) ?? "null") as Session | null;
    if (session && Date.parse(session.expiresAt) > Date.now()) return session;
  } catch {}
  localStorage.removeItem(STORAGE_KEY);
  return undefined;
}

/** The signed-in user, kept in local storage until the token expires. */
export const session = signal<Session | undefined>(stored());
/** The workspace a platform admin looks at; every request and socket carries it as `tenant_id`. */
export const pickedTenant = signal<string | undefined>(
  sessionStorage.getItem(TENANT_KEY) ?? undefined,
);
export const role = computed(() => session.value?.user.role);
/** Whether the last session ended by itself (its token expired or was refused), not by sign-out. */
export const sessionEnded = signal(false);

/** The token expired or was refused: the user signs in again, and is told why. */
function ended() {
  if (session.peek()) sessionEnded.value = true;
  void signOut(false);
}

effect(() => {
  if (session.value) localStorage.setItem(STORAGE_KEY, JSON.stringify(session.value));
  else localStorage.removeItem(STORAGE_KEY);
});
effect(() => {
  if (pickedTenant.value) sessionStorage.setItem(TENANT_KEY, pickedTenant.value);
  else sessionStorage.removeItem(TENANT_KEY);
});

let expiry: ReturnType<typeof setTimeout> | undefined;
effect(() => {
  clearTimeout(expiry);
  const current = session.value;
  if (!current) return;
  // Signed out when the token expires, even on a page left open.
  const left = Date.parse(current.expiresAt) - Date.now();
  expiry = setTimeout(ended, Math.min(Math.max(left, 0), 2_147_000_000));
});

useCredentials({
  token: () => session.peek()?.token,
  tenantId: () =>
    session.peek()?.user.role === "platform_admin" ? pickedTenant.peek() : undefined,
  expired: ended,
});

export function signedIn(login: Login) {
  sessionEnded.value = false;
  session.value = { token: login.token, expiresAt: login.expires_at, user: login.user };
}

export async function refreshMe() {
  const me = await api.me();
  const current = session.peek();
  if (current) session.value = { ...current, user: me.user, tenant: me.tenant };
}

export async function signOut(tellServer = true) {
  if (tellServer && session.peek()) {
    try {
      await api.logout();
    } catch {}
  }
  session.value = undefined;
  pickedTenant.value = undefined;
}

/** The workspace the user works in: a platform admin's picked one, else the user's own. */
export async function workspace(): Promise<Tenant> {
  const picked = pickedTenant.peek();
  if (session.peek()?.user.role === "platform_admin" && picked)
    return (await api.tenant(picked)).tenant;
  return (await api.me()).tenant;
}
