import { type Static, t } from "elysia";
import type { UserRow } from "../../../db/queries/users.ts";
import { PASSWORD_MAX, PASSWORD_MIN, PASSWORD_PATTERN } from "../../identity/passwords.ts";
import { RoleSchema, UserStatusSchema } from "../../identity/roles.ts";
import { IGNORED_TENANT } from "../../identity/tenant-scope.ts";
import { memoByIdentity } from "../../lib/memo.ts";
import { PageQuery } from "../../pagination.ts";

export const Email = t.String({ format: "email", maxLength: 254 });
/** `minLength` in UTF-16 units never refuses a valid one; the pattern bounds the length. */
export const Password = t.String({
  minLength: PASSWORD_MIN,
  pattern: PASSWORD_PATTERN,
  description: `${PASSWORD_MIN}–${PASSWORD_MAX} characters`,
});
export const Timestamp = t.String({ format: "date-time" });
/** An agent's phone: a `sip:` or `sips:` URI, such as `sip:1001@pbx.example.com:5060`. */
export const SipUri = t.String({
  maxLength: 512,
  pattern: '^sips?:[^\\s<>"]+$',
  description: "a SIP URI (`sip:` or `sips:`), e.g. `sip:1001@pbx.example.com`",
});

export const UserSchema = t.Object({
  id: t.String({ format: "uuid" }),
  tenant_id: t.String({ format: "uuid" }),
  email: t.String(),
  role: RoleSchema,
  status: UserStatusSchema,
  must_change_password: t.Boolean(),
  phone_uri: t.Union([SipUri, t.Null()], {
    description: "the agent's phone, to which edge nodes bridge answered calls",
  }),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type UserView = Static<typeof UserSchema>;

export const CreateUserBody = t.Object(
  {
    email: Email,
    password: Password,
    role: RoleSchema,
    phone_uri: t.Optional(t.Union([SipUri, t.Null()])),
  },
  { additionalProperties: false },
);
export type CreateUserInput = Static<typeof CreateUserBody>;

export const PatchUserBody = t.Object(
  {
    role: t.Optional(RoleSchema),
    status: t.Optional(UserStatusSchema),
    phone_uri: t.Optional(t.Union([SipUri, t.Null()], { description: "null removes the phone" })),
  },
  { additionalProperties: false },
);
export type PatchUserInput = Static<typeof PatchUserBody>;

export const TenantQuery = { tenant_id: t.Optional(t.String()) };
/**
 * `tenant_id` on a route that acts across workspaces (the workspaces' own list): taken, since
 * the console sends it with every request, and never looked up.
 */
export const IgnoredTenantQuery = {
  tenant_id: t.Optional(t.String({ description: "accepted and ignored", [IGNORED_TENANT]: true })),
};
export const UserListQuery = t.Object({ ...PageQuery, ...TenantQuery });
export const IdParams = t.Object({ id: t.String() });

/** Memoised: the tenant actor keeps one object per user state, and `/auth/me` is hot. */
export const userView = memoByIdentity(
  (row: Omit<UserRow, "passwordHash">): UserView => ({
    id: row.id,
    tenant_id: row.tenantId,
    email: row.email,
    role: row.role,
    status: row.status,
    must_change_password: row.mustChangePassword,
    phone_uri: row.phoneUri,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  }),
);
