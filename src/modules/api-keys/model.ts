import { Type } from "@sinclair/typebox";
import { type Static, t } from "elysia";
import type { ApiKeyRow } from "../../../db/queries/access.ts";
import { Timestamp } from "../users/model.ts";

const Level = t.Union([t.Literal("none"), t.Literal("read"), t.Literal("write")]);

export const ScopesSchema = t.Object(
  {
    campaigns: t.Optional(Level),
    leads: t.Optional(Level),
    cdrs: t.Optional(Level),
    users: t.Optional(Level),
    webhooks: t.Optional(Level),
  },
  {
    additionalProperties: false,
    description:
      "per resource: none, read or write (write includes read); webhooks is listed only when granted",
  },
);

/** Bounded so the exact rolling-minute counter of a key stays small. */
export const RateLimitPerMinute = Type.Integer({ minimum: 1, maximum: 10_000 });

export const CreateApiKeyBody = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: 200, pattern: "\\S" }),
    scopes: ScopesSchema,
    rate_limit_per_minute: t.Optional(t.Union([RateLimitPerMinute, t.Null()])),
  },
  { additionalProperties: false },
);
export type CreateApiKeyInput = Static<typeof CreateApiKeyBody>;

export const ApiKeySchema = t.Object({
  id: t.String({ format: "uuid" }),
  name: t.String(),
  prefix: t.String({ description: "the key's first characters, to recognise it" }),
  scopes: ScopesSchema,
  rate_limit_per_minute: t.Union([Type.Integer(), t.Null()]),
  created_at: Timestamp,
  last_used_at: t.Union([Timestamp, t.Null()]),
  revoked_at: t.Union([Timestamp, t.Null()]),
});
export type ApiKeyView = Static<typeof ApiKeySchema>;

/**
 * Every resource with its level, "none" included, so a key's reach reads at a glance; the
 * webhooks scope, added later, only where granted, so that the keys' shape stays as it was.
 */
export const apiKeyView = (row: ApiKeyRow, lastUsedAt?: number): ApiKeyView => ({
  id: row.id,
  name: row.name,
  prefix: row.prefix,
  scopes: {
    campaigns: row.scopes.campaigns ?? "none",
    leads: row.scopes.leads ?? "none",
    cdrs: row.scopes.cdrs ?? "none",
    users: row.scopes.users ?? "none",
    ...(row.scopes.webhooks && row.scopes.webhooks !== "none"
      ? { webhooks: row.scopes.webhooks }
      : {}),
  },
  rate_limit_per_minute: row.rateLimitPerMinute,
  created_at: row.createdAt.toISOString(),
  last_used_at: lastUsedAt
    ? new Date(lastUsedAt).toISOString()
    : (row.lastUsedAt?.toISOString() ?? null),
  revoked_at: row.revokedAt?.toISOString() ?? null,
});
