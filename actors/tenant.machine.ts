import { type ActorOptions, assign, createActor, setup } from "xstate";
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

/**
 * What is tenant-wide and hot: the tenant's settings and its users' live state (role,
 * status, must-change-password), so that a request is authorised without a query. Every
 * committed change to a user or the tenant is sent here.
 */
export const tenantMachine = setup({
  types: { context: {} as TenantContext, events: {} as TenantEvent, input: {} as TenantContext },
}).createMachine({
  id: "tenant",
  context: ({ input }) => input,
  on: {
    "tenant.updated": { actions: assign({ tenant: ({ event }) => event.tenant }) },
    "user.changed": {
      actions: assign({
        users: ({ context, event }) => ({ ...context.users, [event.user.id]: event.user }),
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
