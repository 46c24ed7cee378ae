/**
 * WAV files for recorded messages: read (RIFF/WAVE, PCM, IEEE float, G.711), bring to what a
 * phone call carries (8 kHz mono), and write. Shared by the service, which checks and stores
 * uploads, and the node, which plays them.
 */

import { alawToLinear, mulawToLinear } from "./g711.ts";
import { resample } from "./resample.ts";

export type WavEncoding = "pcm" | "mulaw" | "alaw" | "float";

export interface WavInfo {
  encoding: WavEncoding;
  /** Per sample, as stored: 8 for G.711, 8/16/24/32 for PCM, 32 for float. */
  bitsPerSample: number;
  sampleRate: number;
  channels: number;
  durationMs: number;
  /** The samples: a view of the data chunk, cut to whole frames. */
  data: Uint8Array;
}

interface Refusal {
  ok: false;
  /** Why, in a sentence for the person who sent the file. */
  reason: string;
}

const refuse = (reason: string): Refusal => ({ ok: false, reason });

export type ParsedWav = { ok: true; info: WavInfo } | Refusal;

const FORMAT_PCM = 0x0001;
const FORMAT_EXTENSIBLE = 0xfffe;

const ENCODINGS = new Map<number, WavEncoding>([
  [FORMAT_PCM, "pcm"],
  [0x0003, "float"],
  [0x0006, "alaw"],
  [0x0007, "mulaw"],
]);

const SAMPLE_SIZES: Record<WavEncoding, number[]> = {
  pcm: [8, 16, 24, 32],
  float: [32],
  alaw: [8],
  mulaw: [8],
};

const ENCODING_NAMES: Record<WavEncoding, string> = {
  pcm: "PCM",
  float: "float",
  alaw: "A-law",
  mulaw: "µ-law",
};

/** Formats a WAV may hold and we do not read, named so that the refusal says what was sent. */
const FORMAT_NAMES = new Map<number, string>([
  [0x0002, "Microsoft ADPCM"],
  [0x0011, "IMA ADPCM"],
  [0x0031, "GSM 6.10"],
  [0x0050, "MPEG"],
  [0x0055, "MPEG"],
  [0x00ff, "AAC"],
  [0x0161, "Windows Media Audio"],
  [0xf1ac, "FLAC"],
]);

/** The tail of the sub-format GUID that marks a plain format tag in its first two bytes. */
const EXTENSIBLE_GUID_TAIL = [
  0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xaa, 0x00, 0x38, 0x9b, 0x71,
];

/** Streaming writers leave the data size at this when they cannot go back to fill it in. */
const UNKNOWN_SIZE = 0xffffffff;
const MAX_CHANNELS = 8;
const MIN_SAMPLE_RATE = 4000;
const MAX_SAMPLE_RATE = 192_000;
/** The rate calls carry (G.711), and the one wideband rate kept as uploaded. */
const CALL_RATE = 8000;
const WIDEBAND_RATE = 16000;

function fourCC(bytes: Uint8Array, offset: number): string {
  return String.fromCharCode(...bytes.subarray(offset, offset + 4));
}

/** A chunk id for a message: as text when it is printable, else in hex. */
function chunkName(bytes: Uint8Array, offset: number): string {
  const id = fourCC(bytes, offset);
  if (/^[\x20-\x7e]{4}$/.test(id)) return `"${id.trimEnd()}"`;
  return `0x${[...bytes.subarray(offset, offset + 4)].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

type Format = Omit<WavInfo, "durationMs" | "data">;

function parseFormat(chunk: DataView): { ok: true; format: Format } | Refusal {
  if (chunk.byteLength < 16) return refuse("malformed WAV: the fmt chunk is too short");
  let tag = chunk.getUint16(0, true);
  const channels = chunk.getUint16(2, true);
  const sampleRate = chunk.getUint32(4, true);
  const bitsPerSample = chunk.getUint16(14, true);
  if (tag === FORMAT_EXTENSIBLE) {
    if (chunk.byteLength < 40) {
      return refuse("malformed WAV: the extensible fmt chunk is too short");
    }
    const standard = EXTENSIBLE_GUID_TAIL.every((b, i) => chunk.getUint8(26 + i) === b);
    if (!standard) {
      return refuse("unsupported WAV encoding: a non-standard extensible sub-format");
    }
    tag = chunk.getUint16(24, true);
  }

  const encoding = ENCODINGS.get(tag);
  if (!encoding) {
    const name = FORMAT_NAMES.get(tag);
    return refuse(`unsupported WAV encoding: format tag ${tag}${name ? ` (${name})` : ""}`);
  }
  if (!SAMPLE_SIZES[encoding].includes(bitsPerSample)) {
    return refuse(`unsupported WAV encoding: ${bitsPerSample}-bit ${ENCODING_NAMES[encoding]}`);
  }
  if (channels === 0) return refuse("malformed WAV: no channels");
  if (channels > MAX_CHANNELS) {
    return refuse(`unsupported WAV: ${channels} channels; at most ${MAX_CHANNELS}`);
  }
  if (sampleRate < MIN_SAMPLE_RATE || sampleRate > MAX_SAMPLE_RATE) {
    return refuse(
      `unsupported sample rate: ${sampleRate} Hz; accepted from ${MIN_SAMPLE_RATE} to ${MAX_SAMPLE_RATE} Hz`,
    );
  }
  return { ok: true, format: { encoding, bitsPerSample, sampleRate, channels } };
}

/**
 * What a WAV file holds, or why it cannot be read. Chunks other than fmt and data are
 * skipped. Hostile input is safe: this never throws, never reads past `bytes`, and its
 * work grows with the number of chunks, at most one per 8 bytes.
 */
export function parseWav(bytes: Uint8Array): ParsedWav {
  const head = bytes.length >= 12 ? fourCC(bytes, 0) : "";
  if (head === "RIFX") return refuse("unsupported WAV: big-endian (RIFX)");
  if (head === "RF64") return refuse("unsupported WAV: RF64");
  if (head !== "RIFF") return refuse("not a WAV file: no RIFF header");
  if (fourCC(bytes, 8) !== "WAVE") {
    return refuse("not a WAV file: a RIFF file of another form");
  }

  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let format: Format | undefined;
  let data: Uint8Array | undefined;
  // Sizes may be up to 4 GiB: offsets are plain numbers, compared before any read.
  for (let offset = 12; offset + 8 <= bytes.length && !(format && data); ) {
    const size = view.getUint32(offset + 4, true);
    const body = offset + 8;
    const id = fourCC(bytes, offset);
    if (id === "data" && !data) {
      if (size === UNKNOWN_SIZE) data = bytes.subarray(body);
      else if (body + size > bytes.length) {
        return refuse(
          `truncated data chunk: its header declares ${size} bytes, the file holds ${bytes.length - body}`,
        );
      } else data = bytes.subarray(body, body + size);
    } else if (body + size > bytes.length) {
      if (id === "fmt ") return refuse("truncated fmt chunk");
      return refuse(
        `malformed WAV: the ${chunkName(bytes, offset)} chunk runs past the end of the file`,
      );
    } else if (id === "fmt " && !format) {
      const parsed = parseFormat(new DataView(bytes.buffer, bytes.byteOffset + body, size));
      if (!parsed.ok) return parsed;
      format = parsed.format;
    }
    // Chunks are word-aligned: an odd-sized one is followed by a pad byte.
    offset = body + size + (size & 1);
  }
  if (!format) return refuse("malformed WAV: no fmt chunk");
  if (!data) return refuse("malformed WAV: no data chunk");

  const frameBytes = (format.bitsPerSample / 8) * format.channels;
  const frames = Math.floor(data.length / frameBytes);
  return {
    ok: true,
    info: {
      ...format,
      durationMs: (frames * 1000) / format.sampleRate,
      data: data.subarray(0, frames * frameBytes),
    },
  };
}

/** A canonical 44-byte-header WAV of 16-bit PCM mono. */
export function encodeWav(samples: Int16Array, sampleRate: number): Uint8Array {
  if (!Number.isSafeInteger(sampleRate) || sampleRate <= 0 || sampleRate > 0xffffffff / 2) {
    throw new RangeError(`invalid sample rate ${sampleRate}`);
  }
  const dataBytes = samples.length * 2;
  const bytes = new Uint8Array(44 + dataBytes);
  const view = new DataView(bytes.buffer);
  const text = (offset: number, value: string) => {
    for (let i = 0; i < value.length; i++) bytes[offset + i] = value.charCodeAt(i);
  };
  text(0, "RIFF");
  view.setUint32(4, 36 + dataBytes, true);
  text(8, "WAVE");
  text(12, "fmt ");
  view.setUint32(16, 16, true);
  view.setUint16(20, FORMAT_PCM, true);
  view.setUint16(22, 1, true);
  view.setUint32(24, sampleRate, true);
  view.setUint32(28, sampleRate * 2, true);
  view.setUint16(32, 2, true);
  view.setUint16(34, 16, true);
  text(36, "data");
  view.setUint32(40, dataBytes, true);
  for (let i = 0; i < samples.length; i++) view.setInt16(44 + i * 2, samples[i] as number, true);
  return bytes;
}

/** Formats a node plays as they are: G.711 as a call carries it, and 16-bit PCM mono. */
function playableAsSent(info: WavInfo): boolean {
  if (info.channels !== 1) return false;
  if (info.encoding === "mulaw" || info.encoding === "alaw") return info.sampleRate === CALL_RATE;
  return (
    info.encoding === "pcm" &&
    info.bitsPerSample === 16 &&
    (info.sampleRate === CALL_RATE || info.sampleRate === WIDEBAND_RATE)
  );
}

export type NormalizedMessage =
  | { ok: true; wav: Uint8Array; info: WavInfo; converted: boolean }
  | Refusal;

/** Seconds for a message, rounded up to a tenth so that a message just too long says so. */
function seconds(ms: number): string {
  return (Math.ceil(ms / 100) / 10).toFixed(1);
}

/**
 * An uploaded message as the node will play it: kept as sent when it already is 8 or 16 kHz
 * 16-bit PCM mono, or 8 kHz G.711 mono; otherwise converted to 8 kHz 16-bit PCM mono, its
 * channels averaged. Resampling weighs the input with a Kaiser-windowed sinc cut off at
 * 3.8 kHz, so that nothing above 4 kHz folds back into the call's band. Refused when it
 * cannot be read, holds no audio, or lasts longer than `maxMs`.
 */
export function normalizeMessage(bytes: Uint8Array, maxMs = 60_000): NormalizedMessage {
  const parsed = parseWav(bytes);
  if (!parsed.ok) return parsed;
  const { info } = parsed;
  if (info.data.length === 0) return refuse("the message holds no audio");
  if (info.durationMs > maxMs) {
    return refuse(
      `the message is ${seconds(info.durationMs)} s long; at most ${Number((maxMs / 1000).toFixed(1))} s`,
    );
  }
  if (playableAsSent(info)) return { ok: true, wav: bytes, info, converted: false };

  const samples = toCallRate(info);
  if (samples.length === 0) return refuse("the message holds no audio");
  const wav = encodeWav(samples, CALL_RATE);
  return {
    ok: true,
    wav,
    info: {
      encoding: "pcm",
      bitsPerSample: 16,
      sampleRate: CALL_RATE,
      channels: 1,
      durationMs: (samples.length * 1000) / CALL_RATE,
      data: wav.subarray(44),
    },
    converted: true,
  };
}

/**
 * The 8 kHz mono samples of a message, for the node to packetize. Any WAV `parseWav` reads
 * will do (G.711 decoded, 16 kHz brought down); one it cannot read throws, with the reason.
 */
export function samples8k(bytes: Uint8Array): Int16Array {
  const parsed = parseWav(bytes);
  if (!parsed.ok) throw new Error(parsed.reason);
  return toCallRate(parsed.info);
}

function toCallRate(info: WavInfo): Int16Array {
  const mono = resample(monoSamples(info), info.sampleRate, CALL_RATE);
  const samples = new Int16Array(mono.length);
  for (let i = 0; i < mono.length; i++) {
    samples[i] = Math.max(-32768, Math.min(32767, Math.round((mono[i] as number) * 32768)));
  }
  return samples;
}

/** The data's samples in [-1, 1], channels averaged. */
function monoSamples(info: WavInfo): Float32Array {
  const { data, channels } = info;
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const bytesPerSample = info.bitsPerSample / 8;
  const read = sampleReader(info, view);
  const frames = data.length / (bytesPerSample * channels);
  const mono = new Float32Array(frames);
  for (let frame = 0, offset = 0; frame < frames; frame++) {
    let sum = 0;
    for (let c = 0; c < channels; c++, offset += bytesPerSample) sum += read(offset);
    mono[frame] = sum / channels;
  }
  return mono;
}

function sampleReader(info: WavInfo, view: DataView): (offset: number) => number {
  switch (info.encoding) {
    case "mulaw":
      return (offset) => mulawToLinear(view.getUint8(offset)) / 32768;
    case "alaw":
      return (offset) => alawToLinear(view.getUint8(offset)) / 32768;
    case "float":
      return (offset) => {
        const x = view.getFloat32(offset, true);
        // Float WAVs may overshoot full scale, or carry NaN from a broken writer.
        return Number.isNaN(x) ? 0 : Math.max(-1, Math.min(1, x));
      };
    case "pcm":
      switch (info.bitsPerSample) {
        case 8:
          // 8-bit WAV samples are unsigned, silence at 128.
          return (offset) => (view.getUint8(offset) - 128) / 128;
        case 16:
          return (offset) => view.getInt16(offset, true) / 32768;
        case 24:
          return (offset) =>
            ((view.getUint8(offset + 2) << 24) |
              (view.getUint8(offset + 1) << 16) |
              (view.getUint8(offset) << 8)) /
            2 ** 31;
        default:
          return (offset) => view.getInt32(offset, true) / 2 ** 31;
      }
  }
}
