// Reading test audio without the addon (unit tier): a 16-bit mono WAV's samples.
import { readFileSync } from 'node:fs';

/** The samples of a 16-bit mono WAV (its data chunk found by its tag) as floats in [-1, 1). */
export function readPcm16Wav(path: string): Float32Array {
  const bytes = readFileSync(path);
  const data = bytes.indexOf('data', 12);
  const length = bytes.readUInt32LE(data + 4);
  const pcm = new Int16Array(bytes.buffer.slice(bytes.byteOffset + data + 8, bytes.byteOffset + data + 8 + length));
  return Float32Array.from(pcm, (v) => v / 32768);
}

/** Floats in [-1, 1] as 16-bit little-endian PCM bytes (clamped, rounded), what a client streams. */
export function pcm16(samples: Float32Array): Buffer {
  const out = Buffer.alloc(samples.length * 2);
  for (let i = 0; i < samples.length; i++) {
    out.writeInt16LE(Math.max(-32768, Math.min(32767, Math.round((samples[i] as number) * 32768))), 2 * i);
  }
  return out;
}
