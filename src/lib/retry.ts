export interface RetryPolicy {
  /** Waits before each retry after the first attempt, in milliseconds; their count bounds the retries. */
  delaysMs: readonly number[];
  /** Told of every failure; `final` when no retry is left. */
  onFailure(error: unknown, attempt: number, final: boolean): void;
}

/**
 * Runs `task` once and waits for it; if it fails, retries it in the background after each
 * delay until it succeeds or the delays run out. It never throws: for work whose failure must
 * not undo what already committed.
 */
export async function attemptWithRetries(
  task: () => Promise<void>,
  policy: RetryPolicy,
): Promise<void> {
  const attempt = async (index: number): Promise<boolean> => {
    try {
      await task();
      return true;
    } catch (error) {
      const final = index >= policy.delaysMs.length;
      policy.onFailure(error, index + 1, final);
      if (!final) retryLater(index);
      return false;
    }
  };
  const retryLater = (index: number) => {
    const timer = setTimeout(() => void attempt(index + 1), policy.delaysMs[index]);
    timer.unref?.();
  };
  await attempt(0);
}
