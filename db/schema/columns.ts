import { timestamp } from "drizzle-orm/pg-core";

/** A UTC instant; every time in the schema is one. */
export const instant = (name: string) => timestamp(name, { withTimezone: true, mode: "date" });

/** `created_at` and `updated_at`, both required. */
export const timestamps = () => ({
  createdAt: instant("created_at").notNull(),
  updatedAt: instant("updated_at").notNull(),
});
