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
  POWERSET,
  type SegmentationPipelineOptions,
} from '../../src/diarize/segmentation-pipeline.js';
import { defaultDiarizeSettings } from '../helpers/diarize-settings.js';

const RATE = 16000;
const LEVEL = { a: 0.5, b: -0.5, both: 0.1 } as const;

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
        if (Math.abs(level - LEVEL.a) < 1e-6) speakers = [a];
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
    return Float32Array.of(0, 0, 1);
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
    expect([mapping[0], mapping[2]]).toEqual([0, 1]);
    expect(mapping[1]).toBe(-1);
    expect(mapping[LOCAL_SPEAKERS + 1]).toBe(0);
    // With fewer speakers than local speakers, each takes its nearest.
    expect(assignLocals(1, locals.slice(0, 2), centers.slice(0, 1))[0]).toBe(0);
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
