// Diarization quality on meetings it was not tuned on, as a regression guard: a small development set (one clean
// conversation of each size, 2-6 speakers, from scripts/diarize-devset/make-devset.mjs with its own seed, so not the
// files the thresholds were chosen on) diarized with the real GE2E encoder and with the built-in features, and the
// held-out real recording pyannote_sample. The bounds sit above today's figures (BENCHMARKS.md, "Diarization on
// meetings it has never seen") by a margin: they catch a broken front end or clustering, not a point of DER.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSpeech, parseRttm, type SpeakerTurn, scoreDiarization } from '../../dist/index.js';
import { repoRoot, sharedAudio, sharedModel } from '../helpers/paths.js';
import { requireRealModel } from '../helpers/real-models.js';

const ge2e = requireRealModel('speaker-ge2e');
const joe = requireRealModel('piper-joe-medium');
const dir = mkdtempSync(join(tmpdir(), 'voxmill-devset-'));
const vadModel = sharedModel('whisper/ggml-silero-v6.2.0.bin');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Scored {
  der: number;
  countRight: boolean;
}

async function score(embeddingModel: string | null, files: Array<{ wav: string; rttm: string; speakers: number }>) {
  const speech = createSpeech({ vadModel, diarization: { embeddingModel } });
  try {
    const scores: Scored[] = [];
    for (const file of files) {
      const reference = [...parseRttm(readFileSync(file.rttm, 'utf8')).values()][0]!;
      const result = await speech.diarize(file.wav);
      scores.push({
        der: scoreDiarization(reference, result.turns).der,
        countRight: result.speakers.length === file.speakers,
      });
    }
    return scores;
  } finally {
    await speech.close();
  }
}

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;

describe.skipIf(ge2e.skip || joe.skip)('diarization on a generated development set', () => {
  let files: Array<{ wav: string; rttm: string; speakers: number }> = [];

  beforeAll(async () => {
    await promisify(execFile)(
      process.execPath,
      [
        join(repoRoot, 'scripts/diarize-devset/make-devset.mjs'),
        '--seed',
        '7',
        '--per-count',
        '1',
        '--variants',
        'clean',
        '--out',
        dir,
      ],
      { env: { ...process.env } },
    );
    const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as {
      files: Array<{ name: string; speakerCount: number }>;
    };
    files = manifest.files.map((f) => ({
      wav: join(dir, `${f.name}.wav`),
      rttm: join(dir, `${f.name}.rttm`),
      speakers: f.speakerCount,
    }));
  }, 300_000);

  it('GE2E: mean DER under 30% on five 2-6 speaker conversations', async () => {
    expect(files).toHaveLength(5);
    const scores = await score(ge2e.path as string, files);
    expect(mean(scores.map((s) => s.der))).toBeLessThan(0.3);
  });

  it('built-in features: mean DER under 45% on the same conversations', async () => {
    const scores = await score(null, files);
    expect(mean(scores.map((s) => s.der))).toBeLessThan(0.45);
  });

  it('pyannote_sample (held out): GE2E and the built-in features both under 6% DER, 2 speakers', async () => {
    const sample = [
      { wav: sharedAudio('pyannote_sample.wav'), rttm: sharedAudio('pyannote_sample.rttm'), speakers: 2 },
    ];
    for (const model of [ge2e.path as string, null]) {
      const [scored] = await score(model, sample);
      expect(scored!.der).toBeLessThan(0.06);
      expect(scored!.countRight).toBe(true);
    }
  });
});

const modelsDir = requireRealModel('diarization-models-dir');

describe.skipIf(modelsDir.skip)('diarization with the default models (segmentation-3.0 and CAM++)', () => {
  it('voxmill diarize --models-dir finds them with no other flag: pyannote_sample under 3% DER, 2 speakers, overlap', async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [
        join(repoRoot, 'dist', 'cli', 'main.js'),
        'diarize',
        '--format',
        'json',
        '--models-dir',
        modelsDir.path as string,
        sharedAudio('pyannote_sample.wav'),
      ],
      { maxBuffer: 16 * 1024 * 1024 },
    );
    const result = JSON.parse(stdout) as { method: string; speakers: string[]; turns: SpeakerTurn[] };
    expect(result.method).toBe('segmentation');
    expect(result.speakers).toHaveLength(2);
    const reference = [...parseRttm(readFileSync(sharedAudio('pyannote_sample.rttm'), 'utf8')).values()][0]!;
    expect(scoreDiarization(reference, result.turns).der).toBeLessThan(0.03);
    // Overlapped speech is given to both speakers: some turns of different speakers overlap.
    const overlapped = result.turns.some((a) =>
      result.turns.some((b) => a.speaker !== b.speaker && a.start < b.end && b.start < a.end),
    );
    expect(overlapped).toBe(true);
  });
});
