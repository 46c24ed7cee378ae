import type { AmdVerdictReport, MessageToPlay } from "./call.machine.ts";
import { AnsweringMachineDetector } from "./media/amd.ts";
import type { LeadMedia } from "./media/lead-media.ts";
import type { VoicemailCue } from "./media/voicemail-cue.ts";
import type { MessageCache } from "./messages.ts";
import type { CallReport, DialJob } from "./service-client.ts";

/** Past the detection budget, how long the node waits for audio that never came. */
const NO_MEDIA_GRACE_MS = 500;
/** The voicemail cue counts audio, so without audio this says go instead, just after its 20 s. */
const CUE_WAIT_MS = 21_000;

/** What a call's audio needs of its call: its job, its lead's media, its reports. */
export interface AudioOfCall {
  job: DialJob;
  media(): LeadMedia | null;
  report(report: CallReport): void;
  verdict(verdict: AmdVerdictReport): void;
  /** The message has been played, cut off, or could not be. */
  played(): void;
  now(): number;
  log(line: string): void;
}

/** A message under way: reported once, whether it ends, is cut off or never starts. */
interface Playback {
  kind: MessageToPlay["kind"] | "opt_out";
  startedAt: number | null;
  reported: boolean;
}

/**
 * A call's audio on the node: answering-machine detection on the answer, and the messages
 * the service names (the abandon message at once, listening for the opt-out key; the
 * voicemail message once the greeting's beep or its silence says the box records), each
 * reported with when it started and whether it played to its end.
 */
export class CallAudio {
  /** After a machine verdict: listening on for the end of the greeting. */
  private cue: { listen: VoicemailCue; heard: boolean; onHeard?: () => void } | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private playback: Playback | undefined;
  private optedOut = false;
  private stopped = false;

  constructor(
    private readonly call: AudioOfCall,
    private readonly messages: MessageCache,
  ) {}

  /** Listens for a machine; the verdict comes within the job's budget, with or without audio. */
  detect(): void {
    const budgetMs = this.call.job.amd?.budget_ms ?? 3_500;
    const detector = new AnsweringMachineDetector({ budgetMs });
    const media = this.call.media();
    const deliver = (verdict: {
      result: AmdVerdictReport["result"];
      confidence: number;
      ms: number;
    }) => {
      clearTimeout(this.timer);
      media?.onFrame(null);
      if (this.stopped) return;
      // A machine may get the voicemail message: the greeting's end is listened for at once,
      // so that a beep during the service's answer is not missed.
      if (verdict.result === "machine" && media) this.listenForCue(media, detector.voicemailCue());
      this.call.verdict({
        result: verdict.result,
        confidence: Math.round(verdict.confidence * 1000) / 1000,
        ms: Math.round(verdict.ms),
      });
    };
    media?.onFrame((frame) => {
      const verdict = detector.push(frame);
      if (verdict) deliver(verdict);
    });
    // Audio that stops or never comes: the best verdict so far once the budget is past.
    this.timer = setTimeout(() => deliver(detector.finish()), budgetMs + NO_MEDIA_GRACE_MS);
  }

  /** Plays a message the service named, then tells the call. */
  play(message: MessageToPlay): void {
    const media = this.call.media();
    const playback: Playback = { kind: message.kind, startedAt: null, reported: false };
    this.playback = playback;
    if (!media) {
      this.notPlayed(playback, "no media path to the lead");
      return;
    }
    this.messages.get(this.call.job.campaign_id, message.kind, message.version).then(
      (samples) => {
        if (this.stopped) return;
        if (message.kind === "voicemail")
          this.afterGreeting(media, () => this.start(media, playback, samples));
        else this.start(media, playback, samples);
      },
      (error) => this.notPlayed(playback, `the message could not be fetched: ${String(error)}`),
    );
  }

  /** Stops listening and playing: the call is over. A message cut off is reported now. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    const media = this.call.media();
    media?.onFrame(null);
    media?.onDigit(null);
    const playback = this.playback;
    if (playback && !playback.reported) this.settle(playback, false, "the lead hung up");
    media?.stopPlaying();
  }

  private listenForCue(media: LeadMedia, listen: VoicemailCue): void {
    const cue: NonNullable<CallAudio["cue"]> = { listen, heard: false };
    this.cue = cue;
    media.onFrame((frame) => {
      if (cue.heard || !cue.listen.push(frame)) return;
      cue.heard = true;
      media.onFrame(null);
      cue.onHeard?.();
    });
  }

  /** Waits for the beep's end (or the greeting's silence), so the message is heard from its start. */
  private afterGreeting(media: LeadMedia, go: () => void): void {
    if (!this.cue) this.listenForCue(media, new AnsweringMachineDetector().voicemailCue());
    const cue = this.cue as NonNullable<CallAudio["cue"]>;
    const begin = () => {
      clearTimeout(this.timer);
      cue.onHeard = undefined;
      media.onFrame(null);
      if (!this.stopped) go();
    };
    if (cue.heard) {
      begin();
      return;
    }
    cue.onHeard = begin;
    this.timer = setTimeout(begin, CUE_WAIT_MS);
  }

  private start(media: LeadMedia, playback: Playback, samples: Int16Array): void {
    playback.startedAt = this.call.now();
    if (playback.kind === "abandon") media.onDigit((digit) => this.keyPressed(media, digit));
    media.play(samples).then(
      (completed) => {
        if (!playback.reported) this.settle(playback, completed, completed ? null : "cut off");
        if (!this.optedOut) this.call.played();
      },
      (error) => this.notPlayed(playback, String(error)),
    );
  }

  /** The opt-out key during the abandon message: reported, and confirmed if there is a prompt. */
  private keyPressed(media: LeadMedia, digit: string): void {
    if (this.optedOut || digit !== (this.call.job.opt_out_digit ?? "9")) return;
    this.optedOut = true;
    media.onDigit(null);
    this.call.report({ type: "opt_out", at: new Date(this.call.now()).toISOString(), digit });
    const playback = this.playback;
    if (playback && !playback.reported) this.settle(playback, false, "the lead opted out");
    media.stopPlaying();
    const confirmation = this.call.job.messages?.opt_out;
    if (!confirmation) {
      this.call.played();
      return;
    }
    this.messages.get(this.call.job.campaign_id, "opt_out", confirmation).then(
      (samples) => {
        if (this.stopped) return;
        media.play(samples).then(
          () => this.call.played(),
          () => this.call.played(),
        );
      },
      () => this.call.played(),
    );
  }

  private notPlayed(playback: Playback, reason: string): void {
    this.call.log(`call ${this.call.job.call_id}: ${playback.kind} message not played: ${reason}`);
    if (!playback.reported) this.settle(playback, false, reason);
    if (!this.stopped) this.call.played();
  }

  /** Reports the message once: played or not, to its end or not. */
  private settle(playback: Playback, completed: boolean, reason: string | null): void {
    playback.reported = true;
    const played = playback.startedAt !== null;
    this.call.report({
      type: "message_played",
      at: new Date(playback.startedAt ?? this.call.now()).toISOString(),
      kind: playback.kind,
      played,
      completed: played && completed,
      ...(reason ? { reason: reason.slice(0, 200) } : {}),
    });
  }
}
