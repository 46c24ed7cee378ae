import { type ActorOptions, assign, createActor, enqueueActions, setup } from "xstate";
import type { TenantRow } from "../db/queries/tenants.ts";
import type { UserRow } from "../db/queries/users.ts";

/** A user as requests need it: everything but the password hash. */
export type LiveUser = Omit<UserRow, "passwordHash">;

export interface TenantContext {
  tenant: TenantRow;
  users: Record<string, LiveUser>;
}

export type TenantEvent =
  | { type: "tenant.updated"; tenant: TenantRow }
  | { type: "user.changed"; user: LiveUser };

/** What a user may do, as far as open sessions are concerned. */
export type UserAccess = Pick<LiveUser, "role" | "status">;

/** Emitted when a user the actor held takes another role or status. */
export interface UserAccessChanged {
  type: "user.accessChanged";
  userId: string;
  before: UserAccess;
  after: UserAccess;
}

const accessOf = (user: LiveUser): UserAccess => ({ role: user.role, status: user.status });

/**
 * What is tenant-wide and hot: the tenant's settings and its users' live state (role,
 * status, must-change-password), so that a request is authorised without a query. Every
 * committed change to a user or the tenant is sent here. A user row older than the one held
 * is ignored: a login reads its row before a slow password check and reports it after, when
 * an admin may already have disabled or demoted the user.
 */
export const tenantMachine = setup({
  types: {
    context: {} as TenantContext,
    events: {} as TenantEvent,
    input: {} as TenantContext,
    emitted: {} as UserAccessChanged,
  },
  guards: {
    newerUser: ({ context, event }) => {
      if (event.type !== "user.changed") return false;
      const held = context.users[event.user.id];
      return held === undefined || event.user.version > held.version;
    },
  },
}).createMachine({
  id: "tenant",
  context: ({ input }) => input,
  on: {
    "tenant.updated": { actions: assign({ tenant: ({ event }) => event.tenant }) },
    "user.changed": {
      guard: "newerUser",
      actions: enqueueActions(({ context, event, enqueue }) => {
        const held = context.users[event.user.id];
        if (held && (held.role !== event.user.role || held.status !== event.user.status)) {
          enqueue.emit({
            type: "user.accessChanged",
            userId: event.user.id,
            before: accessOf(held),
            after: accessOf(event.user),
          });
        }
        enqueue.assign({ users: { ...context.users, [event.user.id]: event.user } });
      }),
    },
  },
});

export const tenantActorFrom = (
  context: TenantContext,
  options: Omit<ActorOptions<typeof tenantMachine>, "input"> = {},
) => createActor(tenantMachine, { ...options, input: context });

export type TenantActor = ReturnType<typeof tenantActorFrom>;

export const liveUserOf = ({ passwordHash: _secret, ...live }: UserRow): LiveUser => live;
