// Live speaker labels with real models: a generated two-speaker conversation (its own seed, not the files the live
// threshold was chosen on) streamed through createTranscriber({ diarize: true }) with the real tiny.en and GE2E; its
// finals' turns scored against the RTTM truth. The bound sits well above today's figure (BENCHMARKS.md, "Live speaker
// labels"): it catches a broken flow (labels missing, every utterance one speaker), not a point of DER.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSpeech, type LiveTranscriptionEvent, parseRttm, scoreDiarization } from '../../dist/index.js';
import { repoRoot, sharedModel } from '../helpers/paths.js';
import { requireRealModel } from '../helpers/real-models.js';
import { readPcm16Wav } from '../helpers/wav.js';

const ge2e = requireRealModel('speaker-ge2e');
const tinyEn = requireRealModel('whisper-tiny.en');
const joe = requireRealModel('piper-joe-medium');
const dir = mkdtempSync(join(tmpdir(), 'voxmill-live-speakers-'));
const vadModel = sharedModel('whisper/ggml-silero-v6.2.0.bin');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Final = Extract<LiveTranscriptionEvent, { type: 'final' }>;

describe.skipIf(ge2e.skip || tinyEn.skip || joe.skip)('live speaker labels (real models)', () => {
  let name = '';
  beforeAll(async () => {
    await promisify(execFile)(process.execPath, [
      join(repoRoot, 'scripts/diarize-devset/make-devset.mjs'),
      ...['--seed', '11', '--per-count', '1', '--variants', 'clean', '--out', dir],
    ]);
    const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as { files: Array<{ name: string }> };
    name = manifest.files.find((f) => f.name.startsWith('conv-2spk'))?.name ?? '';
  }, 300_000);

  it('labels a two-speaker conversation: two speakers, DER under 30%, every word and turn labelled', async () => {
    const speech = createSpeech({
      vadModel,
      models: { 'svc-stt-1': tinyEn.path as string },
      diarization: { embeddingModel: ge2e.path as string },
    });
    try {
      const samples = readPcm16Wav(join(dir, `${name}.wav`));
      const live = speech.createTranscriber({ diarize: true, interimIntervalMs: 0 });
      const finals: Final[] = [];
      live.on('final', (event: Final) => finals.push(event));
      for (let i = 0; i < samples.length; i += 1600) {
        if (!live.write(samples.subarray(i, i + 1600))) await new Promise((resolve) => live.once('drain', resolve));
      }
      live.end();
      await new Promise((resolve, reject) => {
        live.once('finish', resolve);
        live.once('error', reject);
      });
      const spoken = finals.filter((f) => f.text.trim() !== '');
      expect(spoken.length).toBeGreaterThan(2);
      for (const final of spoken) {
        expect(final.speaker).toMatch(/^speaker_\d$/);
        expect(final.words.every((w) => w.speaker !== undefined)).toBe(true);
      }
      const turns = finals.flatMap((f) => f.turns ?? []);
      expect(new Set(turns.map((t) => t.speaker)).size).toBe(2);
      const reference = [...parseRttm(readFileSync(join(dir, `${name}.rttm`), 'utf8')).values()][0]!;
      expect(scoreDiarization(reference, turns).der).toBeLessThan(0.3);
    } finally {
      await speech.close();
    }
  }, 300_000);
});
