import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { decodeAlaw, decodeMulaw, encodeAlaw, encodeMulaw } from "../../src/media/g711.ts";
import { encodeWav, normalizeMessage, parseWav, samples8k } from "../../src/media/wav.ts";

// WAV files are put together byte by byte here, independently of encodeWav.

const ascii = (text: string) => Uint8Array.from(text, (c) => c.charCodeAt(0));
const u16 = (n: number) => [n & 0xff, (n >> 8) & 0xff];
const u32 = (n: number) => [n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, (n >>> 24) & 0xff];

function concat(...parts: (Uint8Array | number[])[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/** A chunk with its header and, when its size is odd, the pad byte. */
function chunk(id: string, body: Uint8Array | number[], declaredSize = body.length): Uint8Array {
  return concat(ascii(id), u32(declaredSize), body, body.length % 2 ? [0] : []);
}

function riff(...chunks: Uint8Array[]): Uint8Array {
  const body = concat(ascii("WAVE"), ...chunks);
  return concat(ascii("RIFF"), u32(body.length), body);
}

const GUID_TAIL = [
  0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xaa, 0x00, 0x38, 0x9b, 0x71,
];

interface FormatFields {
  tag?: number;
  channels?: number;
  rate?: number;
  bits?: number;
  /** The extensible format's sub-format tag, and the rest of its GUID. */
  sub?: number;
  tail?: number[];
}

function fmt(o: FormatFields) {
  const { tag = 1, channels = 1, rate = 8000, bits = 16 } = o;
  const block = channels * Math.ceil(bits / 8);
  const base = [
    ...u16(tag),
    ...u16(channels),
    ...u32(rate),
    ...u32(rate * block),
    ...u16(block),
    ...u16(bits),
  ];
  if (o.sub === undefined) return chunk("fmt ", base);
  const extension = [...u16(22), ...u16(bits), ...u32(3), ...u16(o.sub), ...(o.tail ?? GUID_TAIL)];
  return chunk("fmt ", [...base, ...extension]);
}

const pcm16 = (samples: number[]) => samples.flatMap((s) => u16(s & 0xffff));

/** A canonical file of 16-bit samples. */
const pcm16Wav = (samples: number[], rate = 8000, channels = 1) =>
  riff(fmt({ rate, channels }), chunk("data", pcm16(samples)));

const tone = (hz: number, rate: number, seconds: number, amplitude = 16000) =>
  Array.from({ length: Math.round(rate * seconds) }, (_, i) =>
    Math.round(amplitude * Math.sin((2 * Math.PI * hz * i) / rate)),
  );

const reasonOf = (bytes: Uint8Array) => {
  const parsed = parseWav(bytes);
  return parsed.ok ? "ok" : parsed.reason;
};

function infoOf(bytes: Uint8Array) {
  const parsed = parseWav(bytes);
  if (!parsed.ok) throw new Error(parsed.reason);
  return parsed.info;
}

/** The RMS of the difference, leaving out the edges where the resampler's kernel is cut. */
function rmsError(actual: Int16Array, expected: number[]) {
  let sum = 0;
  let n = 0;
  for (let i = 50; i < Math.min(actual.length, expected.length) - 50; i++, n++) {
    sum += ((actual[i] as number) - (expected[i] as number)) ** 2;
  }
  return Math.sqrt(sum / n);
}

describe("parseWav", () => {
  test("reads a canonical 16-bit PCM file", () => {
    const bytes = pcm16Wav([1, -2, 32767, -32768]);
    const info = infoOf(bytes);
    expect(info).toEqual({
      encoding: "pcm",
      bitsPerSample: 16,
      sampleRate: 8000,
      channels: 1,
      durationMs: 0.5,
      data: Uint8Array.from(pcm16([1, -2, 32767, -32768])),
    });
    expect(info.data.buffer).toBe(bytes.buffer);
    expect(info.data.byteOffset).toBe(44);
  });

  test.each([
    [
      { tag: 1, bits: 8 },
      { encoding: "pcm", bitsPerSample: 8, durationMs: 6 },
    ],
    [
      { tag: 1, bits: 24, channels: 2, rate: 32000 },
      { encoding: "pcm", bitsPerSample: 24, channels: 2, sampleRate: 32000, durationMs: 0.25 },
    ],
    [
      { tag: 1, bits: 32, rate: 6000 },
      { encoding: "pcm", bitsPerSample: 32, durationMs: 2 },
    ],
    [
      { tag: 3, bits: 32, rate: 16000 },
      { encoding: "float", bitsPerSample: 32, durationMs: 0.75 },
    ],
    [
      { tag: 6, bits: 8 },
      { encoding: "alaw", bitsPerSample: 8, durationMs: 6 },
    ],
    [
      { tag: 7, bits: 8 },
      { encoding: "mulaw", bitsPerSample: 8, durationMs: 6 },
    ],
  ] as [FormatFields, object][])("reads %o", (format, expected) => {
    const info = infoOf(riff(fmt(format), chunk("data", new Uint8Array(48))));
    expect(info).toMatchObject({ channels: 1, sampleRate: format.rate ?? 8000, ...expected });
  });

  test("reads WAVE_FORMAT_EXTENSIBLE by its sub-format", () => {
    const pcm = infoOf(
      riff(fmt({ tag: 0xfffe, sub: 1, bits: 24, channels: 2 }), chunk("data", new Uint8Array(12))),
    );
    expect([pcm.encoding, pcm.bitsPerSample, pcm.channels, pcm.durationMs]).toEqual([
      "pcm",
      24,
      2,
      0.25,
    ]);
    const float = infoOf(
      riff(fmt({ tag: 0xfffe, sub: 3, bits: 32 }), chunk("data", new Uint8Array(8))),
    );
    expect(float.encoding).toBe("float");
    const mulaw = infoOf(
      riff(fmt({ tag: 0xfffe, sub: 7, bits: 8 }), chunk("data", new Uint8Array(8))),
    );
    expect(mulaw.encoding).toBe("mulaw");
  });

  test("skips other chunks, with their pad bytes, before, between and after", () => {
    const samples = [5, 6, 7];
    const bytes = riff(
      chunk("JUNK", [1, 2, 3]),
      fmt({}),
      chunk("LIST", ascii("INFOISFT\x05\x00\x00\x00Lavf\x00")),
      chunk("fact", u32(3)),
      chunk("data", pcm16(samples)),
      chunk("id3 ", [9]),
    );
    expect(infoOf(bytes).data).toEqual(Uint8Array.from(pcm16(samples)));
  });

  test("finds fmt after data", () => {
    const info = infoOf(riff(chunk("data", pcm16([1, 2])), fmt({})));
    expect(info.data).toEqual(Uint8Array.from(pcm16([1, 2])));
  });

  test("an odd-sized data chunk and a partial last frame are cut to whole frames", () => {
    const odd = infoOf(riff(fmt({}), chunk("data", [1, 0, 2, 0, 3]), chunk("LIST", [])));
    expect(odd.data).toEqual(Uint8Array.from([1, 0, 2, 0]));
    const stereo = infoOf(riff(fmt({ channels: 2 }), chunk("data", pcm16([1, 2, 3]))));
    expect(stereo.data).toEqual(Uint8Array.from(pcm16([1, 2])));
    expect(stereo.durationMs).toBe(0.125);
  });

  test("a data size left unknown by a streaming writer means the rest of the file", () => {
    const bytes = concat(riff(fmt({})), ascii("data"), u32(0xffffffff), pcm16([1, 2, 3]));
    expect(infoOf(bytes).data).toEqual(Uint8Array.from(pcm16([1, 2, 3])));
  });

  test("ignores a wrong RIFF size and trailing bytes after the data", () => {
    const bytes = pcm16Wav([1, 2]);
    bytes.set(u32(12345678), 4);
    expect(infoOf(concat(bytes, [0, 0, 0]))).toMatchObject({ durationMs: 0.25 });
  });

  test("reads a file that starts inside a larger buffer", () => {
    const bytes = pcm16Wav([7, 8, 9]);
    const inside = concat([1, 2, 3], bytes, [4, 5]).subarray(3, 3 + bytes.length);
    expect(infoOf(inside).data).toEqual(Uint8Array.from(pcm16([7, 8, 9])));
  });

  test.each([
    ["an empty file", new Uint8Array(0), "not a WAV file: no RIFF header"],
    ["a file shorter than a header", ascii("RIFF\0\0"), "not a WAV file: no RIFF header"],
    ["an Ogg file", ascii("OggS\0\x02\0\0\0\0\0\0\0\0"), "not a WAV file: no RIFF header"],
    ["a big-endian RIFX file", ascii("RIFX\0\0\0\x04WAVE"), "unsupported WAV: big-endian (RIFX)"],
    ["an RF64 file", ascii("RF64\xff\xff\xff\xffWAVE"), "unsupported WAV: RF64"],
    ["an AVI file", ascii("RIFF\x04\0\0\0AVI "), "not a WAV file: a RIFF file of another form"],
    ["no fmt chunk", riff(chunk("data", [0, 0])), "malformed WAV: no fmt chunk"],
    ["no data chunk", riff(fmt({}), chunk("LIST", [])), "malformed WAV: no data chunk"],
    ["nothing after WAVE", riff(), "malformed WAV: no fmt chunk"],
    [
      "a short fmt chunk",
      riff(chunk("fmt ", [1, 0, 1, 0]), chunk("data", [])),
      "malformed WAV: the fmt chunk is too short",
    ],
    [
      "a truncated fmt chunk",
      concat(riff(), ascii("fmt "), u32(16), [1, 0, 1, 0]),
      "truncated fmt chunk",
    ],
    [
      "a truncated data chunk",
      riff(fmt({}), chunk("data", [1, 2, 3, 4], 1000)),
      "truncated data chunk: its header declares 1000 bytes, the file holds 4",
    ],
    [
      "a chunk that runs past the end",
      riff(fmt({}), chunk("LIST", [1, 2], 0x7fffffff)),
      'malformed WAV: the "LIST" chunk runs past the end of the file',
    ],
    [
      "an unnamed chunk that runs past the end",
      riff(fmt({}), chunk("\x00\x01\xfe\xff", [], 64)),
      "malformed WAV: the 0x0001feff chunk runs past the end of the file",
    ],
    [
      "MP3 in a WAV",
      riff(fmt({ tag: 0x55, bits: 0 }), chunk("data", [])),
      "unsupported WAV encoding: format tag 85 (MPEG)",
    ],
    [
      "Microsoft ADPCM",
      riff(fmt({ tag: 2, bits: 4 }), chunk("data", [])),
      "unsupported WAV encoding: format tag 2 (Microsoft ADPCM)",
    ],
    [
      "an unknown format",
      riff(fmt({ tag: 0x1234 }), chunk("data", [])),
      "unsupported WAV encoding: format tag 4660",
    ],
    [
      "an extensible MP3",
      riff(fmt({ tag: 0xfffe, sub: 0x55, bits: 16 }), chunk("data", [])),
      "unsupported WAV encoding: format tag 85 (MPEG)",
    ],
    [
      "an extensible sub-format that is no format tag",
      riff(fmt({ tag: 0xfffe, sub: 1, tail: new Array(14).fill(7) }), chunk("data", [])),
      "unsupported WAV encoding: a non-standard extensible sub-format",
    ],
    [
      "a short extensible fmt chunk",
      riff(chunk("fmt ", [...u16(0xfffe), ...new Array(16).fill(0)]), chunk("data", [])),
      "malformed WAV: the extensible fmt chunk is too short",
    ],
    [
      "12-bit PCM",
      riff(fmt({ bits: 12 }), chunk("data", [])),
      "unsupported WAV encoding: 12-bit PCM",
    ],
    [
      "16-bit µ-law",
      riff(fmt({ tag: 7, bits: 16 }), chunk("data", [])),
      "unsupported WAV encoding: 16-bit µ-law",
    ],
    [
      "64-bit float",
      riff(fmt({ tag: 3, bits: 64 }), chunk("data", [])),
      "unsupported WAV encoding: 64-bit float",
    ],
    ["no channels", riff(fmt({ channels: 0 }), chunk("data", [])), "malformed WAV: no channels"],
    [
      "nine channels",
      riff(fmt({ channels: 9 }), chunk("data", [])),
      "unsupported WAV: 9 channels; at most 8",
    ],
    [
      "a sample rate of 0",
      riff(fmt({ rate: 0 }), chunk("data", [])),
      "unsupported sample rate: 0 Hz; accepted from 4000 to 192000 Hz",
    ],
    [
      "a sample rate of 384 kHz",
      riff(fmt({ rate: 384000 }), chunk("data", [])),
      "unsupported sample rate: 384000 Hz; accepted from 4000 to 192000 Hz",
    ],
  ])("refuses %s", (_, bytes, reason) => {
    expect(reasonOf(bytes)).toBe(reason);
  });

  test("never throws, and what it reads lies inside the input", () => {
    const valid = riff(
      fmt({ tag: 0xfffe, sub: 1, channels: 2, bits: 24 }),
      chunk("LIST", [1, 2, 3]),
      chunk("data", new Uint8Array(60)),
    );
    const mutated = fc
      .tuple(
        fc.array(fc.tuple(fc.nat(valid.length - 1), fc.nat(255)), { maxLength: 6 }),
        fc.nat(valid.length),
      )
      .map(([edits, length]) => {
        const bytes = valid.slice(0, length);
        for (const [at, value] of edits) if (at < bytes.length) bytes[at] = value;
        return bytes;
      });
    const inputs = fc.oneof(
      mutated,
      fc.uint8Array({ maxLength: 200 }).map((b) => concat(ascii("RIFF\0\0\0\0WAVE"), b)),
    );
    fc.assert(
      fc.property(inputs, (bytes) => {
        const parsed = parseWav(bytes);
        if (!parsed.ok) return expect(parsed.reason.length).toBeGreaterThan(10);
        const { data } = parsed.info;
        expect(data.buffer).toBe(bytes.buffer);
        expect(data.byteOffset + data.length).toBeLessThanOrEqual(bytes.byteOffset + bytes.length);
        expect(Number.isFinite(parsed.info.durationMs)).toBe(true);
      }),
      { numRuns: 3000 },
    );
  });

  test("a file of nothing but empty chunks takes one step per chunk", () => {
    const bytes = riff(...Array.from({ length: 200_000 }, () => chunk("JUNK", [])));
    const started = performance.now();
    expect(reasonOf(bytes)).toBe("malformed WAV: no fmt chunk");
    expect(performance.now() - started).toBeLessThan(2000);
  });
});

describe("encodeWav", () => {
  test("writes the canonical 44-byte header, byte for byte", () => {
    expect(encodeWav(Int16Array.from([1, -2]), 8000)).toEqual(
      concat(
        ascii("RIFF"),
        [40, 0, 0, 0],
        ascii("WAVEfmt "),
        [16, 0, 0, 0, 1, 0, 1, 0, 0x40, 0x1f, 0, 0, 0x80, 0x3e, 0, 0, 2, 0, 16, 0],
        ascii("data"),
        [4, 0, 0, 0, 1, 0, 0xfe, 0xff],
      ),
    );
  });

  test("reads back as it was written", () => {
    const samples = Int16Array.from(tone(440, 16000, 0.1));
    const info = infoOf(encodeWav(samples, 16000));
    expect(info).toMatchObject({
      encoding: "pcm",
      bitsPerSample: 16,
      sampleRate: 16000,
      channels: 1,
      durationMs: 100,
    });
    expect(new Int16Array(info.data.slice().buffer)).toEqual(samples);
  });

  test("refuses a sample rate that a header cannot hold", () => {
    expect(() => encodeWav(new Int16Array(1), 0)).toThrow(RangeError);
    expect(() => encodeWav(new Int16Array(1), 8000.5)).toThrow(RangeError);
    expect(() => encodeWav(new Int16Array(1), 2 ** 32)).toThrow(RangeError);
  });
});

describe("normalizeMessage", () => {
  test.each([
    ["16-bit PCM mono at 8 kHz", pcm16Wav(tone(440, 8000, 0.5))],
    ["16-bit PCM mono at 16 kHz", pcm16Wav(tone(440, 16000, 0.5), 16000)],
    [
      "µ-law mono at 8 kHz",
      riff(
        fmt({ tag: 7, bits: 8 }),
        chunk("data", encodeMulaw(Int16Array.from(tone(440, 8000, 0.5)))),
      ),
    ],
    [
      "A-law mono at 8 kHz",
      riff(
        fmt({ tag: 6, bits: 8 }),
        chunk("data", encodeAlaw(Int16Array.from(tone(440, 8000, 0.5)))),
      ),
    ],
    [
      "extensible 16-bit PCM mono at 8 kHz",
      riff(fmt({ tag: 0xfffe, sub: 1 }), chunk("data", pcm16(tone(440, 8000, 0.5)))),
    ],
  ])("keeps %s as sent", (_, bytes) => {
    const result = normalizeMessage(bytes);
    if (!result.ok) throw new Error(result.reason);
    expect(result.converted).toBe(false);
    expect(result.wav).toBe(bytes);
    expect(result.info).toEqual(infoOf(bytes));
  });

  const samples8kHz = tone(440, 8000, 0.5);
  test.each([
    [
      "44.1 kHz stereo",
      riff(
        fmt({ rate: 44100, channels: 2 }),
        chunk("data", pcm16(tone(440, 44100, 0.5).flatMap((s) => [s, s]))),
      ),
    ],
    [
      "48 kHz 24-bit",
      riff(
        fmt({ rate: 48000, bits: 24 }),
        chunk(
          "data",
          tone(440, 48000, 0.5).flatMap((s) => [0, ...u16(s)]),
        ),
      ),
    ],
    [
      "22.05 kHz 8-bit",
      riff(
        fmt({ rate: 22050, bits: 8 }),
        chunk(
          "data",
          tone(440, 22050, 0.5).map((s) => 128 + (s >> 8)),
        ),
      ),
    ],
    [
      "11.025 kHz 32-bit",
      riff(
        fmt({ rate: 11025, bits: 32 }),
        chunk(
          "data",
          tone(440, 11025, 0.5).flatMap((s) => [0, 0, ...u16(s)]),
        ),
      ),
    ],
    [
      "16 kHz float",
      riff(
        fmt({ tag: 3, rate: 16000, bits: 32 }),
        chunk(
          "data",
          new Uint8Array(Float32Array.from(tone(440, 16000, 0.5), (s) => s / 32768).buffer),
        ),
      ),
    ],
    [
      "8 kHz stereo",
      riff(fmt({ channels: 2 }), chunk("data", pcm16(samples8kHz.flatMap((s) => [s, s])))),
    ],
    [
      "8 kHz 8-bit",
      riff(
        fmt({ bits: 8 }),
        chunk(
          "data",
          samples8kHz.map((s) => 128 + (s >> 8)),
        ),
      ),
    ],
    [
      "µ-law at 16 kHz",
      riff(
        fmt({ tag: 7, bits: 8, rate: 16000 }),
        chunk("data", encodeMulaw(Int16Array.from(tone(440, 16000, 0.5)))),
      ),
    ],
    [
      "12 kHz extensible stereo",
      riff(
        fmt({ tag: 0xfffe, sub: 1, rate: 12000, channels: 2 }),
        chunk("data", pcm16(tone(440, 12000, 0.5).flatMap((s) => [s, s]))),
      ),
    ],
  ])("converts %s to 8 kHz 16-bit PCM mono", (_, bytes) => {
    const result = normalizeMessage(bytes);
    if (!result.ok) throw new Error(result.reason);
    expect(result.converted).toBe(true);
    expect(result.wav.length).toBe(44 + 4000 * 2);
    expect(result.info).toEqual(infoOf(result.wav));
    expect(result.info).toMatchObject({
      encoding: "pcm",
      bitsPerSample: 16,
      sampleRate: 8000,
      channels: 1,
      durationMs: 500,
    });
    // The same tone comes out, within the quantisation of the narrowest input (8-bit: 1/256).
    expect(rmsError(samples8k(result.wav), samples8kHz)).toBeLessThan(200);
  });

  test("averages the channels", () => {
    const frames = Array.from({ length: 800 }, (_, i) => [1000 + i, 3000 - i, -2000, 6000]).flat();
    const result = normalizeMessage(riff(fmt({ channels: 4 }), chunk("data", pcm16(frames))));
    if (!result.ok) throw new Error(result.reason);
    expect([...samples8k(result.wav)]).toEqual(new Array(800).fill(2000));
  });

  test("reads 24- and 32-bit samples whole, rounded to 16 bits", () => {
    const wide = [0x7fffff, -0x800000, 0x000080, 0x000100, -0x000100, 0x123456, -0x123456];
    const expected = [32767, -32768, 1, 1, -1, 4660, -4660];
    const s24 = wide.flatMap((s) => [s & 0xff, (s >> 8) & 0xff, (s >> 16) & 0xff]);
    const s32 = wide.flatMap((s) => u32((s << 8) | 0x7f));
    for (const [bits, data] of [
      [24, s24],
      [32, s32],
    ] as const) {
      const result = normalizeMessage(riff(fmt({ bits }), chunk("data", data)));
      if (!result.ok) throw new Error(result.reason);
      expect([bits, ...samples8k(result.wav)]).toEqual([bits, ...expected]);
    }
  });

  test("clips float samples beyond full scale and reads NaN as silence", () => {
    const floats = Float32Array.from([1.5, -2, Number.NaN, 0.5, -0.5]);
    const result = normalizeMessage(
      riff(fmt({ tag: 3, bits: 32 }), chunk("data", new Uint8Array(floats.buffer))),
    );
    if (!result.ok) throw new Error(result.reason);
    expect([...samples8k(result.wav)]).toEqual([32767, -32768, 0, 16384, -16384]);
  });

  test("a NaN or an infinity in a float file does not spread through the resampler", () => {
    const floats = new Float32Array(1600).fill(0.25);
    floats[400] = Number.NaN;
    floats[1200] = Number.POSITIVE_INFINITY;
    const result = normalizeMessage(
      riff(fmt({ tag: 3, bits: 32, rate: 16000 }), chunk("data", new Uint8Array(floats.buffer))),
    );
    if (!result.ok) throw new Error(result.reason);
    const samples = samples8k(result.wav);
    for (const [i, s] of samples.entries()) {
      const nearBadSample = Math.abs(i - 200) < 15 || Math.abs(i - 600) < 15;
      if (nearBadSample) expect(s).toBeWithin(1000, 24000);
      else expect(s).toBeWithin(8191, 8194);
    }
  });

  test("refuses a message longer than the limit, saying by how much", () => {
    const long = riff(
      fmt({ tag: 7, bits: 8 }),
      chunk("data", new Uint8Array(8000 * 73.2).fill(0xff)),
    );
    expect(normalizeMessage(long)).toEqual({
      ok: false,
      reason: "the message is 73.2 s long; at most 60 s",
    });
    const justOver = pcm16Wav(new Array(12_001).fill(0));
    expect(normalizeMessage(justOver, 1500)).toEqual({
      ok: false,
      reason: "the message is 1.6 s long; at most 1.5 s",
    });
    expect(normalizeMessage(pcm16Wav(new Array(12_000).fill(0)), 1500).ok).toBe(true);
  });

  test("refuses a message without audio", () => {
    const empty = { ok: false as const, reason: "the message holds no audio" };
    expect(normalizeMessage(pcm16Wav([]))).toEqual(empty);
    expect(normalizeMessage(riff(fmt({ channels: 2 }), chunk("data", [1, 0])))).toEqual(empty);
    // Three samples at 48 kHz make no sample at 8 kHz.
    expect(normalizeMessage(pcm16Wav([1, 2, 3], 48000))).toEqual(empty);
  });

  test("passes on why a file cannot be read", () => {
    expect(normalizeMessage(ascii("ID3\x04 not a wav"))).toEqual({
      ok: false,
      reason: "not a WAV file: no RIFF header",
    });
  });
});

describe("samples8k", () => {
  test("16-bit PCM at 8 kHz comes out as it is", () => {
    expect([...samples8k(pcm16Wav([0, 1, -1, 32767, -32768]))]).toEqual([0, 1, -1, 32767, -32768]);
  });

  test("G.711 is decoded", () => {
    const codes = Uint8Array.from({ length: 256 }, (_, i) => i);
    expect(samples8k(riff(fmt({ tag: 7, bits: 8 }), chunk("data", codes)))).toEqual(
      decodeMulaw(codes),
    );
    expect(samples8k(riff(fmt({ tag: 6, bits: 8 }), chunk("data", codes)))).toEqual(
      decodeAlaw(codes),
    );
  });

  test("16 kHz is brought down to 8 kHz", () => {
    const samples = samples8k(pcm16Wav(tone(1000, 16000, 0.25), 16000));
    expect(samples).toHaveLength(2000);
    expect(rmsError(samples, tone(1000, 8000, 0.25))).toBeLessThan(100);
  });

  test("gives back what normalizeMessage converted", () => {
    const result = normalizeMessage(pcm16Wav(tone(440, 44100, 0.2), 44100));
    if (!result.ok) throw new Error(result.reason);
    expect(samples8k(result.wav)).toEqual(new Int16Array(result.info.data.slice().buffer));
  });

  test("throws the reason for a file it cannot read", () => {
    expect(() => samples8k(new Uint8Array(3))).toThrow("not a WAV file: no RIFF header");
  });
});
