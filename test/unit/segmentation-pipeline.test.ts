// The segmentation pipeline with a fake segmentation model and a fake encoder: the audio itself says who talks (a
// constant level per speaker), so chunks, local speakers, clustering and reconstruction are checked exactly.
import { describe, expect, it } from 'vitest';
import type { EmbeddingWindow } from '../../src/diarize/pipeline.js';
import {
  assignLocals,
  CHUNK_SAMPLES,
  chunkStarts,
  diarizeWithSegmentation,
  FRAME_SPAN,
  FRAME_STEP,
  LOCAL_SPEAKERS,
  MAX_STRETCHES,
  POWERSET,
  type SegmentationPipelineOptions,
  stretchesOf,
} from '../../src/diarize/segmentation-pipeline.js';
import { defaultDiarizeSettings } from '../helpers/diarize-settings.js';

const RATE = 16000;
// C is a third voice the fake segmentation model mistakes for A's local speaker (as segmentation-3.0 does with a short
// turn next to another voice's).
const LEVEL = { a: 0.5, b: -0.5, both: 0.1, c: 0.3 } as const;

/** Audio whose level says who talks: `script` is [seconds, who] in order; silence is 0. */
function scripted(script: Array<[number, keyof typeof LEVEL | 'none']>): Float32Array {
  const total = script.reduce((sum, [seconds]) => sum + seconds, 0);
  const samples = new Float32Array(Math.round(total * RATE));
  let at = 0;
  for (const [seconds, who] of script) {
    const end = at + Math.round(seconds * RATE);
    if (who !== 'none') samples.fill(LEVEL[who], at, end);
    at = end;
  }
  return samples;
}

/**
 * A segmentation model reading the level at each frame's middle. Local speaker numbers swap from one chunk to the
 * next, as a real model's do (they are only local).
 */
function fakeSegmenter() {
  let chunk = 0;
  const calls: number[] = [];
  const frames = Math.floor((CHUNK_SAMPLES - FRAME_SPAN) / FRAME_STEP) + 1;
  const segment = async (input: Float32Array, batch: number) => {
    calls.push(batch);
    const out = new Float32Array(batch * frames * POWERSET.length).fill(-10);
    for (let b = 0; b < batch; b++, chunk++) {
      const [a, bLocal] = chunk % 2 === 0 ? [0, 1] : [1, 0];
      for (let f = 0; f < frames; f++) {
        const level = input[b * CHUNK_SAMPLES + f * FRAME_STEP + Math.floor(FRAME_SPAN / 2)] as number;
        let speakers: number[] = [];
        if (Math.abs(level - LEVEL.a) < 1e-6 || Math.abs(level - LEVEL.c) < 1e-6) speakers = [a];
        else if (Math.abs(level - LEVEL.b) < 1e-6) speakers = [bLocal];
        else if (Math.abs(level - LEVEL.both) < 1e-6) speakers = [0, 1];
        const cls = POWERSET.findIndex(
          (set) => set.length === speakers.length && speakers.every((s) => set.includes(s)),
        );
        out[(b * frames + f) * POWERSET.length + cls] = 0;
      }
    }
    return out;
  };
  return { segment, calls };
}

/** An encoder that knows the voices by their level: A → [1, 0, 0], B → [0, 1, 0], anything else → [0, 0, 1]. */
async function fakeEmbed(samples: Float32Array, windows: EmbeddingWindow[]): Promise<Float32Array[]> {
  return windows.map(({ startSample, endSample }) => {
    let sum = 0;
    for (let i = startSample; i < endSample; i++) sum += samples[i] as number;
    const mean = sum / Math.max(1, endSample - startSample);
    if (Math.abs(mean - LEVEL.a) < 0.05) return Float32Array.of(1, 0, 0);
    if (Math.abs(mean - LEVEL.b) < 0.05) return Float32Array.of(0, 1, 0);
    if (Math.abs(mean - LEVEL.c) < 0.05) return Float32Array.of(0, 0, 1);
    return Float32Array.of(0.6, 0, 0.8);
  });
}

function options(segment: SegmentationPipelineOptions['segment']): SegmentationPipelineOptions {
  return {
    ...defaultDiarizeSettings,
    threshold: 0.5,
    mergeDistance: 0,
    shortSpeakerDistance: 2,
    minSpeakerSeconds: 1,
    segmentationStepSeconds: 2.5,
    segmentationSplitPauseSeconds: 0,
    segment,
    segmentationBatch: 3,
    embed: fakeEmbed,
  };
}

describe('chunkStarts', () => {
  it('gives short audio one chunk and ends the last chunk with the audio, on the frame grid', () => {
    expect(chunkStarts(1000, 40_000)).toEqual([0]);
    expect(chunkStarts(CHUNK_SAMPLES, 40_000)).toEqual([0]);
    const starts = chunkStarts(200_000, 39_960);
    expect(starts).toEqual([0, 39_960, 40_230]);
    for (const start of starts) expect(start % FRAME_STEP).toBe(0);
    const last = starts[starts.length - 1] as number;
    expect(last + CHUNK_SAMPLES).toBeGreaterThanOrEqual(200_000);
  });
});

describe('diarizeWithSegmentation', () => {
  it('finds both speakers across chunks whose local numbers swap, and gives overlapped speech to both', async () => {
    const samples = scripted([
      [5, 'a'],
      [5, 'b'],
      [5, 'a'],
      [2, 'both'],
      [8, 'b'],
      [1, 'none'],
      [6, 'a'],
    ]);
    const { segment } = fakeSegmenter();
    const turns = await diarizeWithSegmentation(samples, [{ start: 0, end: samples.length / RATE }], options(segment));
    const speakers = [...new Set(turns.map((t) => t.speaker))];
    expect(speakers).toEqual(['speaker_1', 'speaker_2']);
    const near = (a: number, b: number) => Math.abs(a - b) < 0.1;
    const a = turns.filter((t) => t.speaker === 'speaker_1');
    const b = turns.filter((t) => t.speaker === 'speaker_2');
    expect(a).toHaveLength(3);
    expect(b).toHaveLength(2);
    expect(near(a[0]?.start ?? -1, 0) && near(a[0]?.end ?? -1, 5)).toBe(true);
    expect(near(b[0]?.start ?? -1, 5) && near(b[0]?.end ?? -1, 10)).toBe(true);
    // A talks 10-17 (15-17 overlapped), B 15-25: the overlap is both speakers'.
    expect(near(a[1]?.start ?? -1, 10) && near(a[1]?.end ?? -1, 17)).toBe(true);
    expect(near(b[1]?.start ?? -1, 15) && near(b[1]?.end ?? -1, 25)).toBe(true);
    expect(near(a[2]?.start ?? -1, 26) && near(a[2]?.end ?? -1, 32)).toBe(true);
  });

  it('honours numSpeakers and runs no chunk without speech', async () => {
    const samples = scripted([
      [6, 'a'],
      [30, 'none'],
      [6, 'b'],
    ]);
    const { segment, calls } = fakeSegmenter();
    const regions = [
      { start: 0, end: 6 },
      { start: 36, end: 42 },
    ];
    const one = await diarizeWithSegmentation(samples, regions, { ...options(segment), numSpeakers: 1 });
    expect(new Set(one.map((t) => t.speaker)).size).toBe(1);
    // Chunks every 2.5 s over 42 s: those inside the 30 s of silence are not run.
    const run = calls.reduce((sum, n) => sum + n, 0);
    expect(run).toBeLessThan(chunkStarts(samples.length, 39_960).length);
    expect(run).toBeGreaterThan(0);
  });

  it('never gives two local speakers of one chunk the same speaker, even when both sound like one voice', () => {
    const centers = [Float32Array.of(1, 0), Float32Array.of(0, 1)];
    const near = (x: number) => Float32Array.of(Math.cos(x), Math.sin(x));
    // Chunk 0: two local speakers both nearest the first centroid; chunk 1: one local speaker alone.
    const locals = [
      { chunk: 0, local: 0, vector: near(0.1), seconds: 2 },
      { chunk: 0, local: 2, vector: near(0.3), seconds: 2 },
      { chunk: 1, local: 1, vector: near(0.3), seconds: 2 },
    ];
    const mapping = assignLocals(2, locals, centers);
    // The closer one keeps the first speaker, the other takes the second; alone, it is the first.
    const at = (chunk: number, local: number) => mapping[(chunk * LOCAL_SPEAKERS + local) * MAX_STRETCHES];
    expect([at(0, 0), at(0, 2)]).toEqual([0, 1]);
    expect(at(0, 1)).toBe(-1);
    expect(at(1, 1)).toBe(0);
    // With fewer speakers than local speakers, each takes its nearest.
    expect(assignLocals(1, locals.slice(0, 2), centers.slice(0, 1))[0]).toBe(0);
  });

  it('lets stretches of one local speaker share a speaker, never those of two, by search or greedily', () => {
    const axis = (d: number, n: number) => Float32Array.from({ length: n }, (_, i) => (i === d ? 1 : 0));
    const mix = (a: number, b: number, n: number, w = 0.8) =>
      Float32Array.from({ length: n }, (_, i) => (i === a ? w : i === b ? Math.sqrt(1 - w * w) : 0));
    const at = (mapping: Int32Array, local: number, stretch: number) =>
      mapping[local * MAX_STRETCHES + stretch] as number;
    // Local 0's two stretches are voices 0 and 1; local 1 sounds most like voice 0 too, then voice 2.
    const centers = [axis(0, 3), axis(1, 3), axis(2, 3)];
    const locals = [
      { chunk: 0, local: 0, stretch: 0, vector: axis(0, 3), seconds: 1 },
      { chunk: 0, local: 0, stretch: 1, vector: axis(1, 3), seconds: 1 },
      { chunk: 0, local: 1, stretch: 0, vector: mix(0, 2, 3), seconds: 1 },
    ];
    const mapping = assignLocals(1, locals, centers);
    expect([at(mapping, 0, 0), at(mapping, 0, 1), at(mapping, 1, 0)]).toEqual([0, 1, 2]);
    // Two stretches of one local speaker near one voice both take it.
    const [first, second] = locals as [(typeof locals)[0], (typeof locals)[0]];
    const same = assignLocals(1, [first, { ...second, vector: axis(0, 3) }], centers);
    expect([at(same, 0, 0), at(same, 0, 1)]).toEqual([0, 0]);
    // Too many assignments to try (8 speakers, 3 local speakers of 2-3 stretches): greedily, still apart.
    const n = 8;
    const wide = Array.from({ length: n }, (_, d) => axis(d, n));
    const many = [0, 0, 0, 1, 1, 2, 2].map((local, i) => ({
      chunk: 0,
      local,
      stretch: i,
      vector: mix(0, (i % 3) + 1, n, 0.9 - i * 0.01),
      seconds: 1,
    }));
    const greedy = assignLocals(1, many, wide);
    const speakerOf = many.map((l) => greedy[l.local * MAX_STRETCHES + l.stretch] as number);
    for (let i = 0; i < many.length; i++) {
      for (let j = i + 1; j < many.length; j++) {
        if ((many[i] as (typeof many)[0]).local !== (many[j] as (typeof many)[0]).local) {
          expect(speakerOf[i]).not.toBe(speakerOf[j]);
        }
      }
    }
    // Local 0 (the most similar to voice 0) keeps it.
    expect(speakerOf.slice(0, 3)).toEqual([0, 0, 0]);
  });

  it('splits a local speaker at its pauses when asked, so a short voice the model folded into another is found', async () => {
    // C's 2 s turns sit inside A's local speaker, 0.5 s of silence from A's speech.
    const samples = scripted([
      [4, 'a'],
      [0.5, 'none'],
      [2, 'c'],
      [0.5, 'none'],
      [5, 'b'],
      [4, 'a'],
      [0.5, 'none'],
      [2, 'c'],
      [0.5, 'none'],
      [6, 'b'],
    ]);
    const region = [{ start: 0, end: samples.length / RATE }];
    const run = async (segmentationSplitPauseSeconds: number) => {
      const { segment } = fakeSegmenter();
      const turns = await diarizeWithSegmentation(samples, region, {
        ...options(segment),
        segmentationSplitPauseSeconds,
      });
      return turns;
    };
    expect(new Set((await run(0)).map((t) => t.speaker)).size).toBe(2);
    const split = await run(0.3);
    expect(new Set(split.map((t) => t.speaker)).size).toBe(3);
    // C's turns (4.5-6.5 s and 16.5-18.5 s) are one speaker's, A's (0-4, 12-16) and B's (7-12, 19-25) others'.
    const at = (t: number) => split.find((turn) => turn.start <= t && t < turn.end)?.speaker;
    expect(at(5.5)).toBe(at(17.5));
    expect(at(5.5)).not.toBe(at(2));
    expect(at(5.5)).not.toBe(at(9));
    expect(at(2)).toBe(at(14));
    expect(at(9)).toBe(at(22));
  });

  it('cuts talk into stretches at pauses, joining stretches too short to embed to the nearer neighbour', () => {
    const frames = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);
    // Runs 0-39, 50-54 (short), 57-99: the short one joins the run after it (a 2-frame pause against 10).
    expect(stretchesOf([...frames(0, 40), ...frames(50, 55), ...frames(57, 100)], 1, 30).map((r) => r.length)).toEqual([
      40, 48,
    ]);
    // No pause long enough: one stretch; everything short: one stretch.
    expect(stretchesOf(frames(0, 100), 1, 30)).toHaveLength(1);
    expect(stretchesOf([0, 5, 10, 15], 1, 30)).toHaveLength(1);
    // At most MAX_STRETCHES: past it, the runs across the shortest pauses join. Every frame kept, in order.
    const many = Array.from({ length: 20 }, (_, r) => frames(r * 50 + (r % 3), r * 50 + 40)).flat();
    const joined = stretchesOf(many, 1, 30);
    expect(joined).toHaveLength(MAX_STRETCHES);
    expect(joined.flat()).toEqual(many);
    // A short first run joins the run after it.
    expect(stretchesOf([...frames(0, 5), ...frames(20, 60), ...frames(90, 130)], 1, 30).map((r) => r[0])).toEqual([
      0, 90,
    ]);
  });

  it('handles audio shorter than one chunk (zero padded) and a step longer than a chunk reaches', async () => {
    const short = scripted([[3, 'a']]);
    const { segment } = fakeSegmenter();
    const turns = await diarizeWithSegmentation(short, [{ start: 0, end: 3 }], options(segment));
    expect(turns.map((t) => t.speaker)).toEqual(['speaker_1']);
    expect(turns[0]?.start).toBeLessThan(0.1);
    expect(turns[0]?.end).toBeGreaterThan(2.9);
    expect(turns[0]?.end).toBeLessThanOrEqual(3);
    // A 9.9 s step is clamped to a chunk's 589 frames: one voice over 60 s stays one unbroken turn.
    const long = scripted([[60, 'a']]);
    const steps = await diarizeWithSegmentation(long, [{ start: 0, end: 60 }], {
      ...options(fakeSegmenter().segment),
      segmentationStepSeconds: 9.9,
    });
    expect(steps).toHaveLength(1);
  });

  it('refuses a segmentation answer of the wrong size instead of misplacing every turn', async () => {
    const wrong = async (_input: Float32Array, batch: number) => new Float32Array(batch * 293 * POWERSET.length);
    await expect(
      diarizeWithSegmentation(scripted([[12, 'a']]), [{ start: 0, end: 12 }], options(wrong)),
    ).rejects.toThrow(/589 frames/);
  });

  it('answers no turns for silence', async () => {
    const { segment, calls } = fakeSegmenter();
    expect(await diarizeWithSegmentation(new Float32Array(RATE * 20), [], options(segment))).toEqual([]);
    expect(calls).toEqual([]);
  });
});
