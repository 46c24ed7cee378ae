import type { Clock } from "../../actors/ports.ts";

/** A clock that moves only when a test says so. */
export class ManualClock implements Clock {
  constructor(private current = Date.parse("2026-03-02T12:00:00Z")) {}
  now() {
    return this.current;
  }
  advance(milliseconds: number) {
    this.current += milliseconds;
  }
}
