import { Type } from "@sinclair/typebox";
import { type Static, t } from "elysia";
import type { TenantRow } from "../../../db/queries/tenants.ts";
import { memoByIdentity } from "../../lib/memo.ts";
import { E164 } from "../campaigns/model.ts";
import { Timestamp } from "../users/model.ts";

/** Dot-separated labels of letters, digits and inner hyphens; 253 characters in all. */
export const DOMAIN_PATTERN =
  "^(?=.{1,253}$)[a-z0-9]([a-z0-9\\-]*[a-z0-9])?(\\.[a-z0-9]([a-z0-9\\-]*[a-z0-9])?)*$";

/** Why an agent may pause: a workspace's list, offered in its order. */
export const NotReadyReasonSchema = t.Object(
  {
    code: t.String({
      pattern: "^[a-z][a-z0-9_]{0,31}$",
      description: "what the API and reports use",
    }),
    label: t.String({
      minLength: 1,
      maxLength: 60,
      pattern: "\\S",
      description: "what the agent sees",
    }),
  },
  { additionalProperties: false },
);
export type NotReadyReason = Static<typeof NotReadyReasonSchema>;
export const NotReadyReasonsSchema = t.Array(NotReadyReasonSchema, { maxItems: 20 });

export const TenantSchema = t.Object({
  id: t.String({ format: "uuid" }),
  name: t.String(),
  domain: t.String(),
  rate_limit_per_minute: Type.Integer(),
  regulatory_profile: t.String({ description: "the profile a new campaign starts with" }),
  not_ready_reasons: NotReadyReasonsSchema,
  transfer_numbers: t.Array(t.String(), {
    description: "E.164 numbers outside the workspace an agent may transfer a call to",
  }),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type TenantView = Static<typeof TenantSchema>;

export const CreateTenantBody = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: 200, pattern: "\\S" }),
    domain: t.String({ pattern: DOMAIN_PATTERN, maxLength: 253 }),
  },
  { additionalProperties: false },
);
export type CreateTenantInput = Static<typeof CreateTenantBody>;

export const PatchTenantBody = t.Object(
  {
    name: t.Optional(t.String({ minLength: 1, maxLength: 200, pattern: "\\S" })),
    rate_limit_per_minute: t.Optional(Type.Integer({ minimum: 1, maximum: 10_000 })),
    regulatory_profile: t.Optional(
      t.String({ description: "us, uk, ca or none: the profile new campaigns start with" }),
    ),
    not_ready_reasons: t.Optional(
      t.Array(NotReadyReasonSchema, {
        maxItems: 20,
        description:
          "why agents may pause, in the order offered (codes unique; after_call is the service's own)",
      }),
    ),
    transfer_numbers: t.Optional(
      t.Array(E164, {
        maxItems: 100,
        uniqueItems: true,
        description: "E.164 numbers outside the workspace an agent may transfer a call to",
      }),
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
    not_ready_reasons: row.notReadyReasons,
    transfer_numbers: row.transferNumbers,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  }),
);
