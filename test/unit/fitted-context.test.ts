// Short clips decoded with an encoder context fitted to them, and the full window when that decode goes wrong.
import { describe, expect, it } from 'vitest';
import { InvalidOptionTypeError, InvalidOptionValueError } from '../../src/errors.js';
import type { NativeTranscribeParams, NativeTranscription } from '../../src/native.js';
import { DEFAULT_FITTED_CONTEXT_SECONDS, fittedContext, fittedDecodeFailed } from '../../src/stt/fitted-context.js';
import { normalizeTranscribeOptions } from '../../src/stt/request.js';
import { runTranscription } from '../../src/stt/transcribe.js';
import type { Segment } from '../../src/stt/types.js';
import { CUSTOM_STT_TIER } from '../../src/tiers.js';
import { segment } from '../helpers/fake-native.js';

const RATE = 16_000;
const info = { multilingual: false } as never;
const audioOf = (seconds: number) =>
  ({ samples: new Float32Array(Math.round(seconds * RATE)), sampleRate: RATE, duration: seconds }) as never;
const words = (start: number, end: number, text: string) =>
  segment(
    start,
    end,
    text.split(' ').map((word) => ({ text: ` ${word}` })),
  );
const loop = words(0, 2, 'so so so so so so so so so');

type Outcome = NativeTranscription['segments'] | { code: string };

/** A native model that answers each call with the next outcome (the last one repeats). */
function fakeModel(outcomes: Outcome[]) {
  const calls: NativeTranscribeParams[] = [];
  const model = {
    info: () => info,
    dispose: () => undefined,
    transcribe(_samples: Float32Array, params: NativeTranscribeParams) {
      calls.push(params);
      const outcome = outcomes[Math.min(calls.length - 1, outcomes.length - 1)]!;
      if ('code' in outcome) {
        const error = Object.assign(new Error(`fails with ${outcome.code}`), outcome);
        return { promise: Promise.reject(error), abort: () => undefined };
      }
      const result: NativeTranscription = { language: 'en', vad: false, speech: [], segments: outcome };
      return { promise: Promise.resolve(result), abort: () => undefined };
    },
  };
  return { model: model as never, calls };
}

const optionsWith = (raw: Record<string, unknown> = {}) =>
  normalizeTranscribeOptions(raw, { ...CUSTOM_STT_TIER, threads: 1 });

describe('fittedContext', () => {
  it('covers the audio with a margin, rounded to 64 positions, at least 768, and caps the tokens by length', () => {
    expect(fittedContext(2, 10)).toEqual({ audioContext: 768, maxWindowTokens: 48 });
    expect(fittedContext(5, 10)).toEqual({ audioContext: 768, maxWindowTokens: 84 });
    expect(fittedContext(16, 20)).toEqual({ audioContext: 896, maxWindowTokens: 216 });
    // whisper.cpp's DTW aborts on a window longer than twice the context: never the case for a fitted one.
    for (let seconds = 0.05; seconds < 30; seconds += 0.37) {
      const fitted = fittedContext(seconds, 30);
      if (fitted) expect(2 * fitted.audioContext!).toBeGreaterThanOrEqual(Math.ceil(seconds * 100) + 64);
    }
  });

  it('leaves clips at or over the limit, empty audio and contexts as large as the full one alone', () => {
    expect(fittedContext(10, 10)).toBeUndefined();
    expect(fittedContext(3, 0)).toBeUndefined();
    expect(fittedContext(0, 10)).toBeUndefined();
    expect(fittedContext(29.5, 30)).toBeUndefined();
  });
});

describe('fittedDecodeFailed', () => {
  it('takes a phrase of three words or more said twice in a row, in a segment or across two, for a failure', () => {
    expect(fittedDecodeFailed([words(0, 2, 'one two three one two three')])).toBe(true);
    expect(fittedDecodeFailed([words(0, 1, 'a b one two three'), words(1, 2, 'one two three c')])).toBe(true);
    expect(fittedDecodeFailed([loop])).toBe(true);
  });

  it('lets speech repeat a word or two, and a phrase after other words', () => {
    expect(fittedDecodeFailed([words(0, 2, 'ask not ask not what your country can do')])).toBe(false);
    expect(fittedDecodeFailed([words(0, 2, 'one two three and then one two three')])).toBe(false);
  });
});

describe('runTranscription on a short clip', () => {
  it('decodes it once with the fitted context, then tells its segments and progress', async () => {
    const { model, calls } = fakeModel([[words(0.5, 3, 'ask not what your country can do')]]);
    const told: Segment[] = [];
    const progress: number[] = [];
    const options = optionsWith({
      onSegment: (s: Segment) => told.push(s),
      onProgress: (p: number) => progress.push(p),
    });
    const result = await runTranscription({
      model,
      info,
      modelName: 'fake',
      audio: audioOf(5),
      options,
      vad: undefined,
    });
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({
      audioContext: 768,
      maxWindowTokens: 84,
      segmentEvents: false,
      progressEvents: false,
    });
    expect(result.text).toBe('ask not what your country can do');
    expect(told.map((s) => [s.start, s.end, s.text])).toEqual([[0.5, 3, 'ask not what your country can do']]);
    expect(progress).toEqual([1]);
  });

  it('decodes it again with the full window when the fitted decode fails, loops or says a phrase twice', async () => {
    const echo = [words(0, 2, 'in being comparatively modern in being comparatively modern')];
    const failures = ['TOKEN_LIMIT', 'CONTEXT_TOO_SHORT', 'TRANSCRIPTION_FAILED'].map((code) => ({ code }));
    for (const first of [...failures, [loop], echo] as Outcome[]) {
      const { model, calls } = fakeModel([first, [words(0, 2, 'and so my fellow Americans')]]);
      const told: string[] = [];
      const result = await runTranscription({
        model,
        info,
        modelName: 'fake',
        audio: audioOf(2),
        options: optionsWith({ onSegment: (s: Segment) => told.push(s.text) }),
        vad: undefined,
      });
      expect(calls.map((c) => c.audioContext)).toEqual([768, undefined]);
      expect(calls[1]!.maxWindowTokens).toBeUndefined();
      // The full decode streams its own segments (the fake sends no events); the thrown-away one told nothing.
      expect(calls[1]!.segmentEvents).toBe(true);
      expect(told).toEqual([]);
      expect(result.text).toBe('and so my fellow Americans');
    }
  });

  it('is on by default with every model, tiny ones too, and off when the call sets 0', async () => {
    const tiny = { multilingual: false, type: 'tiny' } as never;
    const byDefault = fakeModel([[words(0, 1, 'hello')]]);
    const run = (calls: typeof byDefault, options: ReturnType<typeof optionsWith>) =>
      runTranscription({ ...calls, info: tiny, modelName: 'fake', audio: audioOf(2), options, vad: undefined });
    await run(byDefault, optionsWith());
    expect(byDefault.calls.map((c) => c.audioContext)).toEqual([768]);
    const off = fakeModel([[words(0, 1, 'hello')]]);
    await run(off, optionsWith({ fittedContextSeconds: 0 }));
    expect(off.calls.map((c) => c.audioContext)).toEqual([undefined]);
    expect(DEFAULT_FITTED_CONTEXT_SECONDS).toBe(10);
  });

  it('skips the fitted decode when the language is to be detected (detection encodes a full window anyway)', async () => {
    const { model, calls } = fakeModel([[words(0, 1, 'bonjour')]]);
    const multilingual = { multilingual: true } as never;
    await runTranscription({
      model,
      info: multilingual,
      modelName: 'fake',
      audio: audioOf(2),
      options: optionsWith(),
      vad: undefined,
    });
    expect(calls.map((c) => c.audioContext)).toEqual([undefined]);
    const withLanguage = fakeModel([[words(0, 1, 'bonjour')]]);
    await runTranscription({
      model: withLanguage.model,
      info: multilingual,
      modelName: 'fake',
      audio: audioOf(2),
      options: optionsWith({ language: 'fr' }),
      vad: undefined,
    });
    expect(withLanguage.calls.map((c) => c.audioContext)).toEqual([768]);
  });

  it('passes any other failure on', async () => {
    const failing = {
      info: () => info,
      dispose: () => undefined,
      transcribe: () => ({
        promise: Promise.reject(Object.assign(new Error('boom'), { code: 'OUT_OF_MEMORY' })),
        abort: () => undefined,
      }),
    };
    await expect(
      runTranscription({
        model: failing as never,
        info,
        modelName: 'fake',
        audio: audioOf(2),
        options: optionsWith(),
        vad: undefined,
      }),
    ).rejects.toMatchObject({ code: 'OUT_OF_MEMORY' });
  });

  it('uses the full window with fittedContextSeconds 0 and for clips at or over the limit', async () => {
    for (const [seconds, raw] of [
      [2, { fittedContextSeconds: 0 }],
      [10, {}],
      [12, { fittedContextSeconds: 12 }],
    ] as const) {
      const { model, calls } = fakeModel([[words(0, 1, 'hello')]]);
      await runTranscription({
        model,
        info,
        modelName: 'fake',
        audio: audioOf(seconds),
        options: optionsWith(raw),
        vad: undefined,
      });
      expect(calls.map((c) => c.audioContext)).toEqual([undefined]);
    }
  });

  it('names a bad fittedContextSeconds', () => {
    expect(() => optionsWith({ fittedContextSeconds: -1 })).toThrow(InvalidOptionValueError);
    expect(() => optionsWith({ fittedContextSeconds: 31 })).toThrow(/fittedContextSeconds/);
    expect(() => optionsWith({ fittedContextSeconds: '5' })).toThrow(InvalidOptionTypeError);
  });
});
