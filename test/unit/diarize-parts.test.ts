// The pure parts of diarization: features, clustering, the pipeline on synthetic voices, channel energy,
// attaching speakers to a transcript, tinydiarize stretches, and option checks. No addon, no model.
import { describe, expect, it } from 'vitest';
// A bound on how long work takes grows with this machine's slowdown.
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import { attachSpeakers, speakerAt } from '../../src/diarize/attach.js';
import { channelsDiffer, turnsByChannel } from '../../src/diarize/channels.js';
import { agglomerate, normalize } from '../../src/diarize/clustering.js';
import { clusteringSettings, resolveDiarizationConfig } from '../../src/diarize/config.js';
import { FeatureExtractor } from '../../src/diarize/features.js';
import { diarizePcm } from '../../src/diarize/pipeline.js';
import { diarizeOption, speakerCounts } from '../../src/diarize/request.js';
import { turnStretches } from '../../src/diarize/tinydiarize.js';
import type { Transcription } from '../../src/stt/types.js';
import { defaultDiarizeSettings } from '../helpers/diarize-settings.js';
import { sharedAudio } from '../helpers/paths.js';
import { readPcm16Wav } from '../helpers/wav.js';

const RATE = 16000;

/** A crude "voice": a harmonic tone at f0 with a formant-like emphasis, amplitude-modulated like syllables. */
function voice(seconds: number, f0: number, formant: number, seed: number): Float32Array {
  const out = new Float32Array(Math.round(seconds * RATE));
  let state = seed;
  for (let i = 0; i < out.length; i++) {
    const t = i / RATE;
    let sample = 0;
    for (let h = 1; h * f0 < 7000; h++) {
      const gain = 1 / (1 + ((h * f0 - formant) / 400) ** 2);
      sample += gain * Math.sin(2 * Math.PI * h * f0 * t);
    }
    state = (state * 1103515245 + 12345) % 2 ** 31;
    const syllable = 0.5 + 0.5 * Math.sin(2 * Math.PI * 4 * t);
    out[i] = 0.1 * syllable * sample + 0.002 * (state / 2 ** 31 - 0.5);
  }
  return out;
}

function concat(parts: Float32Array[]): Float32Array {
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

const settings = defaultDiarizeSettings;

describe('FeatureExtractor', () => {
  it('gives one frame per 10 ms, finite values, and tells two tones apart', () => {
    const extractor = new FeatureExtractor(40, 20);
    const a = extractor.compute(voice(1, 120, 700, 1), 0, RATE);
    const b = extractor.compute(voice(1, 220, 2200, 2), 0, RATE);
    expect(a.length / 20).toBe(FeatureExtractor.frameCount(RATE));
    expect(FeatureExtractor.frameCount(RATE)).toBe(98);
    expect(a.every(Number.isFinite)).toBe(true);
    const mean = (m: Float32Array, d: number) => m.filter((_, i) => i % 20 === d).reduce((x, y) => x + y, 0) / 98;
    expect(Math.abs(mean(a, 0) - mean(b, 0))).toBeGreaterThan(1);
  });

  it('keeps digital silence finite', () => {
    const silent = new FeatureExtractor(80).compute(new Float32Array(RATE), 0, RATE);
    expect(silent.every(Number.isFinite)).toBe(true);
  });
});

describe('agglomerate', () => {
  const around = (center: number[], jitter: number, seed: number) => {
    let state = seed;
    return normalize(
      Float32Array.from(center, (c) => {
        state = (state * 1103515245 + 12345) % 2 ** 31;
        return c + jitter * (state / 2 ** 31 - 0.5);
      }),
    );
  };
  const a = Array.from({ length: 20 }, (_, i) => around([1, 0, 0, 0], 0.3, i + 1));
  const b = Array.from({ length: 10 }, (_, i) => around([0, 1, 0, 0], 0.3, i + 100));
  const c = Array.from({ length: 5 }, (_, i) => around([0, 0, 1, 0], 0.3, i + 200));

  it('finds the clusters by threshold and numbers them by first appearance', () => {
    const labels = agglomerate([...b, ...a, ...c], { threshold: 0.5, minClusters: 1, maxClusters: 8 });
    expect([...labels.slice(0, 10)].every((l) => l === 0)).toBe(true);
    expect([...labels.slice(10, 30)].every((l) => l === 1)).toBe(true);
    expect([...labels.slice(30)].every((l) => l === 2)).toBe(true);
  });

  it('honours numClusters, maxClusters and minClusters', () => {
    const all = [...a, ...b, ...c];
    expect(Math.max(...agglomerate(all, { threshold: 0.5, minClusters: 1, maxClusters: 8, numClusters: 2 })) + 1).toBe(
      2,
    );
    expect(Math.max(...agglomerate(all, { threshold: 0.5, minClusters: 1, maxClusters: 2 })) + 1).toBe(2);
    expect(Math.max(...agglomerate(a, { threshold: 0.5, minClusters: 3, maxClusters: 8 })) + 1).toBe(3);
    expect([...agglomerate([a[0] as Float32Array], { threshold: 0.5, minClusters: 1, maxClusters: 8 })]).toEqual([0]);
  });
});

describe('diarizePcm (synthetic voices)', () => {
  const low = (s: number, seed: number) => voice(s, 110, 600, seed);
  const high = (s: number, seed: number) => voice(s, 230, 2400, seed);

  it('finds two alternating speakers and where they change', async () => {
    const samples = concat([low(6, 1), high(6, 2), low(6, 3), high(6, 4)]);
    const turns = await diarizePcm(samples, [{ start: 0, end: 24 }], settings);
    expect([...new Set(turns.map((t) => t.speaker))]).toEqual(['speaker_1', 'speaker_2']);
    expect(turns.map((t) => t.speaker)).toEqual(['speaker_1', 'speaker_2', 'speaker_1', 'speaker_2']);
    for (const [i, turn] of turns.slice(1).entries()) expect(Math.abs(turn.start - 6 * (i + 1))).toBeLessThan(0.5);
  });

  it('merges speakers whose centroids are closer than mergeDistance, unless numSpeakers says otherwise', async () => {
    const samples = concat([low(6, 1), high(6, 2), low(6, 3), high(6, 4)]);
    const everything = { ...settings, mergeDistance: 2 };
    expect(new Set((await diarizePcm(samples, [{ start: 0, end: 24 }], everything)).map((t) => t.speaker)).size).toBe(
      1,
    );
    const told = await diarizePcm(samples, [{ start: 0, end: 24 }], { ...everything, numSpeakers: 2 });
    expect(new Set(told.map((t) => t.speaker)).size).toBe(2);
  });

  it('keeps a short speaker only when it is a voice of its own (shortSpeakerSeconds, shortSpeakerDistance)', async () => {
    // Embeddings by time: A for 0-20 s, a short speaker for 20-22.5 s, B for 22.5-40 s. The short one is either a
    // distinct voice (orthogonal to both) or A again, slightly off (cosine distance 0.2: a split, not a voice).
    const unit = (...v: number[]) => normalize(Float32Array.from(v));
    const run = async (short: Float32Array, overrides: Partial<typeof settings>) => {
      const embed = async (_: Float32Array, windows: Array<{ startSample: number; endSample: number }>) =>
        windows.map(({ startSample, endSample }) => {
          const middle = (startSample + endSample) / 2 / RATE;
          return middle < 20 ? unit(1, 0, 0) : middle < 22.5 ? short : unit(0, 1, 0);
        });
      const options = { ...settings, threshold: 0.1, mergeDistance: 0, shortSpeakerDistance: 0.28, ...overrides };
      const turns = await diarizePcm(new Float32Array(40 * RATE), [{ start: 0, end: 40 }], { ...options, embed });
      return new Set(turns.map((t) => t.speaker)).size;
    };
    const distinct = unit(0, 0, 1);
    const splitOfA = unit(0.8, 0, 0.6); // cosine 0.8 with A
    expect(await run(distinct, {})).toBe(3);
    expect(await run(distinct, { shortSpeakerDistance: 2 })).toBe(2);
    expect(await run(distinct, { shortSpeakerSeconds: 4 })).toBe(2);
    expect(await run(splitOfA, {})).toBe(2);
    expect(await run(splitOfA, { shortSpeakerDistance: 0.1 })).toBe(3);
  });

  it('finds one speaker in one real voice (jfk.wav), and obeys numSpeakers', async () => {
    const samples = readPcm16Wav(sharedAudio('jfk.wav'));
    expect(new Set((await diarizePcm(samples, [{ start: 0.3, end: 10.8 }], settings)).map((t) => t.speaker)).size).toBe(
      1,
    );
    const forced = await diarizePcm(concat([low(6, 1), high(6, 2)]), [{ start: 0, end: 12 }], {
      ...settings,
      numSpeakers: 2,
    });
    expect(new Set(forced.map((t) => t.speaker)).size).toBe(2);
  });

  it('handles no regions, regions too short for a frame, and regions past the end', async () => {
    expect(await diarizePcm(new Float32Array(RATE), [], settings)).toEqual([]);
    expect(await diarizePcm(new Float32Array(RATE), [{ start: 0.5, end: 0.51 }], settings)).toEqual([]);
    const turns = await diarizePcm(low(2, 3), [{ start: 0, end: 50 }], settings);
    expect(turns.length).toBe(1);
  });

  it('stops at a checkpoint that throws', async () => {
    const stop = new Error('stop');
    await expect(
      diarizePcm(low(3, 1), [{ start: 0, end: 3 }], {
        ...settings,
        checkpoint: async () => {
          throw stop;
        },
      }),
    ).rejects.toBe(stop);
  });
});

describe('channels', () => {
  const left = concat([voice(3, 120, 700, 1), new Float32Array(3 * RATE)]);
  const right = concat([new Float32Array(3 * RATE), voice(3, 200, 2000, 2)]);

  it('tells one-speaker-per-channel audio from a stereo copy', async () => {
    const regions = [{ start: 0, end: 6 }];
    expect(await channelsDiffer(left, right, regions)).toBe(true);
    expect(await channelsDiffer(left, left, regions)).toBe(false);
    expect(await channelsDiffer(left, right, [])).toBe(false);
  });

  it('labels each stretch by the louder channel, speaker_1 first', async () => {
    const turns = await turnsByChannel(right, left, [{ start: 0, end: 6 }], 0.3);
    expect(turns.map((t) => t.speaker)).toEqual(['speaker_1', 'speaker_2']);
    expect(turns[0]?.start).toBe(0);
    expect(Math.abs((turns[1]?.start ?? 0) - 3)).toBeLessThanOrEqual(0.1);
    expect(turns[1]?.end).toBe(6);
  });
});

describe('attachSpeakers', () => {
  const transcription = (): Transcription => ({
    text: 'Hello there. Hi, how are you?',
    language: 'en',
    duration: 6,
    segments: [
      { id: 0, start: 0, end: 2.5, text: 'Hello there.' },
      { id: 1, start: 2.5, end: 6, text: 'Hi, how are you?' },
    ],
  });
  const words = [
    { word: 'Hello', start: 0.1, end: 0.6 },
    { word: 'there.', start: 0.7, end: 1.2 },
    { word: 'Hi,', start: 2.6, end: 2.9 },
    { word: 'how', start: 3.6, end: 3.9 },
    { word: 'are', start: 4.0, end: 4.2 },
    { word: 'you?', start: 4.3, end: 4.8 },
  ];
  const turns = [
    { start: 0, end: 3.2, speaker: 'speaker_1' },
    { start: 3.2, end: 6, speaker: 'speaker_2' },
  ];

  it('labels segments and splits one at the word where the speaker changes', () => {
    const t = transcription();
    attachSpeakers(t, words, turns);
    expect(t.segments).toEqual([
      { id: 0, start: 0, end: 2.5, text: 'Hello there.', speaker: 'speaker_1' },
      { id: 1, start: 2.5, end: 2.9, text: 'Hi,', speaker: 'speaker_1' },
      { id: 2, start: 3.6, end: 6, text: 'how are you?', speaker: 'speaker_2' },
    ]);
  });

  it('labels words when they are returned, and uses the nearest turn in a gap', () => {
    const t = { ...transcription(), words: words.map((w) => ({ ...w })) };
    attachSpeakers(t, words, [{ start: 4, end: 5, speaker: 'speaker_1' }]);
    expect(t.words?.every((w) => (w as { speaker?: string }).speaker === 'speaker_1')).toBe(true);
    expect(speakerAt([], 0, 1)).toBeUndefined();
  });
});

describe('turnStretches (tinydiarize)', () => {
  it('cuts the transcript at speaker-turn marks, and gives nothing without any', () => {
    const segments = [
      { id: 0, start: 0, end: 1, text: 'a', speakerTurnNext: false },
      { id: 1, start: 1, end: 2, text: 'b', speakerTurnNext: true },
      { id: 2, start: 2, end: 4, text: 'c', speakerTurnNext: false },
    ];
    expect(turnStretches(segments)).toEqual([
      { start: 0, end: 2 },
      { start: 2, end: 4 },
    ]);
    expect(turnStretches(segments.map((s) => ({ ...s, speakerTurnNext: false })))).toEqual([]);
  });
});

describe('options', () => {
  it('checks speaker counts and names them', () => {
    expect(speakerCounts({})).toEqual({ minSpeakers: 1, maxSpeakers: 8, numSpeakers: undefined });
    expect(() => speakerCounts({ minSpeakers: 3, maxSpeakers: 2 })).toThrow(/maxSpeakers/);
    expect(() => speakerCounts({ numSpeakers: 0 })).toThrow(/numSpeakers/);
    expect(() => speakerCounts({ numSpeakers: 5, maxSpeakers: 2 })).toThrow(/^numSpeakers must be between/);
    expect(diarizeOption(true)).toMatchObject({ counts: { minSpeakers: 1 }, knownSpeakers: [] });
    expect(diarizeOption(false)).toBeUndefined();
    expect(diarizeOption({ numSpeakers: 2 })).toMatchObject({ counts: { numSpeakers: 2 } });
    const audio = new Float32Array(16000);
    expect(diarizeOption({ knownSpeakers: [{ name: 'Ada', audio }] })?.knownSpeakers).toEqual([{ name: 'Ada', audio }]);
    expect(() => diarizeOption({ knownSpeakers: [{ name: 'x'.repeat(65), audio }] })).toThrow(
      /^diarize\.knownSpeakers\[0\]\.name must be 1–64 characters/,
    );
    expect(() => diarizeOption({ speakers: 2 })).toThrow(/diarize\.speakers/);
    expect(() => diarizeOption('yes')).toThrow(/diarize/);
  });

  it('resolves the engine settings', () => {
    expect(resolveDiarizationConfig(undefined)).toMatchObject({ embeddingModel: 'auto', channels: 'auto' });
    expect(resolveDiarizationConfig({ embeddingModel: null }).embeddingModel).toBeNull();
    // The threshold's default is the method's, chosen by the worker once it knows the model's front end.
    expect(resolveDiarizationConfig({ embeddingModel: 'x.onnx' }).base.threshold).toBeUndefined();
    expect(resolveDiarizationConfig({ threshold: 0.4 }).base.threshold).toBe(0.4);
    // A threshold without a model is the built-in features': no model is picked up by itself then.
    expect(resolveDiarizationConfig({ threshold: 0.4 }).embeddingModel).toBeNull();
    expect(resolveDiarizationConfig({ threshold: 0.4, embeddingModel: 'auto' }).embeddingModel).toBe('auto');
    expect(resolveDiarizationConfig({ mergeDistance: 0.2 }).base.mergeDistance).toBe(0.2);
    expect(() => resolveDiarizationConfig({ mergeDistance: 3 })).toThrow(/diarization\.mergeDistance/);
    expect(resolveDiarizationConfig(undefined).base).toMatchObject({ shortSpeakerSeconds: 1 });
    expect(resolveDiarizationConfig(undefined).base.shortSpeakerDistance).toBeUndefined();
    expect(resolveDiarizationConfig({ shortSpeakerDistance: 0.4 }).base.shortSpeakerDistance).toBe(0.4);
    expect(() => resolveDiarizationConfig({ shortSpeakerDistance: -1 })).toThrow(/diarization\.shortSpeakerDistance/);
    expect(() => resolveDiarizationConfig({ shortSpeakerSeconds: 'x' })).toThrow(/diarization\.shortSpeakerSeconds/);
    expect(() => resolveDiarizationConfig({ channels: 'left' })).toThrow(/diarization\.channels/);
    expect(resolveDiarizationConfig(undefined).segmentationModel).toBe('auto');
    expect(resolveDiarizationConfig({ segmentationModel: null }).segmentationModel).toBeNull();
    expect(resolveDiarizationConfig({ segmentationModel: 'seg.onnx' }).segmentationModel).toBe('seg.onnx');
    expect(() => resolveDiarizationConfig({ segmentationModel: 3 })).toThrow(/diarization\.segmentationModel/);
    expect(() => resolveDiarizationConfig({ segmentationModel: '' })).toThrow(/diarization\.segmentationModel/);
    expect(resolveDiarizationConfig({ segmentationStepSeconds: 5 }).base.segmentationStepSeconds).toBe(5);
    expect(() => resolveDiarizationConfig({ segmentationStepSeconds: 0.1 })).toThrow(
      /diarization\.segmentationStepSeconds/,
    );
    // A step past a chunk's frames (9.94 s) would leave frames uncovered.
    expect(() => resolveDiarizationConfig({ segmentationStepSeconds: 10 })).toThrow(
      /diarization\.segmentationStepSeconds/,
    );
    expect(resolveDiarizationConfig(undefined).base.segmentationEmbedSeconds).toBe(3);
    expect(resolveDiarizationConfig({ segmentationEmbedSeconds: 5 }).base.segmentationEmbedSeconds).toBe(5);
    expect(() => resolveDiarizationConfig({ segmentationEmbedSeconds: 0 })).toThrow(
      /diarization\.segmentationEmbedSeconds/,
    );
    expect(() => resolveDiarizationConfig({ segmentationEmbedSeconds: '3' })).toThrow(
      /diarization\.segmentationEmbedSeconds/,
    );
    // Undefined: the encoder's default (CAM++ 0.3 s with the segmentation model, never otherwise).
    expect(resolveDiarizationConfig(undefined).base.segmentationSplitPauseSeconds).toBeUndefined();
    const base = { ...resolveDiarizationConfig(undefined).base, ...speakerCounts({}) };
    expect(clusteringSettings(base, 'kaldi-fbank', true).segmentationSplitPauseSeconds).toBe(0.3);
    expect(clusteringSettings(base, 'kaldi-fbank', true)).toMatchObject({ threshold: 0.7, shortSpeakerDistance: 0.7 });
    expect(clusteringSettings(base, 'speechbrain-fbank', true).segmentationSplitPauseSeconds).toBe(0);
    // ECAPA: over windows its own calibration (0.7 / 0.7), with the segmentation model 0.6 / 0.6.
    expect(clusteringSettings(base, 'speechbrain-fbank', false)).toMatchObject({
      threshold: 0.7,
      shortSpeakerDistance: 0.7,
    });
    expect(clusteringSettings(base, 'speechbrain-fbank', true)).toMatchObject({
      threshold: 0.6,
      shortSpeakerDistance: 0.6,
    });
    expect(clusteringSettings(base, 'ge2e', true).segmentationSplitPauseSeconds).toBe(0);
    expect(clusteringSettings(base, 'kaldi-fbank', false).segmentationSplitPauseSeconds).toBe(0);
    expect(
      clusteringSettings({ ...base, segmentationSplitPauseSeconds: 0.5 }, 'ge2e', true).segmentationSplitPauseSeconds,
    ).toBe(0.5);
    expect(resolveDiarizationConfig({ segmentationSplitPauseSeconds: 0 }).base.segmentationSplitPauseSeconds).toBe(0);
    for (const bad of [-0.1, 11, '0.3']) {
      expect(() => resolveDiarizationConfig({ segmentationSplitPauseSeconds: bad })).toThrow(
        /diarization\.segmentationSplitPauseSeconds/,
      );
    }
    expect(() => resolveDiarizationConfig({ windowSeconds: 0 })).toThrow(/diarization\.windowSeconds/);
    expect(() => resolveDiarizationConfig({ windowSeconds: 1, hopSeconds: 2 })).toThrow(/diarization\.hopSeconds/);
  });
});

describe('attachSpeakers keeps every word', () => {
  it('a word whose middle lies past its segment stays in its segment when that segment is split', () => {
    const t: Transcription = {
      text: 'Hello big world. Again now.',
      language: 'en',
      duration: 4,
      segments: [
        { id: 0, start: 0, end: 2, text: 'Hello big world.' },
        { id: 1, start: 2, end: 4, text: 'Again now.' },
      ],
    };
    const words = [
      { word: 'Hello', start: 0, end: 0.5 },
      { word: 'big', start: 0.6, end: 1.2 },
      { word: 'world.', start: 1.5, end: 2.6 },
      { word: 'Again', start: 2.7, end: 3.2 },
      { word: 'now.', start: 3.3, end: 3.9 },
    ];
    attachSpeakers(t, words, [
      { start: 0, end: 1.3, speaker: 'speaker_1' },
      { start: 1.3, end: 4, speaker: 'speaker_2' },
    ]);
    expect((t.segments ?? []).map((segment) => [segment.text, segment.speaker])).toEqual([
      ['Hello big', 'speaker_1'],
      ['world.', 'speaker_2'],
      ['Again now.', 'speaker_2'],
    ]);
  });

  it('labels 100,000 words against 10,000 turns in linear time', () => {
    const turns = Array.from({ length: 10_000 }, (_, i) => ({
      start: i,
      end: i + 1,
      speaker: `speaker_${(i % 3) + 1}`,
    }));
    const words = Array.from({ length: 100_000 }, (_, i) => ({ word: 'w', start: i / 10, end: i / 10 + 0.08 }));
    const t: Transcription = {
      text: '',
      language: 'en',
      duration: 10_000,
      segments: Array.from({ length: 1000 }, (_, i) => ({
        id: i,
        start: i * 10,
        end: i * 10 + 10,
        text: 'w '.repeat(100).trim(),
      })),
      words: words.map((w) => ({ ...w })),
    };
    const started = performance.now();
    attachSpeakers(t, words, turns);
    expect(performance.now() - started).toBeLessThan(scaledMs(1000));
    expect(t.segments?.length).toBe(10_000);
    expect(t.words?.[15]).toMatchObject({ speaker: 'speaker_2' });
  });
});
