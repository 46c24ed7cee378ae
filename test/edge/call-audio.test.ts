import { describe, expect, test } from "bun:test";
import type { AmdVerdictReport } from "../../edge/call.machine.ts";
import { CallAudio } from "../../edge/call-audio.ts";
import type { LeadMedia } from "../../edge/media/lead-media.ts";
import { MessageCache } from "../../edge/messages.ts";
import type { CallReport, DialJob } from "../../edge/service-client.ts";
import { encodeWav } from "../../src/media/wav.ts";
import { until } from "../helpers/edge.ts";

/** A call's audio with a line that plays instantly and hears what the test says. */
function line() {
  let digit: ((digit: string) => void) | null = null;
  let finish: ((completed: boolean) => void) | undefined;
  const played: number[] = [];
  const media: LeadMedia = {
    start: () => {},
    onFrame: () => {},
    onDigit: (listener) => {
      digit = listener;
    },
    keyPressed: (key) => digit?.(key),
    play: (samples) =>
      new Promise((resolve) => {
        played.push(samples.length);
        finish = resolve;
      }),
    stopPlaying: () => finish?.(false),
    close: () => {},
  };
  return {
    media,
    played,
    press: (key: string) => digit?.(key),
    end: () => finish?.(true),
  };
}

const job = (overrides: Partial<DialJob> = {}): DialJob => ({
  call_id: "call-1",
  campaign_id: "campaign-1",
  lead_id: "lead-1",
  phone: "+14155552671",
  caller_id: "+14155550100",
  timeout_seconds: 30,
  agent_id: null,
  messages: { abandon: 1, voicemail: null, opt_out: 2 },
  opt_out_digit: "9",
  amd: { budget_ms: 1000 },
  ...overrides,
});

function audioOf(o: { job?: DialJob; media?: LeadMedia | null; fetch?: () => Promise<never> }) {
  const reports: CallReport[] = [];
  const verdicts: AmdVerdictReport[] = [];
  let done = 0;
  const wav = (seconds: number) => encodeWav(new Int16Array(seconds * 8000), 8000);
  const messages = new MessageCache(
    o.fetch ?? (async (_campaign, kind) => ({ version: 2, wav: wav(kind === "abandon" ? 3 : 1) })),
    () => {},
  );
  const audio = new CallAudio(
    {
      job: o.job ?? job(),
      media: () => (o.media === undefined ? null : o.media),
      report: (report) => reports.push(report),
      verdict: (verdict) => verdicts.push(verdict),
      played: () => done++,
      now: () => Date.parse("2026-11-26T12:00:00Z"),
      log: () => {},
    },
    messages,
  );
  return { audio, reports, verdicts, done: () => done };
}

describe("a call's audio", () => {
  test("the opt-out key stops the abandon message, is reported, and the confirmation plays before the end", async () => {
    const l = line();
    const a = audioOf({ media: l.media });
    a.audio.play({ kind: "abandon", version: 1 });
    await until(() => l.played.length === 1 || undefined, "the message");
    l.press("5");
    expect(a.reports).toEqual([]);
    l.press("9");
    await until(() => l.played.length === 2 || undefined, "the confirmation");
    expect(a.reports).toEqual([
      { type: "opt_out", at: "2026-11-26T12:00:00.000Z", digit: "9" },
      {
        type: "message_played",
        at: "2026-11-26T12:00:00.000Z",
        kind: "abandon",
        played: true,
        completed: false,
        reason: "the lead opted out",
      },
    ]);
    expect(a.done()).toBe(0);
    l.end();
    await until(() => a.done() === 1 || undefined, "the end");
  });

  test("a message that cannot be fetched is reported not played, with the reason, and the call goes on to its end", async () => {
    const l = line();
    const a = audioOf({
      media: l.media,
      fetch: () => Promise.reject(new Error("HTTP 503")),
    });
    a.audio.play({ kind: "abandon", version: 1 });
    await until(() => a.done() === 1 || undefined, "the end");
    expect(a.reports).toEqual([
      expect.objectContaining({
        type: "message_played",
        played: false,
        completed: false,
        reason: expect.stringContaining("HTTP 503"),
      }),
    ]);
    expect(l.played).toEqual([]);
  });

  test("a lead who hangs up mid-message has it reported cut off, once", async () => {
    const l = line();
    const a = audioOf({ media: l.media });
    a.audio.play({ kind: "abandon", version: 1 });
    await until(() => l.played.length === 1 || undefined, "the message");
    a.audio.stop();
    await Bun.sleep(10);
    expect(a.reports).toEqual([
      expect.objectContaining({ type: "message_played", played: true, completed: false }),
    ]);
  });

  test("detection without any audio gives `unknown` once its budget is past", async () => {
    const a = audioOf({ media: line().media, job: job({ amd: { budget_ms: 50 } }) });
    a.audio.detect();
    await until(() => a.verdicts[0], "the verdict", 2_000);
    expect(a.verdicts).toEqual([{ result: "unknown", confidence: 0, ms: 0 }]);
  });
});
