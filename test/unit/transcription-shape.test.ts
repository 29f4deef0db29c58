// The spec's section 4.2 rules, checked on the shaping code with a fake native model.
import { describe, expect, it } from 'vitest';
import type { DecodedAudio } from '../../src/audio/decode.js';
import { InvalidOptionValueError } from '../../src/errors.js';
import type { NativeModelInfo, NativeTranscription, NativeWhisperModel } from '../../src/native.js';
import { normalizeTranscribeOptions } from '../../src/stt/request.js';
import { runTranscription } from '../../src/stt/transcribe.js';
import type { TranscribeOptions } from '../../src/stt/types.js';
import { CUSTOM_STT_TIER } from '../../src/tiers.js';
import { segment } from '../helpers/fake-native.js';

const info = (multilingual: boolean): NativeModelInfo => ({
  type: 'tiny',
  multilingual,
  vocabSize: multilingual ? 51865 : 51864,
  audioLayers: 4,
  textLayers: 4,
  audioState: 384,
  mels: 80,
  ftype: 1,
  dtwPreset: null,
  flashAttention: true,
  decoderInt8: true,
  greedyInt8Vocabulary: false,
  gpu: false,
  device: 'CPU',
  disposed: false,
});

const audio: DecodedAudio = {
  samples: new Float32Array(16000 * 3),
  sampleRate: 16000,
  duration: 3,
  source: { container: 'wav', codec: 'pcm_s16le', sampleRate: 16000, channels: 1, bitRate: 0 },
};

function fakeModel(result: NativeTranscription, seen: { params?: unknown } = {}): NativeWhisperModel {
  return {
    info: () => info(true),
    dispose: () => {},
    transcribe: (_samples, params) => {
      seen.params = params;
      return { promise: Promise.resolve(result), abort: () => {}, setThreads: () => {} };
    },
  };
}

const detected: NativeTranscription = {
  language: 'de',
  vad: false,
  speech: [],
  segments: [
    segment(0, 1.5, [
      { text: ' Guten', start: 0, end: 0.7 },
      { text: ' Tag.', start: 0.7, end: 1.5 },
    ]),
    segment(1.5, 2.9, [
      { text: ' Wie', start: 1.5, end: 2 },
      { text: ' geht', start: 2, end: 2.9 },
    ]),
  ],
};

async function run(options: TranscribeOptions, multilingual = true, result = detected) {
  const seen: { params?: unknown } = {};
  const transcription = await runTranscription({
    model: fakeModel(result, seen),
    info: info(multilingual),
    modelName: 'fake',
    audio,
    options: normalizeTranscribeOptions(options, { ...CUSTOM_STT_TIER, threads: 1 }),
    vad: undefined,
  });
  return { transcription, params: seen.params as Record<string, unknown> };
}

describe('transcription result (spec 4.2)', () => {
  it('rule 1: always text, language and duration; segments by default', async () => {
    const { transcription } = await run({});
    expect(transcription).toEqual({
      text: 'Guten Tag. Wie geht',
      language: 'de',
      duration: 3,
      segments: [
        { id: 0, start: 0, end: 1.5, text: 'Guten Tag.' },
        { id: 1, start: 1.5, end: 2.9, text: 'Wie geht' },
      ],
    });
  });

  it('rule 2: words only when timestamps is word', async () => {
    const { transcription } = await run({ timestamps: 'word' });
    expect(transcription.words?.map((w) => w.word)).toEqual(['Guten', 'Tag.', 'Wie', 'geht']);
    expect(transcription.segments).toBeUndefined();
    expect((await run({ timestamps: 'segment' })).transcription.words).toBeUndefined();
  });

  it('rule 3: segments when timestamps is segment or diarize is true, not for none', async () => {
    expect((await run({ timestamps: 'none' })).transcription).not.toHaveProperty('segments');
    expect((await run({ timestamps: 'none', diarize: true })).transcription.segments).toHaveLength(2);
    const both = (await run({ timestamps: 'word', diarize: true })).transcription;
    expect(both.words).toHaveLength(4);
    expect(both.segments).toHaveLength(2);
  });

  it('rule 4: the detected language when omitted, the supplied one when given', async () => {
    expect((await run({})).transcription.language).toBe('de');
    const supplied = await run({ language: 'fr' });
    expect(supplied.transcription.language).toBe('fr');
    expect(supplied.params.language).toBe('fr');
  });

  it('reports "en" for English-only models and refuses another language hint', async () => {
    const english = await run({}, false);
    expect(english.transcription.language).toBe('en');
    expect(english.params.language).toBe('en');
    await expect(run({ language: 'de' }, false)).rejects.toBeInstanceOf(InvalidOptionValueError);
  });

  it('refuses to translate with an English-only model, naming the model field and a multilingual one', async () => {
    const refused = run({ translate: true }, false);
    await expect(refused).rejects.toBeInstanceOf(InvalidOptionValueError);
    await expect(refused).rejects.toMatchObject({
      param: 'model',
      message: expect.stringMatching(/a multilingual model to translate .*English-only.*base or small/u),
    });
    expect((await run({ translate: true }, true)).transcription.text).toBeTypeOf('string');
  });

  it('reports "und" when nothing was said and no hint was given', async () => {
    const silent: NativeTranscription = { language: '', vad: true, speech: [], segments: [] };
    const { transcription } = await run({ timestamps: 'word' }, true, silent);
    expect(transcription).toEqual({ text: '', language: 'und', duration: 3, words: [] });
  });

  it('maps segment times through the VAD spans', async () => {
    const cut: NativeTranscription = {
      language: 'en',
      vad: true,
      speech: [{ origStart: 1, origEnd: 2.5, procStart: 0, procEnd: 1.5 }],
      segments: [segment(0.2, 1.4, [{ text: ' hi', start: 0.2, end: 1.4 }])],
    };
    const { transcription } = await run({}, true, cut);
    expect(transcription.segments).toEqual([{ id: 0, start: 1.2, end: 2.4, text: 'hi' }]);
  });
});
