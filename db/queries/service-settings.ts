import { eq } from "drizzle-orm";
import type { Executor } from "../client.ts";
import { serviceSettings } from "../schema/index.ts";

/** Returns the stored value of `key`, storing `candidate` first when there is none. */
export async function getOrCreateSetting(
  db: Executor,
  { key, candidate, now }: { key: string; candidate: string; now: Date },
) {
  await db
    .insert(serviceSettings)
    .values({ key, value: candidate, createdAt: now })
    .onConflictDoNothing();
  const row = (
    await db.select().from(serviceSettings).where(eq(serviceSettings.key, key)).limit(1)
  )[0];
  return { value: row?.value ?? candidate, created: row?.value === candidate };
}
