import { PROFILE_DATA, type ProfileVersionData } from "./profile-data.ts";

export type ProfileName = keyof typeof PROFILE_DATA;

/** The US states whose own rules the `us` profile carries. */
export type StateWithRules = keyof (typeof PROFILE_DATA)["us"][number]["states"];

/** One version of a profile, as a campaign's calls are placed under it and recorded with it. */
export type Profile = ProfileVersionData & {
  readonly name: ProfileName;
  /** The instant it takes effect: 00:00 UTC on the day its version names. */
  readonly effectiveFrom: number;
};

export const PROFILE_NAMES = Object.keys(PROFILE_DATA) as readonly ProfileName[];

export const isProfileName = (value: string): value is ProfileName =>
  Object.hasOwn(PROFILE_DATA, value);

// Newest first, so that the version in force is the first one that has begun.
const VERSIONS = new Map<ProfileName, readonly Profile[]>(
  PROFILE_NAMES.map((name) => [
    name,
    PROFILE_DATA[name]
      .map(
        (data): Profile =>
          Object.freeze({ ...data, name, effectiveFrom: Date.parse(data.version) }),
      )
      .sort((a, b) => b.effectiveFrom - a.effectiveFrom),
  ]),
);

/**
 * The version of a profile in force at an instant, or undefined before its first version.
 * The same object is returned every time, so callers may key caches on it.
 */
export function profileAt(name: ProfileName, at: number): Profile | undefined {
  return VERSIONS.get(name)?.find((version) => version.effectiveFrom <= at);
}

/** A version by its name, as a call's record keeps it (`{name, version}`). */
export function profileVersion(name: ProfileName, version: string): Profile | undefined {
  return VERSIONS.get(name)?.find((candidate) => candidate.version === version);
}
