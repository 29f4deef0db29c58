// The GE2E speaker encoder's front end (src/diarize/speaker-front-end.ts) against Resemblyzer's, as numpy computes it
// (scripts/peers/ge2e_mel_peer.py, the formulas librosa 0.10 uses): mel frames of jfk.wav to 1e-4 of the largest
// value, and the real encoder's embeddings of 1.6 s partials from the two front ends to cosine 0.9999.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as ort from 'onnxruntime-node';
import { afterAll, describe, expect, it } from 'vitest';
import { frontEndFor } from '../../src/diarize/speaker-front-end.js';
import { repoRoot, sharedAudio } from '../helpers/paths.js';
import { requirePeerPython, requireRealModel } from '../helpers/real-models.js';
import { readPcm16Wav } from '../helpers/wav.js';

const python = requirePeerPython();
const ge2e = requireRealModel('speaker-ge2e');
const work = mkdtempSync(join(tmpdir(), 'voxmill-ge2e-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

async function peerMels(samples: Float32Array): Promise<Float32Array> {
  const input = join(work, 'in.f32');
  const output = join(work, 'out.f32');
  writeFileSync(input, Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength));
  await promisify(execFile)(python.path as string, [join(repoRoot, 'scripts/peers/ge2e_mel_peer.py'), input, output]);
  const bytes = readFileSync(output);
  return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
}

describe.skipIf(python.skip)('GE2E front end against numpy (Resemblyzer / librosa formulas)', () => {
  const samples = readPcm16Wav(sharedAudio('jfk.wav'));
  const frontEnd = frontEndFor(40, 'mels')!;
  const ours = frontEnd.frames(samples, 0, samples.length);

  it('gives the same mel frames', async () => {
    const theirs = await peerMels(samples);
    let largest = 0;
    for (const v of theirs) largest = Math.max(largest, v);
    let worst = 0;
    for (let i = 0; i < ours.length; i++)
      worst = Math.max(worst, Math.abs((ours[i] as number) - (theirs[i] as number)));
    expect(ours.length).toBeGreaterThan(1000 * 40);
    expect(worst / largest).toBeLessThan(1e-4);
  });

  it.skipIf(ge2e.skip)('gives the same embeddings of 1.6 s partials through the real encoder', async () => {
    const theirs = await peerMels(samples);
    const session = await ort.InferenceSession.create(ge2e.path as string);
    const embed = async (mels: Float32Array, start: number) => {
      const slice = mels.slice(start * 40, (start + 160) * 40);
      const out = await session.run({ mels: new ort.Tensor('float32', slice, [1, 160, 40]) });
      return out.embedding!.data as Float32Array;
    };
    for (const start of [0, 77, 154, 231, 308, 385]) {
      const a = await embed(ours, start);
      const b = await embed(theirs, start);
      let cosine = 0;
      for (let i = 0; i < a.length; i++) cosine += (a[i] as number) * (b[i] as number);
      expect(cosine).toBeGreaterThan(0.9999);
    }
    await session.release();
  });
});
