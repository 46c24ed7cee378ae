import { type Static, t } from "elysia";
import { ApiKeySchema } from "../api-keys/model.ts";
import { TenantSchema } from "../tenants/model.ts";
import { Password, UserSchema } from "../users/model.ts";

export const LoginBody = t.Object(
  {
    email: t.String({ minLength: 1, maxLength: 254 }),
    password: t.String({ minLength: 1, maxLength: 1024 }),
    tenant_domain: t.Optional(t.String({ minLength: 1, maxLength: 253 })),
  },
  { additionalProperties: false },
);
export type LoginInput = Static<typeof LoginBody>;

export const LoginResult = t.Object({
  token: t.String(),
  expires_at: t.String({ format: "date-time" }),
  user: UserSchema,
});

export const ChangePasswordBody = t.Object(
  { current_password: t.String({ minLength: 1, maxLength: 1024 }), new_password: Password },
  { additionalProperties: false },
);

export const MeResult = t.Object({ user: UserSchema, tenant: TenantSchema });
export const KeyMeResult = t.Object({ api_key: ApiKeySchema, tenant: TenantSchema });
