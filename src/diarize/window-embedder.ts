// Speaker embeddings of many windows through one model: the front end's frames computed once over each stretch of
// overlapping windows (windows overlap by half or more, so per-window frames would cost that many times over), then
// windows of equal length batched into one model call (a batch makes the encoder's matrix products efficient).

import { normalize } from './clustering.js';
import type { EmbeddingWindow } from './pipeline.js';
import { framesIn, type SpeakerFrontEnd } from './speaker-front-end.js';

const HOP = 160;
/** Windows per model call: enough to turn the encoder's products into matrix-matrix ones, little memory. */
export const EMBEDDING_BATCH = 16;
/** Distinct window lengths waiting for a full batch before all are run. */
const MAX_PENDING_LENGTHS = 32;

/** Runs the model on `batch` windows of `frames` × `dimension` features; returns `batch` embeddings, concatenated. */
export type EmbeddingRunner = (
  input: Float32Array,
  batch: number,
  frames: number,
  dimension: number,
) => Promise<Float32Array>;

/**
 * Unit embeddings of each window, in order. `checkpoint` is awaited between model calls (a worker's cancel point).
 * A window too short for one frame gets a zero vector (it matches nothing).
 */
export async function embedWindows(
  samples: Float32Array,
  windows: readonly EmbeddingWindow[],
  frontEnd: SpeakerFrontEnd,
  run: EmbeddingRunner,
  checkpoint: () => Promise<void>,
  /** Windows per model call at most: EMBEDDING_BATCH, or 1 for a model exported with a fixed batch of 1. */
  batchLimit = EMBEDDING_BATCH,
): Promise<Float32Array[]> {
  const vectors: Float32Array[] = new Array(windows.length);
  const d = frontEnd.dimension;
  const pending = new Map<number, Array<{ index: number; features: Float32Array }>>();
  let dimensionOut = 0;
  const flush = async (frames: number) => {
    const group = pending.get(frames);
    if (!group || group.length === 0) return;
    pending.delete(frames);
    const input = new Float32Array(group.length * frames * d);
    group.forEach(({ features }, i) => {
      input.set(features, i * frames * d);
    });
    const output = await run(input, group.length, frames, d);
    const size = output.length / group.length;
    dimensionOut = size;
    group.forEach(({ index }, i) => {
      const vector = output.slice(i * size, (i + 1) * size);
      // A model that answers NaN or Infinity for a window (silence through a model without an epsilon) would poison
      // every centroid it joins: such a window gets the zero vector, which matches nothing.
      vectors[index] = vector.every(Number.isFinite) ? normalize(vector) : vector.fill(0);
    });
    await checkpoint();
  };
  for (let first = 0; first < windows.length; ) {
    // A stretch: windows on one 10 ms grid, each starting before the previous one ends.
    let last = first;
    const origin = (windows[first] as EmbeddingWindow).startSample;
    let end = (windows[first] as EmbeddingWindow).endSample;
    while (last + 1 < windows.length) {
      const next = windows[last + 1] as EmbeddingWindow;
      if (next.startSample < origin || next.startSample >= end || (next.startSample - origin) % HOP !== 0) break;
      end = Math.max(end, next.endSample);
      last++;
    }
    const stretch = frontEnd.frames(samples, origin, end);
    for (let w = first; w <= last; w++) {
      const { startSample, endSample } = windows[w] as EmbeddingWindow;
      const frames = framesIn(startSample, endSample);
      if (frames === 0) continue;
      const offset = ((startSample - origin) / HOP) * d;
      const features = stretch.slice(offset, offset + frames * d);
      frontEnd.prepare(features, samples.subarray(startSample, endSample));
      const group = pending.get(frames) ?? [];
      group.push({ index: w, features });
      pending.set(frames, group);
      if (group.length >= batchLimit) await flush(frames);
      // Odd lengths (each region's last window) would otherwise wait to the end: a bounded number waits.
      if (pending.size > MAX_PENDING_LENGTHS) for (const length of [...pending.keys()]) await flush(length);
    }
    first = last + 1;
  }
  for (const frames of [...pending.keys()]) await flush(frames);
  for (let w = 0; w < windows.length; w++) vectors[w] ??= new Float32Array(dimensionOut);
  return vectors;
}
