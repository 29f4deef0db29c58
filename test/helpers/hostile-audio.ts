// Hostile audio built in memory: WAV headers that lie, float samples that are not numbers, and damaged copies of
// real clips. Shared by the hostile-input tests and the decode-limit tests.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sharedAudio, sharedDir } from './paths.js';

export interface WavHeader {
  /** 1 = integer PCM, 3 = IEEE float. */
  format: number;
  rate: number;
  channels: number;
  bits: number;
  /** RIFF chunk size; default what the data needs. */
  riffSize?: number;
  /** data chunk size; default the data's length. */
  dataSize?: number;
}

/** A canonical 44-byte WAV header followed by `data`, every field as given (true or not). */
export function wavFile(header: WavHeader, data: Buffer): Buffer {
  const out = Buffer.alloc(44);
  const blockAlign = (header.channels * header.bits) / 8;
  out.write('RIFF', 0);
  out.writeUInt32LE(header.riffSize ?? 36 + data.length, 4);
  out.write('WAVEfmt ', 8);
  out.writeUInt32LE(16, 16);
  out.writeUInt16LE(header.format, 20);
  out.writeUInt16LE(header.channels, 22);
  out.writeUInt32LE(header.rate, 24);
  out.writeUInt32LE((header.rate * blockAlign) >>> 0, 28);
  out.writeUInt16LE(blockAlign & 0xffff, 32);
  out.writeUInt16LE(header.bits, 34);
  out.write('data', 36);
  out.writeUInt32LE(header.dataSize ?? data.length, 40);
  return Buffer.concat([out, data]);
}

/** 16-bit mono PCM WAV whose header claims `rate` Hz, holding `samples` samples of a quiet tone. */
export function toneWav(rate: number, samples: number): Buffer {
  const data = Buffer.alloc(samples * 2);
  for (let i = 0; i < samples; i++) data.writeInt16LE(Math.round(Math.sin(i / 3) * 3000), i * 2);
  return wavFile({ format: 1, rate, channels: 1, bits: 16 }, data);
}

/** A 16 kHz mono IEEE-float WAV (32- or 64-bit) of `seconds`; sample i is `sample(i)`. */
export function floatWav(seconds: number, bits: 32 | 64, sample: (i: number) => number): Buffer {
  const count = Math.round(16000 * seconds);
  const data = Buffer.alloc((count * bits) / 8);
  for (let i = 0; i < count; i++) {
    if (bits === 32) data.writeFloatLE(sample(i), i * 4);
    else data.writeDoubleLE(sample(i), i * 8);
  }
  return wavFile({ format: 3, rate: 16000, channels: 1, bits }, data);
}

/** Float WAVs whose samples are not finite or far out of range: the files that crashed whisper.cpp's DTW. */
export function nonFiniteWavs(): { name: string; bytes: Buffer }[] {
  const speechLike = (i: number) => Math.sin(i / 7) * 0.3;
  const files: { name: string; bytes: Buffer }[] = [];
  for (const bits of [32, 64] as const) {
    for (const [label, value] of [
      ['NaN', Number.NaN],
      ['+Inf', Number.POSITIVE_INFINITY],
      ['-Inf', Number.NEGATIVE_INFINITY],
      ['+3e38', 3e38],
      ['-3e38', -3e38],
    ] as const) {
      files.push({ name: `float${bits} ${label}`, bytes: floatWav(2, bits, () => value) });
    }
    // Every 100th sample damaged inside a tone: the decoder must not let one bad sample through.
    files.push({
      name: `float${bits} tone with NaN and Inf sprinkled`,
      bytes: floatWav(2, bits, (i) => (i % 100 === 0 ? Number.NaN : i % 100 === 50 ? -Infinity : speechLike(i))),
    });
  }
  return files;
}

/** WAV headers with absurd rates, channel counts and sizes, each around a little real data. */
export function lyingWavs(): { name: string; bytes: Buffer }[] {
  const data = Buffer.alloc(64_000, 0x10);
  const pcm = { format: 1, rate: 16000, channels: 1, bits: 16 };
  const out: { name: string; bytes: Buffer }[] = [];
  for (const rate of [1, 7, 100, 3999, 10_000_000, 0xffffffff]) {
    out.push({ name: `rate ${rate} Hz`, bytes: wavFile({ ...pcm, rate }, data) });
  }
  for (const channels of [0, 255, 65535]) {
    out.push({ name: `${channels} channels`, bytes: wavFile({ ...pcm, channels }, data) });
  }
  for (const bits of [0, 1, 7, 12, 128]) out.push({ name: `${bits} bits`, bytes: wavFile({ ...pcm, bits }, data) });
  for (const size of [0, 1, 44, 0x7fffffff, 0xffffffff]) {
    out.push({ name: `data size ${size}`, bytes: wavFile({ ...pcm, dataSize: size }, data) });
    out.push({ name: `RIFF size ${size}`, bytes: wavFile({ ...pcm, riffSize: size }, data) });
  }
  out.push({ name: 'header only', bytes: wavFile(pcm, Buffer.alloc(0)) });
  out.push({ name: 'odd data length', bytes: wavFile(pcm, Buffer.alloc(1001, 0x20)) });
  return out;
}

/** Every shared clip (not the transcripts or the RTTM), as bytes. */
export function sharedClips(): { name: string; bytes: Buffer }[] {
  return readdirSync(join(sharedDir, 'audio'))
    .filter((f) => !/\.(tsv|rttm)$/.test(f))
    .sort()
    .map((name) => ({ name, bytes: readFileSync(sharedAudio(name)) }));
}

/** A deterministic pseudo-random source, so a failure names an input that can be made again. */
export function xorshift(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 0x100000000;
  };
}

/**
 * Damaged copies of a clip: cut at `cuts` places spread over the file (the header's end included), and `flips`
 * copies with bytes overwritten, half of them in the first 4 KiB where headers and indexes live.
 */
export function damagedCopies(
  clip: { name: string; bytes: Buffer },
  cuts: number,
  flips: number,
  seed: number,
): { name: string; bytes: Buffer }[] {
  const random = xorshift(seed);
  const int = (n: number) => Math.floor(random() * n);
  const out: { name: string; bytes: Buffer }[] = [];
  const length = clip.bytes.length;
  for (let i = 0; i < cuts; i++) {
    const at = i === 0 ? Math.min(length - 1, 44) : Math.floor((length * i) / cuts) + int(64);
    out.push({ name: `${clip.name} cut at ${at}`, bytes: Buffer.from(clip.bytes.subarray(0, at)) });
  }
  for (let i = 0; i < flips; i++) {
    const bytes = Buffer.from(clip.bytes);
    const count = 1 + int(64);
    for (let j = 0; j < count; j++) bytes[j % 2 ? int(Math.min(4096, length)) : int(length)] = int(256);
    out.push({ name: `${clip.name} with ${count} bytes overwritten (seed ${seed}, copy ${i})`, bytes });
  }
  return out;
}
