// 200 hostile inputs: random bytes, truncated and corrupted copies of the shared files. Every one must
// end in a valid decode or a typed AudioDecodeError. A crash kills this forked test process and fails it.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AudioDecodeError, decodeAudio } from '../../src/index.js';
import { xorshift } from '../helpers/hostile-audio.js';
import { sharedAudio, sharedDir } from '../helpers/paths.js';

function hostileInputs(count: number): { name: string; bytes: Buffer }[] {
  const random = xorshift(0x5eed);
  const int = (n: number) => Math.floor(random() * n);
  const sources = readdirSync(join(sharedDir, 'audio'))
    .filter((f) => !/\.(tsv|rttm)$/.test(f) && f !== 'gb0.wav')
    .map((f) => ({ name: f, bytes: readFileSync(sharedAudio(f)) }));
  const inputs: { name: string; bytes: Buffer }[] = [];
  for (let i = 0; inputs.length < count; i++) {
    const source = sources[i % sources.length]!;
    const kind = i % 4;
    if (kind === 0) {
      const bytes = Buffer.alloc(1 + int(20000));
      for (let j = 0; j < bytes.length; j++) bytes[j] = int(256);
      inputs.push({ name: `random ${bytes.length} bytes`, bytes });
    } else if (kind === 1) {
      const cut = int(source.bytes.length);
      inputs.push({ name: `${source.name} truncated at ${cut}`, bytes: Buffer.from(source.bytes.subarray(0, cut)) });
    } else if (kind === 2) {
      const bytes = Buffer.from(source.bytes);
      const flips = 1 + int(200);
      // Half of the corruption lands in the first 4 KiB, where headers and indexes live.
      for (let j = 0; j < flips; j++) bytes[j % 2 ? int(Math.min(4096, bytes.length)) : int(bytes.length)] = int(256);
      inputs.push({ name: `${source.name} with ${flips} corrupted bytes`, bytes });
    } else {
      const bytes = Buffer.from(source.bytes.subarray(0, Math.min(source.bytes.length, 64 + int(4096))));
      for (let j = 8; j < bytes.length; j += 1 + int(64)) bytes.writeUInt8(0xff, j);
      inputs.push({ name: `${source.name} header with 0xff lengths`, bytes });
    }
  }
  return inputs;
}

describe('decoder under hostile input', () => {
  it('200 inputs: zero crashes, each a valid decode or a typed AudioDecodeError', async () => {
    const inputs = hostileInputs(200);
    const outcomes = { decoded: 0, rejected: 0 };
    const codes = new Map<string, number>();
    let next = 0;
    const worker = async () => {
      while (next < inputs.length) {
        const input = inputs[next++]!;
        try {
          const audio = await decodeAudio(input.bytes, { maxDurationSeconds: 600 });
          expect(audio.samples.length, input.name).toBeGreaterThan(0);
          for (let i = 0; i < audio.samples.length; i += 97) {
            expect(Number.isFinite(audio.samples[i]), input.name).toBe(true);
          }
          outcomes.decoded++;
        } catch (error) {
          expect(error, input.name).toBeInstanceOf(AudioDecodeError);
          const code = (error as AudioDecodeError).code;
          codes.set(code, (codes.get(code) ?? 0) + 1);
          outcomes.rejected++;
        }
      }
    };
    await Promise.all([worker(), worker(), worker(), worker()]);
    expect(outcomes.decoded + outcomes.rejected).toBe(200);
    // Both paths were exercised: truncated files still decode, random bytes do not.
    expect(outcomes.decoded).toBeGreaterThan(20);
    expect(outcomes.rejected).toBeGreaterThan(20);
  });
});
