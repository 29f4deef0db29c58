// The guard against skipped speech (stt/skipped-speech.ts, repairSkips in stt/transcribe.ts), without a model.
import { describe, expect, it } from 'vitest';
import type { NativeSegment, NativeTranscribeParams, NativeTranscription } from '../../src/native.js';
import { normalizeTranscribeOptions } from '../../src/stt/request.js';
import { findSkips, speechSecondsIn, wordCount } from '../../src/stt/skipped-speech.js';
import { runTranscription } from '../../src/stt/transcribe.js';
import { CUSTOM_STT_TIER } from '../../src/tiers.js';
import { spoken } from '../helpers/fake-native.js';

const RATE = 16_000;

describe('wordCount', () => {
  it('counts words, and a word per two letters of scripts written without spaces, mixed text both', () => {
    expect(wordCount(' And so, my fellow Americans.')).toBe(5);
    expect(wordCount(' — ... ')).toBe(0);
    expect(wordCount('我们今天讨论的是一个非常重要的问题')).toBe(9);
    expect(wordCount('今天很好')).toBe(2);
    // No jump between 8 and 9 letters, and a long German word is one word.
    expect(wordCount('一二三四五六七八')).toBe(4);
    expect(wordCount('一二三四五六七八九')).toBe(5);
    expect(wordCount('Donaudampfschifffahrtsgesellschaftskapitän')).toBe(1);
    expect(wordCount('Hello 世界, OK')).toBe(3);
  });
});

describe('speechSecondsIn', () => {
  it("adds up the VAD's speech inside a stretch, overlapping stretches once", () => {
    const spans = [
      { origStart: 0, origEnd: 4, procStart: 0, procEnd: 4 },
      { origStart: 3.5, origEnd: 6, procStart: 4, procEnd: 6.5 },
      { origStart: 10, origEnd: 12, procStart: 6.5, procEnd: 8.5 },
    ];
    expect(speechSecondsIn(spans, 2, 11)).toBeCloseTo(5);
    expect(speechSecondsIn(spans, 6, 10)).toBe(0);
  });
});

describe('findSkips', () => {
  const speech =
    (stretches: [number, number][]) =>
    (from: number, to: number): number =>
      stretches.reduce((sum, [a, b]) => sum + Math.max(0, Math.min(to, b) - Math.max(from, a)), 0);

  it('finds a gap between two segments with seconds of speech in it, not a silent one', async () => {
    const segments = [spoken(0, 5, 'one two three four five six'), spoken(20, 24, 'seven eight nine ten')];
    expect(await findSkips(segments, speech([[8, 18]]))).toEqual([{ from: 5, to: 20, first: 1, last: 0 }]);
    expect(await findSkips(segments, speech([[8, 10]]))).toEqual([]);
  });

  it('finds a segment of a few words over many seconds of speech', async () => {
    // Eleven words account for 5.5 s; 21.7 s of speech is 16 s they cannot.
    const words = 'paced up and down waiting but he could wait no longer';
    const segments = [spoken(390, 401.7, 'a b c d e f g h i j k l m n o p q r s t u v w'), spoken(401.7, 423.4, words)];
    expect(await findSkips(segments, speech([[390, 423.4]]))).toEqual([{ from: 401.7, to: 423.4, first: 1, last: 1 }]);
    // The same segment over a pause with its words in 8 s of speech is a pause, not a skip.
    expect(await findSkips(segments, speech([[390, 409.7]]))).toEqual([]);
  });

  it('looks at nothing before the first segment or after the last, past 30 s, or across an annotation', async () => {
    const all = speech([[0, 100]]);
    expect(await findSkips([spoken(30, 33, 'hello there friend'), spoken(33, 36, 'how are you')], all)).toEqual([]);
    const apart = [spoken(0, 2, 'hello there'), spoken(42, 44, 'how are you')];
    expect(await findSkips(apart, all)).toEqual([]);
    const aroundMusic = [spoken(0, 2, 'hello there'), spoken(12, 14, 'how are you')];
    expect(await findSkips(aroundMusic, all)).toHaveLength(1);
    expect(await findSkips(aroundMusic, all, [{ start: 4, end: 10 }])).toEqual([]);
    // A kept annotation counts as a dropped one: no gap next to it is looked at.
    const keptMusic = [spoken(0, 2, 'hello there'), spoken(2, 8, '(upbeat music)'), spoken(12, 14, 'how are you')];
    expect(await findSkips(keptMusic, all)).toEqual([]);
    // Nor a segment that is only an annotation, however long.
    expect(await findSkips([spoken(0, 2, 'a b'), spoken(2, 20, '(upbeat music)'), spoken(20, 22, 'c d')], all)).toEqual(
      [],
    );
  });

  it('stops measuring once the limit is found', async () => {
    let measured = 0;
    const segments = [spoken(0, 1, 'a'), spoken(5, 6, 'b'), spoken(10, 11, 'c'), spoken(15, 16, 'd')];
    const found = await findSkips(
      segments,
      () => {
        measured++;
        return 4;
      },
      [],
      2,
    );
    expect(found.map((w) => w.first)).toEqual([1, 2]);
    expect(measured).toBe(2);
  });

  it('measures only stretches long enough to hold a skip', async () => {
    let measured = 0;
    const segments = [spoken(0, 1, 'a'), spoken(2, 3, 'b c'), spoken(10, 11, 'd')];
    await findSkips(segments, () => {
      measured++;
      return 0;
    });
    expect(measured).toBe(1);
  });
});

describe('runTranscription with the skip guard', () => {
  const info = { multilingual: false } as never;
  const defaults = { ...CUSTOM_STT_TIER, threads: 1 };
  const duration = 30;
  const audio = { samples: new Float32Array(duration * RATE), sampleRate: RATE, duration } as never;
  const vad = { modelPath: '/unused/silero.bin' } as never;
  /** The VAD's stretches as whisper.cpp reports them: here nothing was cut, so both timelines are the same. */
  const spans = (stretches: [number, number][]) =>
    stretches.map(([start, end]) => ({ origStart: start, origEnd: end, procStart: start, procEnd: end }));

  /** A model whose calls return these results in turn (the last one again after that), each with its VAD stretches. */
  function fakeModel(results: { segments: NativeSegment[]; speech?: [number, number][] }[]) {
    const calls: { samples: number; params: NativeTranscribeParams }[] = [];
    const model = {
      info: () => info,
      dispose: () => undefined,
      transcribe(samples: Float32Array, params: NativeTranscribeParams) {
        calls.push({ samples: samples.length, params });
        const { segments, speech } = results[Math.min(calls.length - 1, results.length - 1)]!;
        const result: NativeTranscription = {
          language: 'en',
          vad: speech !== undefined,
          speech: spans(speech ?? []),
          segments,
        };
        return { promise: Promise.resolve(result), abort: () => undefined };
      },
    };
    return { model: model as never, calls };
  }

  // Speech from 0 to 30 s; whisper's first pass wrote nothing between 10 and 24 s.
  const firstPass = {
    segments: [
      spoken(0, 10, 'one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen'),
      spoken(24, 30, 'the end of it all is here now'),
    ],
    speech: [[0, 30]] as [number, number][],
  };
  const again = (segments: NativeSegment[]) => ({ segments, speech: [[0, 14]] as [number, number][] });

  it('decodes the skipped stretch again and puts what it recovers at its place', async () => {
    const recovered = spoken(0.5, 13, 'and so my fellow Americans ask not what your country can do');
    const { model, calls } = fakeModel([firstPass, again([recovered])]);
    const options = normalizeTranscribeOptions({}, defaults);
    const result = await runTranscription({ model, info, modelName: 'fake', audio, options, vad });
    expect(calls).toHaveLength(2);
    expect(calls[1]!.samples).toBe(14 * RATE);
    expect(calls[1]!.params.conditionOnPreviousText).toBe(false);
    expect(result.segments!.map((s) => [s.start, s.text])).toEqual([
      [0, firstPass.segments[0]!.text.trim()],
      [10.5, 'and so my fellow Americans ask not what your country can do'],
      [24, 'the end of it all is here now'],
    ]);
  });

  it('keeps the stretch as it was when decoding again recovers under 3 words, loops or fails', async () => {
    const options = normalizeTranscribeOptions({}, defaults);
    const looping = spoken(0, 12, 'go on go on go on go on go on');
    for (const second of [
      again([spoken(1, 2, 'Thank you.')]),
      again([looping]),
      again([spoken(1, 9, '(upbeat music)')]),
    ]) {
      const { model, calls } = fakeModel([firstPass, second]);
      const result = await runTranscription({ model, info, modelName: 'fake', audio, options, vad });
      expect(calls).toHaveLength(2);
      expect(result.segments!.map((s) => s.start)).toEqual([0, 24]);
    }
    const failing = {
      info: () => info,
      dispose: () => undefined,
      calls: 0,
      transcribe() {
        const result: NativeTranscription = {
          language: 'en',
          vad: true,
          speech: spans(firstPass.speech),
          segments: firstPass.segments,
        };
        return this.calls++ === 0
          ? { promise: Promise.resolve(result), abort: () => undefined }
          : { promise: Promise.reject(new Error('whisper failed')), abort: () => undefined };
      },
    };
    const failed = await runTranscription({ model: failing as never, info, modelName: 'fake', audio, options, vad });
    expect(failed.segments!.map((s) => s.start)).toEqual([0, 24]);
  });

  it('is off with skipGuard: false, over silence, and without VAD or a VAD model to measure with', async () => {
    const off = normalizeTranscribeOptions({ skipGuard: false }, defaults);
    const { model, calls } = fakeModel([firstPass]);
    await runTranscription({ model, info, modelName: 'fake', audio, options: off, vad });
    expect(calls).toHaveLength(1);
    const on = normalizeTranscribeOptions({}, defaults);
    const silentGap = {
      ...firstPass,
      speech: [
        [0, 10],
        [24, 30],
      ] as [number, number][],
    };
    const { model: quiet, calls: quietCalls } = fakeModel([silentGap]);
    await runTranscription({ model: quiet, info, modelName: 'fake', audio, options: on, vad });
    expect(quietCalls).toHaveLength(1);
    const { model: noVad, calls: noVadCalls } = fakeModel([{ segments: firstPass.segments }]);
    await runTranscription({ model: noVad, info, modelName: 'fake', audio, options: on, vad: undefined });
    expect(noVadCalls).toHaveLength(1);
  });
});
