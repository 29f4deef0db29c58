// The guards against invented text that need no model: annotation-only segments, repeat loops and their repair.
import { describe, expect, it } from 'vitest';
import type { NativeSegment, NativeTranscribeParams, NativeTranscription } from '../../src/native.js';
import { isAnnotationOnly } from '../../src/stt/annotations.js';
import { collapseLoops, findLoops, findTextLoops, minRepeats } from '../../src/stt/repetition.js';
import { normalizeTranscribeOptions } from '../../src/stt/request.js';
import { runTranscription } from '../../src/stt/transcribe.js';
import { CUSTOM_STT_TIER } from '../../src/tiers.js';
import { spoken } from '../helpers/fake-native.js';

describe('isAnnotationOnly', () => {
  it.each([
    '[BLANK_AUDIO]',
    ' (upbeat music)',
    '[Music] [Applause]',
    '*sigh*',
    '♪ ♪',
    '(wind howling).',
  ])('is true for %j', (text) => {
    expect(isAnnotationOnly(text)).toBe(true);
  });

  it.each([
    '',
    '   ',
    'Hello (laughs) there',
    'And so, my fellow Americans',
    '[BLANK_AUDIO] Yes',
  ])('is false for %j', (text) => {
    expect(isAnnotationOnly(text)).toBe(false);
  });
});

describe('findLoops', () => {
  it('finds a phrase that follows itself inside one segment', () => {
    const segments = [spoken(0, 5, "I'm fine, I'm fine, I'm fine, I'm fine, I'm fine"), spoken(5, 6, 'Thank you.')];
    expect(findLoops(segments)).toEqual([{ first: 0, last: 0 }]);
  });

  it('finds a segment written again after itself, and a loop across segments', () => {
    const segments = [
      spoken(0, 2, 'Ask not what your country can do.'),
      spoken(47.94, 56.94, 'Why should one halt on the way?'),
      spoken(56.94, 58.82, 'Why should one halt on the way?'),
    ];
    expect(findLoops(segments)).toEqual([{ first: 1, last: 2 }]);
    const across = [spoken(0, 1, 'we will go on'), spoken(1, 2, 'we will go on'), spoken(2, 3, 'we will go on')];
    expect(findLoops(across)).toEqual([{ first: 0, last: 2 }]);
  });

  it('finds words written twice across a segment boundary', () => {
    const segments = [
      spoken(0, 9, 'ask not what your country can do for you, ask what you can do for you.'),
      spoken(9, 12, 'Ask what you can do for your country.'),
    ];
    expect(findLoops(segments)).toEqual([{ first: 0, last: 1 }]);
    const [first, second] = collapseLoops(segments);
    expect(first!.text).toBe(' ask not what your country can do for you,');
    expect(second!.text).toBe(' Ask what you can do for your country.');
    // Three shared words are speech ("... we go. We go home").
    expect(findLoops([spoken(0, 1, 'and so we go'), spoken(1, 2, 'so we go home')])).toEqual([]);
  });

  it('leaves speech that repeats a little alone', () => {
    const segments = [
      spoken(0, 2, 'no no no no'),
      spoken(2, 3, 'Thank you. Thank you. Thank you.'),
      spoken(3, 4, 'Yes.'),
      spoken(4, 5, 'Yes.'),
      spoken(5, 8, 'the cat sat on the mat and the cat sat on the mat'),
    ];
    expect(findLoops(segments)).toEqual([]);
  });

  it('counts repeats by phrase length', () => {
    expect([1, 2, 3, 4, 12].map(minRepeats)).toEqual([6, 4, 4, 3, 3]);
    expect(findTextLoops(['go go go go go go'])).toEqual([{ first: 0, last: 0 }]);
    expect(findTextLoops(['go go go go go'])).toEqual([]);
  });
});

describe('collapseLoops', () => {
  it('keeps a repeated phrase once, with its text and end cut where the second one began', () => {
    const [only, ...rest] = collapseLoops([spoken(0, 10, 'a b c a b c a b c a b c'), spoken(10, 11, 'next one')]);
    expect(only!.text).toBe(' a b c');
    expect(only!.tokens).toHaveLength(3);
    expect(only!.end).toBeCloseTo(2.5);
    expect(rest.map((s) => s.text)).toEqual([' next one']);
  });

  it('keeps what follows a repeated phrase in its segment', () => {
    const [only] = collapseLoops([spoken(0, 10, 'thank you thank you thank you thank you and then I went home')]);
    expect(only!.text).toBe(' thank you and then I went home');
  });

  it('drops a segment that repeats the one before it', () => {
    const out = collapseLoops([spoken(0, 2, 'why should one halt'), spoken(2, 4, 'why should one halt')]);
    expect(out.map((s) => [s.start, s.text])).toEqual([[0, ' why should one halt']]);
  });
});

describe('runTranscription with the guards', () => {
  const duration = 20;
  const audio = { samples: new Float32Array(duration * 16_000), sampleRate: 16_000, duration } as never;
  const info = { multilingual: false } as never;

  function fakeModel(results: NativeSegment[][]) {
    const calls: { samples: number; params: NativeTranscribeParams }[] = [];
    const model = {
      info: () => info,
      dispose: () => undefined,
      transcribe(samples: Float32Array, params: NativeTranscribeParams) {
        calls.push({ samples: samples.length, params });
        const segments = results[Math.min(calls.length - 1, results.length - 1)]!;
        const result: NativeTranscription = { language: 'en', vad: false, speech: [], segments };
        return { promise: Promise.resolve(result), abort: () => undefined };
      },
    };
    return { model: model as never, calls };
  }

  it('decodes a looping stretch again without the text before it, and keeps the new text at its place', async () => {
    const { model, calls } = fakeModel([
      [spoken(1, 3, 'Ask not.'), spoken(8, 12, 'on and on and on and on and on'), spoken(15, 16, 'Done here.')],
      [spoken(0.1, 2, 'On we go.')],
    ]);
    const options = normalizeTranscribeOptions({ diarize: false }, { ...CUSTOM_STT_TIER, threads: 1 });
    const result = await runTranscription({ model, info, modelName: 'fake', audio, options, vad: undefined });
    expect(calls).toHaveLength(2);
    expect(calls[1]!.params.conditionOnPreviousText).toBe(false);
    // The window runs from 0.5 s before the loop to 0.5 s after it.
    expect(calls[1]!.samples).toBe(5 * 16_000);
    expect(result.text).toBe('Ask not. On we go. Done here.');
    expect(result.segments!.map((s) => [s.start, s.text])).toEqual([
      [1, 'Ask not.'],
      [7.6, 'On we go.'],
      [15, 'Done here.'],
    ]);
  });

  it('cuts a loop that decoding again did not cure, drops annotation-only segments, and can keep both', async () => {
    const looping = [spoken(0, 2, '[BLANK_AUDIO]'), spoken(4, 10, 'so so so so so so so so')];
    const { model } = fakeModel([looping]);
    const guarded = normalizeTranscribeOptions({}, { ...CUSTOM_STT_TIER, threads: 1 });
    const result = await runTranscription({ model, info, modelName: 'fake', audio, options: guarded, vad: undefined });
    expect(result.text).toBe('so');
    const plain = normalizeTranscribeOptions(
      { repetitionGuard: false, annotations: 'keep' },
      { ...CUSTOM_STT_TIER, threads: 1 },
    );
    const { model: again, calls } = fakeModel([looping]);
    const kept = await runTranscription({
      model: again,
      info,
      modelName: 'fake',
      audio,
      options: plain,
      vad: undefined,
    });
    expect(calls).toHaveLength(1);
    expect(kept.segments!.map((s) => s.text)).toEqual(['[BLANK_AUDIO]', 'so so so so so so so so']);
  });

  it('keeps the first occurrence when decoding again hears nothing or fails', async () => {
    const looping = [spoken(2, 8, 'on and on and on and on and on')];
    const options = normalizeTranscribeOptions({}, { ...CUSTOM_STT_TIER, threads: 1 });
    const { model: silent } = fakeModel([looping, []]);
    const heardNothing = await runTranscription({
      model: silent,
      info,
      modelName: 'fake',
      audio,
      options,
      vad: undefined,
    });
    expect(heardNothing.text).toBe('on and on');
    const failing = {
      info: () => info,
      dispose: () => undefined,
      calls: 0,
      transcribe() {
        const result: NativeTranscription = { language: 'en', vad: false, speech: [], segments: looping };
        return this.calls++ === 0
          ? { promise: Promise.resolve(result), abort: () => undefined }
          : { promise: Promise.reject(new Error('whisper failed')), abort: () => undefined };
      },
    };
    const failed = await runTranscription({
      model: failing as never,
      info,
      modelName: 'fake',
      audio,
      options,
      vad: undefined,
    });
    expect(failed.text).toBe('on and on');
  });

  it('pads a short window to a second', async () => {
    const { model, calls } = fakeModel([[spoken(0, 0.2, 'la la la la la la la')], []]);
    // The full window from the start (a fitted one that loops is decoded again: test/unit/fitted-context.test.ts).
    const options = normalizeTranscribeOptions({ fittedContextSeconds: 0 }, { ...CUSTOM_STT_TIER, threads: 1 });
    const short = { samples: new Float32Array(3200), sampleRate: 16_000, duration: 0.2 } as never;
    const result = await runTranscription({ model, info, modelName: 'fake', audio: short, options, vad: undefined });
    expect(calls[1]!.samples).toBe(16_000);
    expect(result.text).toBe('la');
  });
});
