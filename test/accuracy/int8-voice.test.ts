// int8 voices with the real voice en_US-joe-medium: the graph voxmill quantizes (src/tts/voice-quantize.ts), cached
// beside the voice, against the voice's own float weights, both without noise (noise_scale 0, noise_w 0), both heard
// by real Whisper tiny.en:
// - the int8 model is under 40% of the voice's size;
// - its speech is as well understood: corpus WER at most 3 points above float's on the same sentences (every fifth
//   of test/accuracy/sentences.mjs in CI, all 30 with VOXMILL_TEST_FULL=1), each sentence as long within 10%;
// - the tiers: svc-tts-1 speaks the float voice, svc-tts-1-flash the int8 one, sample for sample; `precision` and
//   the engine's `tts.precision` override them.
// Per-sentence texts and WERs go to test/accuracy/results/int8-voice.json (git-ignored).
import { mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSpeech, type Speech, type SynthesizeOptions } from '../../src/index.js';
import { repoRoot } from '../helpers/paths.js';
import { requireRealModel } from '../helpers/real-models.js';
import { ciSample } from '../helpers/test-scope.js';
import { corpusWer, type WerResult, wordErrorRate } from '../helpers/wer.js';
import { ACCURACY_SENTENCES } from './sentences.mjs';

const tinyEn = requireRealModel('whisper-tiny.en');
const joe = requireRealModel('piper-joe-medium');
const resultsFile = join(repoRoot, 'test', 'accuracy', 'results', 'int8-voice.json');
const SENTENCES = ciSample(ACCURACY_SENTENCES, (_, index) => index % 5 === 0);
const MAX_WER_INCREASE = 0.03;

describe.skipIf(tinyEn.skip || joe.skip)(`int8 voices: en_US-joe-medium ${tinyEn.reason ?? joe.reason ?? ''}`, () => {
  let speech: Speech;
  let voice: string;
  const say = async (input: string, options: Partial<SynthesizeOptions> = {}, engine = speech) => {
    const spoken = await engine.synthesizeToBuffer({
      voice,
      input,
      format: 'pcm16',
      sampleRate: 16_000,
      noiseScale: 0,
      noiseW: 0,
      ...options,
    });
    return new Int16Array(spoken.audio.buffer, spoken.audio.byteOffset, spoken.audio.byteLength / 2);
  };

  beforeAll(async () => {
    speech = createSpeech({
      models: { 'svc-stt-1': tinyEn.path as string },
      voiceDirs: [dirname(joe.path as string)],
      idleUnloadMs: 0,
    });
    voice = (await speech.listVoices()).find((v) => v.id.includes('joe'))?.id as string;
  });

  afterAll(async () => {
    await speech?.close();
  });

  it('speaks as well understood in int8 as in float, from a model under 40% of the size', async () => {
    const results: Array<{ text: string; fp32: WerResult & { heard: string }; int8: WerResult & { heard: string } }> =
      [];
    const hear = async (samples: Int16Array, text: string) => {
      const heard = (
        await speech.transcribe(
          Float32Array.from(samples, (s) => s / 32768),
          { language: 'en', vad: false },
        )
      ).text;
      return { ...wordErrorRate(text, heard), heard };
    };
    for (const text of SENTENCES) {
      const fp32 = await say(text, { precision: 'fp32' });
      const int8 = await say(text, { precision: 'int8' });
      expect(Math.abs(int8.length - fp32.length) / fp32.length, text).toBeLessThan(0.1);
      results.push({ text, fp32: await hear(fp32, text), int8: await hear(int8, text) });
    }
    const wer = { fp32: corpusWer(results.map((r) => r.fp32)), int8: corpusWer(results.map((r) => r.int8)) };
    const dir = dirname(joe.path as string);
    const cached = readdirSync(dir).filter((name) => name.startsWith(`.${basename(joe.path as string)}.int8-`));
    expect(cached).toHaveLength(1);
    const size = { fp32: statSync(joe.path as string).size, int8: statSync(join(dir, cached[0] as string)).size };
    mkdirSync(dirname(resultsFile), { recursive: true });
    writeFileSync(resultsFile, `${JSON.stringify({ wer, size, sentences: results }, null, 1)}\n`);
    expect(size.int8 / size.fp32).toBeLessThan(0.4);
    expect(wer.int8).toBeLessThanOrEqual(wer.fp32 + MAX_WER_INCREASE);
  });

  it('svc-tts-1 speaks float and svc-tts-1-flash int8, unless precision or tts.precision says otherwise', async () => {
    const text = ACCURACY_SENTENCES[0] as string;
    const fp32 = await say(text, { precision: 'fp32' });
    const int8 = await say(text, { precision: 'int8' });
    expect(fp32).not.toEqual(int8);
    expect(await say(text)).toEqual(fp32);
    expect(await say(text, { model: 'svc-tts-1-flash' })).toEqual(int8);
    expect(await say(text, { model: 'svc-tts-1-flash', precision: 'fp32' })).toEqual(fp32);
    const floatEverywhere = createSpeech({
      voiceDirs: [dirname(joe.path as string)],
      tts: { precision: { 'svc-tts-1-flash': 'fp32' } },
    });
    try {
      expect(await say(text, { model: 'svc-tts-1-flash' }, floatEverywhere)).toEqual(fp32);
    } finally {
      await floatEverywhere.close();
    }
  });
});
