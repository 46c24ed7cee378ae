/**
 * A calling window must open before it closes; the console checks it before sending, the API
 * when it stores. "HH:MM" strings compare in time order.
 */
export function windowOrderFailure(window: { start: string; end: string }) {
  return window.start >= window.end
    ? { field: "calling_window.start", message: "must be before calling_window.end" }
    : undefined;
}
