/**
 * Speech or silence, frame by frame, against the line's own noise: a frame is speech when its
 * level clears a fixed threshold and stands well above the noise floor. The floor is the
 * quietest frame of the last second: speech always dips between syllables and words within
 * a second, steady room or line noise never rises far above its own minimum, so a fan or a
 * hissing line does not count as talk however loud it is.
 */

export interface VoiceActivitySettings {
  /** Mean absolute amplitude (16-bit) below which a frame is silence whatever the noise. */
  silenceThreshold: number;
  /** How far above the noise floor a frame must stand to be speech, in dB. */
  marginDb: number;
  /** How many frames the floor looks back over. */
  floorFrames: number;
}

/** As answering-machine detection is tuned (amd.ts). */
export const DEFAULT_VOICE_ACTIVITY: VoiceActivitySettings = {
  silenceThreshold: 128,
  marginDb: 6,
  floorFrames: 50,
};

/** Mean absolute amplitude: the level Asterisk's silence detector compares with its threshold. */
export function meanAmplitude(frame: ArrayLike<number>): number {
  let sum = 0;
  for (let i = 0; i < frame.length; i++) sum += Math.abs(frame[i] as number);
  return frame.length === 0 ? 0 : sum / frame.length;
}

export class VoiceActivity {
  private readonly levels: Float64Array;
  private readonly margin: number;
  private frames = 0;
  /** The last frame's mean absolute amplitude. */
  level = 0;

  constructor(private readonly settings: VoiceActivitySettings = DEFAULT_VOICE_ACTIVITY) {
    this.levels = new Float64Array(settings.floorFrames);
    this.margin = 10 ** (settings.marginDb / 20);
  }

  /** The quietest level of the frames the floor looks back over. */
  get noiseFloor(): number {
    const seen = Math.min(this.frames, this.levels.length);
    let floor = Number.POSITIVE_INFINITY;
    for (let i = 0; i < seen; i++) floor = Math.min(floor, this.levels[i] as number);
    return seen === 0 ? 0 : floor;
  }

  /** Whether the frame is speech; the frame's level then joins the floor's window. */
  push(frame: ArrayLike<number>): boolean {
    this.level = meanAmplitude(frame);
    this.levels[this.frames % this.levels.length] = this.level;
    this.frames++;
    return (
      this.level >= this.settings.silenceThreshold && this.level >= this.noiseFloor * this.margin
    );
  }
}
