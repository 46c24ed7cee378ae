import { SAMPLE_RATE, ToneBank } from "./goertzel.ts";
import {
  DEFAULT_STEADY_TONE,
  type SteadyToneSettings,
  SteadyTones,
  type ToneRun,
} from "./steady-tone.ts";
import {
  DEFAULT_VOICE_ACTIVITY,
  VoiceActivity,
  type VoiceActivitySettings,
} from "./voice-activity.ts";

/** What one frame of the far end's audio held. */
export interface HeardFrame {
  /** When the frame ends, in ms from the first frame's start. */
  ms: number;
  frameMs: number;
  /** Louder than both the silence threshold and the noise floor, and not a tone. */
  speech: boolean;
  /** Dominated by one frequency: part of a tone, or about to be. */
  tonal: boolean;
  /** The tone in progress, however short so far. */
  tone: ToneRun | null;
  /** The tone this frame ended. */
  toneEnded: ToneRun | null;
}

export interface LineListenerSettings extends VoiceActivitySettings, SteadyToneSettings {
  /** Frames quieter than this (mean absolute amplitude) are not searched for a tone. */
  toneMinLevel: number;
}

export const DEFAULT_LINE_LISTENER: LineListenerSettings = {
  ...DEFAULT_VOICE_ACTIVITY,
  ...DEFAULT_STEADY_TONE,
  toneMinLevel: 64,
};

/**
 * The features of the far end's audio, frame by frame, that answering-machine detection and
 * the voicemail cue both decide from: speech against the noise floor, and steady tones. One
 * listener follows a call from its answer, so the cue goes on from where the detector stopped.
 */
export class LineListener {
  private readonly voice: VoiceActivity;
  private readonly tones: SteadyTones;
  private readonly bank = new ToneBank();
  private elapsedMs = 0;

  constructor(private readonly settings: LineListenerSettings = DEFAULT_LINE_LISTENER) {
    this.voice = new VoiceActivity(settings);
    this.tones = new SteadyTones(settings);
  }

  /** Audio time heard so far, in ms. */
  get ms(): number {
    return this.elapsedMs;
  }

  /** The tone in progress, if any. */
  get currentTone(): ToneRun | null {
    return this.tones.current;
  }

  /** A frame of 8 kHz linear samples (20 ms is 160). */
  hear(frame: Int16Array): HeardFrame {
    const frameMs = (frame.length * 1000) / SAMPLE_RATE;
    const startMs = this.elapsedMs;
    this.elapsedMs += frameMs;
    const loud = this.voice.push(frame);
    // Silence cannot hold a tone, and skipping it keeps the filter bank off quiet lines.
    const dominant =
      this.voice.level >= this.settings.toneMinLevel ? this.bank.dominant(frame) : null;
    const tonal = this.tones.isTonal(dominant);
    const toneEnded = this.tones.push(dominant, startMs, this.elapsedMs);
    return {
      ms: this.elapsedMs,
      frameMs,
      speech: loud && !tonal,
      tonal,
      tone: this.tones.current,
      toneEnded,
    };
  }
}
