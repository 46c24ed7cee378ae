import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import {
  alawToLinear,
  decodeAlaw,
  decodeMulaw,
  encodeAlaw,
  encodeMulaw,
  linearToAlaw,
  linearToMulaw,
  mulawToLinear,
} from "../../src/media/g711.ts";

/**
 * Digests of the reference implementations' output: the ITU-T G.191 encoders over every
 * 16-bit sample from -32768 up, and the classic Sun decoders over every code, as 16-bit
 * little-endian samples.
 */
const REFERENCE_SHA256 = {
  mulawEncode: "90c29de505fb68e766118303bd552a16005dcf810873698bee1d8f3b247ce28c",
  alawEncode: "38488f6fd710f4686360edc4d38639f96c491595ef93f8eb8d62d5e07ca6ce7b",
  mulawDecode: "3dab54339e520bb2c924826e3b72a917a2b612e9fd12fc867500f1d983a75827",
  alawDecode: "e04788d110e58ff8c70c93b8480190d973e3b67876b6119abbaec766cc75c174",
};

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const everySample = Int16Array.from({ length: 65536 }, (_, i) => i - 32768);
const everyCode = Uint8Array.from({ length: 256 }, (_, i) => i);
const littleEndian = (samples: Int16Array) => {
  const bytes = new Uint8Array(samples.length * 2);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < samples.length; i++) view.setInt16(i * 2, samples[i] as number, true);
  return bytes;
};

describe("µ-law", () => {
  test("encodes known samples as the reference does", () => {
    const vectors: [number, number][] = [
      [0, 0xff],
      [3, 0xff],
      [4, 0xfe],
      [-1, 0x7f],
      [-4, 0x7f],
      [-5, 0x7e],
      [15, 0xfd],
      [100, 0xf2],
      [-100, 0x73],
      [1000, 0xce],
      [-1000, 0x4e],
      [4000, 0xaf],
      [8159, 0x9f],
      [-8159, 0x1f],
      [32767, 0x80],
      [-32768, 0x00],
    ];
    for (const [sample, code] of vectors)
      expect([sample, linearToMulaw(sample)]).toEqual([sample, code]);
  });

  test("decodes known codes as the reference does", () => {
    const vectors: [number, number][] = [
      [0x00, -32124],
      [0x01, -31100],
      [0x0f, -16764],
      [0x10, -15996],
      [0x7e, -8],
      [0x7f, 0],
      [0x80, 32124],
      [0xd5, 716],
      [0xfe, 8],
      [0xff, 0],
    ];
    for (const [code, sample] of vectors)
      expect([code, mulawToLinear(code)]).toEqual([code, sample]);
  });

  test("matches the reference over every sample and every code", () => {
    expect(sha256(encodeMulaw(everySample))).toBe(REFERENCE_SHA256.mulawEncode);
    expect(sha256(littleEndian(decodeMulaw(everyCode)))).toBe(REFERENCE_SHA256.mulawDecode);
  });

  test("every code but negative zero survives a round trip", () => {
    for (let code = 0; code < 256; code++) {
      const expected = code === 0x7f ? 0xff : code;
      expect(linearToMulaw(mulawToLinear(code))).toBe(expected);
    }
  });
});

describe("A-law", () => {
  test("encodes known samples as the reference does", () => {
    const vectors: [number, number][] = [
      [0, 0xd5],
      [15, 0xd5],
      [16, 0xd4],
      [-1, 0x55],
      [-16, 0x55],
      [-17, 0x54],
      [32, 0xd7],
      [100, 0xd3],
      [-100, 0x53],
      [1000, 0xfa],
      [4000, 0x9a],
      [-4000, 0x1a],
      [32767, 0xaa],
      [-32768, 0x2a],
    ];
    for (const [sample, code] of vectors)
      expect([sample, linearToAlaw(sample)]).toEqual([sample, code]);
  });

  test("decodes known codes as the reference does", () => {
    const vectors: [number, number][] = [
      [0x00, -5504],
      [0x2a, -32256],
      [0x55, -8],
      [0x5a, -248],
      [0x7f, -848],
      [0x80, 5504],
      [0xaa, 32256],
      [0xd4, 24],
      [0xd5, 8],
      [0xff, 848],
    ];
    for (const [code, sample] of vectors)
      expect([code, alawToLinear(code)]).toEqual([code, sample]);
  });

  test("matches the reference over every sample and every code", () => {
    expect(sha256(encodeAlaw(everySample))).toBe(REFERENCE_SHA256.alawEncode);
    expect(sha256(littleEndian(decodeAlaw(everyCode)))).toBe(REFERENCE_SHA256.alawDecode);
  });

  test("every code survives a round trip", () => {
    for (let code = 0; code < 256; code++) expect(linearToAlaw(alawToLinear(code))).toBe(code);
  });
});

describe.each([
  ["µ-law", encodeMulaw, decodeMulaw],
  ["A-law", encodeAlaw, decodeAlaw],
] as const)("%s over every sample", (_, encode, decode) => {
  const decoded = decode(encode(everySample));

  test("the decoded signal never goes down as the input goes up", () => {
    for (let i = 1; i < decoded.length; i++) {
      if ((decoded[i] as number) < (decoded[i - 1] as number)) {
        throw new Error(`${everySample[i]} decodes below ${everySample[i - 1]}`);
      }
    }
  });

  // Half a step at most; a segment's step is 1/16 of its span, under 1/27 of any sample in it.
  test("the error stays within 1/27 of the sample, or 16 near zero, short of clipping", () => {
    for (let i = 0; i < everySample.length; i++) {
      const sample = everySample[i] as number;
      if (Math.abs(sample) > 32000) continue;
      const error = Math.abs((decoded[i] as number) - sample);
      if (error > Math.max(16, Math.abs(sample) / 27)) {
        throw new Error(`${sample} decodes as ${decoded[i]}`);
      }
    }
  });

  test("a sample and its one's complement differ only in the sign bit", () => {
    const codes = encode(everySample);
    for (let s = 0; s <= 32767; s++) {
      expect((codes[s + 32768] as number) ^ (codes[~s + 32768] as number)).toBe(0x80);
    }
  });
});

test("samples beyond 16 bits are clamped", () => {
  expect(linearToMulaw(100_000)).toBe(linearToMulaw(32767));
  expect(linearToMulaw(-100_000)).toBe(linearToMulaw(-32768));
  expect(linearToAlaw(100_000)).toBe(linearToAlaw(32767));
  expect(linearToAlaw(-100_000)).toBe(linearToAlaw(-32768));
});
