/**
 * G.711 companding (ITU-T G.711): µ-law (PCMU) and A-law (PCMA) between 16-bit linear
 * samples and 8-bit codes. The encoders follow the ITU-T reference software (G.191), which
 * takes a negative sample in one's complement, so that -1 encodes as 0 does with the sign
 * flipped; the decoders give the midpoint of each code's interval, as the standard's tables do.
 */

const INT16_MIN = -32768;
const INT16_MAX = 32767;

/** The biased magnitude's ceiling: the top of µ-law's last segment, 14-bit. */
const MULAW_MAX_BIASED = 0x1fff;
/** µ-law's bias, 33 in the 14-bit domain: it makes each segment's start a power of two. */
const MULAW_BIAS_14 = 33;
const MULAW_BIAS_16 = 0x84;
/** A-law inverts the even bits of a code: quiet signals, mostly zero bits, keep ones on the line. */
const ALAW_EVEN_BITS = 0x55;

function clampInt16(sample: number): number {
  return Math.max(INT16_MIN, Math.min(INT16_MAX, sample));
}

/** The µ-law code of a 16-bit linear sample (beyond that range, the sample is clamped). */
export function linearToMulaw(sample: number): number {
  const s = clampInt16(sample);
  const negative = s < 0;
  const biased = Math.min(((negative ? ~s : s) >> 2) + MULAW_BIAS_14, MULAW_MAX_BIASED);
  // The biased magnitude lies in [33, 8191]: its top bit, 5 to 12, gives the segment 0 to 7.
  const segment = 26 - Math.clz32(biased);
  const step = (biased >> (segment + 1)) & 0x0f;
  return ~((negative ? 0x80 : 0) | (segment << 4) | step) & 0xff;
}

/** The A-law code of a 16-bit linear sample (beyond that range, the sample is clamped). */
export function linearToAlaw(sample: number): number {
  const s = clampInt16(sample);
  const negative = s < 0;
  // A-law keeps 12 bits of magnitude; the first two segments share one step size.
  let code = (negative ? ~s : s) >> 4;
  if (code > 0x0f) {
    const segment = 28 - Math.clz32(code);
    code = (segment << 4) | ((code >> (segment - 1)) & 0x0f);
  }
  return ((negative ? 0 : 0x80) | code) ^ ALAW_EVEN_BITS;
}

function mulawDecoded(code: number): number {
  const c = ~code & 0xff;
  const segment = (c >> 4) & 0x07;
  const magnitude = ((((c & 0x0f) << 3) + MULAW_BIAS_16) << segment) - MULAW_BIAS_16;
  return c & 0x80 ? -magnitude : magnitude;
}

function alawDecoded(code: number): number {
  const c = code ^ ALAW_EVEN_BITS;
  const segment = (c >> 4) & 0x07;
  const step = c & 0x0f;
  const magnitude = segment === 0 ? (step << 4) + 8 : ((step << 4) + 0x108) << (segment - 1);
  return c & 0x80 ? magnitude : -magnitude;
}

const MULAW_TABLE = Int16Array.from({ length: 256 }, (_, code) => mulawDecoded(code));
const ALAW_TABLE = Int16Array.from({ length: 256 }, (_, code) => alawDecoded(code));

/** The linear sample of a µ-law code (only its low 8 bits count). */
export function mulawToLinear(code: number): number {
  return MULAW_TABLE[code & 0xff] as number;
}

/** The linear sample of an A-law code (only its low 8 bits count). */
export function alawToLinear(code: number): number {
  return ALAW_TABLE[code & 0xff] as number;
}

export function encodeMulaw(samples: Int16Array): Uint8Array {
  const codes = new Uint8Array(samples.length);
  for (let i = 0; i < samples.length; i++) codes[i] = linearToMulaw(samples[i] as number);
  return codes;
}

export function encodeAlaw(samples: Int16Array): Uint8Array {
  const codes = new Uint8Array(samples.length);
  for (let i = 0; i < samples.length; i++) codes[i] = linearToAlaw(samples[i] as number);
  return codes;
}

export function decodeMulaw(codes: Uint8Array): Int16Array {
  const samples = new Int16Array(codes.length);
  for (let i = 0; i < codes.length; i++) samples[i] = MULAW_TABLE[codes[i] as number] as number;
  return samples;
}

export function decodeAlaw(codes: Uint8Array): Int16Array {
  const samples = new Int16Array(codes.length);
  for (let i = 0; i < codes.length; i++) samples[i] = ALAW_TABLE[codes[i] as number] as number;
  return samples;
}
