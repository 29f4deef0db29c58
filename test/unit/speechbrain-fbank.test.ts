// The SpeechBrain fbank front end (ECAPA-TDNN's, scripts/models/ecapa-to-onnx.py) against SpeechBrain itself: the
// fixture holds the first frames of speechbrain.lobes.features.Fbank(n_mels=80) on a clip of jfk.wav, in dB before
// the top_db clamp (made once with torch by scripts/models/reference/ecapa-reference.py).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { frontEndFor, speechbrainFilterbank } from '../../src/diarize/speaker-front-end.js';
import { repoRoot, sharedDir } from '../helpers/paths.js';
import { readPcm16Wav } from '../helpers/wav.js';

interface EcapaReference {
  clips: { file: string; start: number; length: number; frames: number }[];
  fbank: { clip: number; frames_db: number[][]; clamp_floor_db: number };
}

const reference = JSON.parse(
  readFileSync(join(repoRoot, 'scripts', 'models', 'reference', 'ecapa-reference.json'), 'utf8'),
) as EcapaReference;

// torch computes the STFT in float32: measured, the numpy float64 front end differs from it by at most 1.7e-4 dB
// on these frames (in the highest, weakest bins; the fixture's 6 significant digits add at most 5e-5 dB). 1e-3 dB
// (a power ratio of 2.3e-4) leaves a margin of 6, while a wrong window, padding, mel scale or triangle shifts
// values by tenths of a dB or more.
const TOLERANCE_DB = 1e-3;

describe('SpeechBrain fbank front end', () => {
  it('is chosen by the input name speechbrain_fbank, 80 wide', () => {
    expect(frontEndFor(80, 'speechbrain_fbank')?.kind).toBe('speechbrain-fbank');
    expect(frontEndFor(undefined, 'speechbrain_fbank')?.kind).toBe('speechbrain-fbank');
    expect(frontEndFor(40, 'speechbrain_fbank')).toBeUndefined();
    expect(frontEndFor(80, 'feats')?.kind).toBe('kaldi-fbank');
  });

  it("matches SpeechBrain's Fbank (before the top_db clamp) on the fixture clip's first frames", () => {
    const { clip: index, frames_db: expected, clamp_floor_db: floor } = reference.fbank;
    const clip = reference.clips[index]!;
    const audio = readPcm16Wav(join(sharedDir, clip.file));
    const samples = audio.subarray(clip.start, clip.start + clip.length);
    const frontEnd = frontEndFor(80, 'speechbrain_fbank')!;
    // SpeechBrain sees the clip alone: its centred frames read zeros before the clip's first sample, as these do.
    const frames = frontEnd.frames(samples, 0, samples.length);
    // torch.stft's center=True gives 1 + length // 160 frames; a window here gets length // 160.
    expect(frames.length / 80).toBe(clip.frames - 1);
    let worst = 0;
    expected.forEach((row, f) => {
      row.forEach((value, m) => {
        worst = Math.max(worst, Math.abs((frames[f * 80 + m] as number) - value));
      });
    });
    expect(worst).toBeLessThan(TOLERANCE_DB);
    // The fixture pins unclamped values: some of them lie below the clip's clamp floor.
    expect(expected.flat().some((v) => v < floor)).toBe(true);
  });

  it('leaves the frames alone in prepare (the model clamps and removes the mean)', () => {
    const frontEnd = frontEndFor(80, 'speechbrain_fbank')!;
    const frames = Float32Array.from({ length: 160 }, (_, i) => i - 50);
    const before = frames.slice();
    frontEnd.prepare(frames, new Float32Array(320));
    expect(Array.from(frames)).toEqual(Array.from(before));
  });

  it('has symmetric triangles of peak at most 1 (SpeechBrain: the half-width is the gap to the previous point)', () => {
    const bank = speechbrainFilterbank();
    expect(bank).toHaveLength(80);
    for (const weights of bank) {
      expect(weights).toHaveLength(201);
      expect(Math.max(...weights)).toBeLessThanOrEqual(1);
      expect(Math.max(...weights)).toBeGreaterThan(0);
    }
  });
});
