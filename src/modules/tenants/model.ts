import { type Static, t } from "elysia";
import type { TenantRow } from "../../../db/queries/tenants.ts";
import { memoByIdentity } from "../../lib/memo.ts";
import { Timestamp } from "../users/model.ts";

export const DOMAIN_PATTERN = "^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$";

export const TenantSchema = t.Object({
  id: t.String({ format: "uuid" }),
  name: t.String(),
  domain: t.String(),
  rate_limit_per_minute: t.Integer(),
  regulatory_profile: t.String({ description: "the profile a new campaign starts with" }),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type TenantView = Static<typeof TenantSchema>;

export const CreateTenantBody = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: 200 }),
    domain: t.String({ pattern: DOMAIN_PATTERN, maxLength: 253 }),
  },
  { additionalProperties: false },
);
export type CreateTenantInput = Static<typeof CreateTenantBody>;

export const PatchTenantBody = t.Object(
  {
    name: t.Optional(t.String({ minLength: 1, maxLength: 200 })),
    rate_limit_per_minute: t.Optional(t.Integer({ minimum: 1, maximum: 10_000 })),
    regulatory_profile: t.Optional(
      t.String({ description: "us, uk, ca or none: the profile new campaigns start with" }),
    ),
  },
  { additionalProperties: false },
);
export type PatchTenantInput = Static<typeof PatchTenantBody>;

/** Memoised: the tenant actor keeps one object per tenant state. */
export const tenantView = memoByIdentity(
  (row: TenantRow): TenantView => ({
    id: row.id,
    name: row.name,
    domain: row.domain,
    rate_limit_per_minute: row.rateLimitPerMinute,
    regulatory_profile: row.regulatoryProfile,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  }),
);
