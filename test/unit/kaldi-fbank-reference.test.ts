// The Kaldi fbank front end (3D-Speaker's CAM++, WeSpeaker; scripts/models/campplus-to-onnx.py) against torchaudio: the
// fixture holds torchaudio.compliance.kaldi.fbank(num_mel_bins=80, sample_frequency=16000, dither=0) of a 0.5 s clip
// of jfk.wav with the mean over its frames subtracted (made once with torch by
// scripts/models/reference/campplus-reference.py). Kaldi's defaults: Povey window, pre-emphasis 0.97, DC removal,
// snip_edges, 512-point power spectrum, 80 HTK-mel triangles over 20–8000 Hz, log floored at float32's epsilon.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { frontEndFor } from '../../src/diarize/speaker-front-end.js';
import { repoRoot, sharedDir } from '../helpers/paths.js';
import { readPcm16Wav } from '../helpers/wav.js';

interface CampplusReference {
  clips: { name: string; file: string; start: number; length: number; frames: number; features?: number[][] }[];
}

const reference = JSON.parse(
  readFileSync(join(repoRoot, 'scripts', 'models', 'reference', 'campplus-reference.json'), 'utf8'),
) as CampplusReference;

// torchaudio computes in float32 and builds its mel weights in float32 (up to 8e-4 relative error on the smallest
// ones): measured, a float64 Kaldi fbank differs from it by at most 2.0e-3 (in the weakest bins) and 2e-5 on average
// on this clip; the fixture's 6 significant digits add at most 1e-5. A Hamming instead of a Povey window, or mel
// triangles up to 7.6 kHz instead of 8 kHz, moves values by 0.1 or more.
const MAX_ABS = 5e-3;
const MEAN_ABS = 1e-4;

describe('Kaldi fbank front end', () => {
  it('is chosen for an 80-wide input, with the Povey window for `x` (3D-Speaker) and Hamming for `feats` (WeSpeaker)', () => {
    expect(frontEndFor(80, 'x')?.kind).toBe('kaldi-fbank');
    expect(frontEndFor(80, 'feats')?.kind).toBe('kaldi-fbank');
    const clip = new Float32Array(4000).map((_, i) => Math.sin(i / 7) * 0.3 + Math.sin(i / 3.1) * 0.1);
    const povey = frontEndFor(80, 'x')?.frames(clip, 0, 3200) as Float32Array;
    const hamming = frontEndFor(80, 'feats')?.frames(clip, 0, 3200) as Float32Array;
    let apart = 0;
    for (let i = 0; i < povey.length; i++)
      apart = Math.max(apart, Math.abs((povey[i] as number) - (hamming[i] as number)));
    expect(apart).toBeGreaterThan(0.05);
  });

  it("matches torchaudio's kaldi.fbank, mean-normalized, on the fixture clip", () => {
    const clip = reference.clips.find((c) => c.features !== undefined);
    if (!clip?.features) throw new Error('campplus-reference.json holds no clip with features');
    const audio = readPcm16Wav(join(sharedDir, clip.file));
    const samples = audio.subarray(clip.start, clip.start + clip.length);
    // The clip is 400 + 160 (frames - 1) samples long: Kaldi's snip_edges frames end exactly at its last sample, and
    // a window of 160 * frames samples reads the 240 after it, the same samples.
    expect(clip.length).toBe(400 + 160 * (clip.frames - 1));
    const frontEnd = frontEndFor(80, 'x')!;
    const frames = frontEnd.frames(samples, 0, 160 * clip.frames).slice();
    expect(frames.length).toBe(clip.frames * 80);
    frontEnd.prepare(frames, samples);
    let worst = 0;
    let total = 0;
    clip.features.forEach((row, f) => {
      expect(row.length).toBe(80);
      row.forEach((value, m) => {
        const diff = Math.abs((frames[f * 80 + m] as number) - value);
        worst = Math.max(worst, diff);
        total += diff;
      });
    });
    expect(clip.features.length).toBe(clip.frames);
    expect(total / (clip.frames * 80)).toBeLessThan(MEAN_ABS);
    expect(worst).toBeLessThan(MAX_ABS);
  });
});
