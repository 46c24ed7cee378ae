/**
 * How a write tells other processes of its change in its own commit: notifications on
 * `channel`, each `prefix`, entries joined by commas, `suffix`. A notification of its own
 * would be a second statement and a second commit; in the write's statement it costs neither.
 */
export interface CommitNotices {
  channel: string;
  prefix: string;
  suffix: string;
  /** The most bytes of entries one notification carries (PostgreSQL refuses 8,000 or more). */
  maxBytes: number;
}

/** One entry to notify with a write, if the write is made. */
export interface CommitNotice {
  notices: CommitNotices;
  entry: string;
}

/**
 * Which notification each entry goes in: consecutive entries share one while their bytes
 * fit. An entry too large for any is the caller's to refuse (see CommitNotice's makers).
 */
export function noticeChunks(entries: readonly (string | null)[], maxBytes: number): number[] {
  let chunk = 0;
  let bytes = 0;
  return entries.map((entry) => {
    if (entry === null) return chunk;
    const size = Buffer.byteLength(entry);
    if (bytes > 0 && bytes + 1 + size > maxBytes) {
      chunk++;
      bytes = 0;
    }
    bytes += (bytes > 0 ? 1 : 0) + size;
    return chunk;
  });
}
