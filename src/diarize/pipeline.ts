// Diarization of 16 kHz mono PCM given its speech regions: speaker vectors for short windows over speech (built-in
// MFCC statistics, or a speaker-embedding model), agglomerative clustering with an automatic count, per-frame labels
// refined by resegmentation (a Gaussian per speaker over the frames, smoothed over time), then turns.
// Memory is linear in the speech duration (the frames' features) plus a capped clustering matrix.

import type { SpeechRegion } from '../audio/speech-regions.js';
import { centroids, normalize } from './clustering.js';
import { FeatureExtractor, FRAME_SHIFT, FRAME_SHIFT_SECONDS, SAMPLE_RATE } from './features.js';
import {
  clusterSpeakers,
  countOf,
  type KnownSpeakerVector,
  matchKnownSpeakers,
  type SpeakerClusterOptions,
  speakerNamer,
} from './speaker-clusters.js';
import type { SpeakerTurn } from './turn.js';
import type { DiarizeSettings } from './types.js';

/** A window of speech handed to a speaker-embedding model: its samples' range. */
export interface EmbeddingWindow {
  startSample: number;
  endSample: number;
}

export interface PipelineOptions
  extends Omit<DiarizeSettings, 'threshold' | 'mergeDistance' | 'shortSpeakerDistance'>,
    SpeakerClusterOptions {
  /**
   * Speakers to recognize (embedding vectors only): each found speaker whose centroid lies within `threshold` of
   * one takes its name, closest pairs first, one speaker per name.
   */
  knownSpeakers?: KnownSpeakerVector[];
  /** A speaker-embedding model: unit vectors for the windows, in order. Built-in features when absent. */
  embed?: ((samples: Float32Array, windows: EmbeddingWindow[]) => Promise<Float32Array[]>) | undefined;
  /** Awaited between regions and stages: lets a worker take a cancel message; throws to stop. */
  checkpoint?: () => Promise<void>;
}

const CEPSTRA = 20;
const MEL_BINS = 40;

interface RegionFrames {
  region: SpeechRegion;
  /** First frame's start, in samples. */
  offset: number;
  frames: number;
  /** CEPSTRA values per frame, normalized over the whole input. */
  mfcc: Float32Array;
  labels: Int32Array;
}

interface Window {
  region: RegionFrames;
  first: number;
  last: number;
}

export async function diarizePcm(
  samples: Float32Array,
  regions: readonly SpeechRegion[],
  options: PipelineOptions,
): Promise<SpeakerTurn[]> {
  const extractor = new FeatureExtractor(MEL_BINS, CEPSTRA);
  const blocks: RegionFrames[] = [];
  for (const region of regions) {
    const start = Math.max(0, Math.round(region.start * SAMPLE_RATE));
    const end = Math.min(samples.length, Math.round(region.end * SAMPLE_RATE));
    const mfcc = extractor.compute(samples, start, end);
    const frames = mfcc.length / CEPSTRA;
    if (frames > 0) blocks.push({ region, offset: start, frames, mfcc, labels: new Int32Array(frames).fill(-1) });
    await options.checkpoint?.();
  }
  if (blocks.length === 0) return [];
  normalizeFrames(blocks);
  const windows = windowsOf(blocks, options);
  if (windows.length === 0) return [];
  const vectors = options.embed
    ? await options.embed(
        samples,
        windows.map((w) => ({
          startSample: w.region.offset + w.first * FRAME_SHIFT,
          endSample: w.region.offset + (w.last + 1) * FRAME_SHIFT,
        })),
      )
    : statisticsVectors(windows);
  await options.checkpoint?.();
  // Each window stands for `hopSeconds` of new speech.
  const windowLabels = clusterSpeakers(vectors, new Float32Array(vectors.length).fill(options.hopSeconds), options);
  const speakers = countOf(windowLabels);
  labelFrames(windows, windowLabels, speakers);
  const known = options.knownSpeakers ?? [];
  const names =
    known.length > 0 ? matchKnownSpeakers(centroids(vectors, windowLabels, speakers), known, options.threshold) : [];
  return turnsOf(blocks, options.minTurnSeconds, names);
}

/** Windows `windowSeconds` long every `hopSeconds` over one speech region (one window when it is shorter). */
export function clipWindows(
  region: SpeechRegion,
  options: Pick<DiarizeSettings, 'windowSeconds' | 'hopSeconds'>,
): EmbeddingWindow[] {
  const first = Math.round(region.start * SAMPLE_RATE);
  const last = Math.round(region.end * SAMPLE_RATE);
  const size = Math.round(options.windowSeconds * SAMPLE_RATE);
  const hop = Math.max(1, Math.round(options.hopSeconds * SAMPLE_RATE));
  const windows: EmbeddingWindow[] = [];
  for (let start = first; start === first || start + size <= last; start += hop) {
    windows.push({ startSample: start, endSample: Math.min(start + size, last) });
  }
  return windows;
}

/** Cepstral mean and variance normalization over every speech frame of the input. */
function normalizeFrames(blocks: RegionFrames[]): void {
  const mean = new Float64Array(CEPSTRA);
  const square = new Float64Array(CEPSTRA);
  let count = 0;
  for (const { mfcc } of blocks) {
    for (let i = 0; i < mfcc.length; i++) {
      const v = mfcc[i] as number;
      mean[i % CEPSTRA] = (mean[i % CEPSTRA] as number) + v;
      square[i % CEPSTRA] = (square[i % CEPSTRA] as number) + v * v;
    }
    count += mfcc.length / CEPSTRA;
  }
  for (let d = 0; d < CEPSTRA; d++) {
    mean[d] = (mean[d] as number) / count;
    square[d] = Math.sqrt(Math.max((square[d] as number) / count - (mean[d] as number) ** 2, 1e-8));
  }
  for (const { mfcc } of blocks) {
    for (let i = 0; i < mfcc.length; i++) {
      const d = i % CEPSTRA;
      mfcc[i] = ((mfcc[i] as number) - (mean[d] as number)) / (square[d] as number);
    }
  }
}

/** Sliding windows over each region; a region shorter than a window is one window. */
function windowsOf(blocks: RegionFrames[], options: PipelineOptions): Window[] {
  const size = Math.round(options.windowSeconds / FRAME_SHIFT_SECONDS);
  const hop = Math.max(1, Math.round(options.hopSeconds / FRAME_SHIFT_SECONDS));
  const windows: Window[] = [];
  for (const region of blocks) {
    if (region.frames <= size) {
      windows.push({ region, first: 0, last: region.frames - 1 });
      continue;
    }
    let first = 0;
    for (; first + size <= region.frames; first += hop) windows.push({ region, first, last: first + size - 1 });
    if (first - hop + size < region.frames)
      windows.push({ region, first: region.frames - size, last: region.frames - 1 });
  }
  return windows;
}

/** Mean and standard deviation of each cepstrum over the window, standardized across windows, unit length. */
function statisticsVectors(windows: Window[]): Float32Array[] {
  const vectors = windows.map(({ region, first, last }) => {
    const vector = new Float32Array(2 * CEPSTRA);
    const frames = last - first + 1;
    for (let f = first; f <= last; f++) {
      for (let d = 0; d < CEPSTRA; d++) {
        const v = region.mfcc[f * CEPSTRA + d] as number;
        vector[d] = (vector[d] as number) + v / frames;
        vector[CEPSTRA + d] = (vector[CEPSTRA + d] as number) + (v * v) / frames;
      }
    }
    for (let d = 0; d < CEPSTRA; d++) {
      vector[CEPSTRA + d] = Math.sqrt(Math.max((vector[CEPSTRA + d] as number) - (vector[d] as number) ** 2, 0));
    }
    return vector;
  });
  const dimension = 2 * CEPSTRA;
  for (let d = 0; d < dimension; d++) {
    let mean = 0;
    let square = 0;
    for (const v of vectors) {
      mean += v[d] as number;
      square += (v[d] as number) ** 2;
    }
    mean /= vectors.length;
    const std = Math.sqrt(Math.max(square / vectors.length - mean * mean, 1e-8));
    for (const v of vectors) v[d] = ((v[d] as number) - mean) / std;
  }
  return vectors.map(normalize);
}

/** Each frame takes the label most of the windows covering it have. */
function labelFrames(windows: Window[], labels: Int32Array, speakers: number): void {
  const votes = new Map<RegionFrames, Float32Array>();
  windows.forEach((window, i) => {
    let tally = votes.get(window.region);
    if (!tally) {
      tally = new Float32Array(window.region.frames * speakers);
      votes.set(window.region, tally);
    }
    const label = labels[i] as number;
    for (let f = window.first; f <= window.last; f++)
      tally[f * speakers + label] = (tally[f * speakers + label] as number) + 1;
  });
  for (const [region, tally] of votes) {
    for (let f = 0; f < region.frames; f++) {
      let best = 0;
      for (let s = 1; s < speakers; s++)
        if ((tally[f * speakers + s] as number) > (tally[f * speakers + best] as number)) best = s;
      region.labels[f] = best;
    }
  }
}

/**
 * Runs of equal labels become turns; turns shorter than `minTurn` go to the longer neighbour in their region. A label
 * with a known name takes it; the others are `speaker_1`, `speaker_2`, ... by first appearance, skipping a known name.
 */
function turnsOf(
  blocks: RegionFrames[],
  minTurn: number,
  knownNames: ReadonlyArray<string | undefined>,
): SpeakerTurn[] {
  const turns: Array<{ start: number; end: number; label: number }> = [];
  for (const { region, frames, labels } of blocks) {
    const regionTurns: Array<{ start: number; end: number; label: number }> = [];
    let runStart = 0;
    for (let f = 1; f <= frames; f++) {
      if (f < frames && labels[f] === labels[runStart]) continue;
      const start = runStart === 0 ? region.start : region.start + (runStart + 1.25) * FRAME_SHIFT_SECONDS;
      const end = f === frames ? region.end : region.start + (f + 1.25) * FRAME_SHIFT_SECONDS;
      regionTurns.push({ start, end, label: labels[runStart] as number });
      runStart = f;
    }
    for (let changed = true; changed && regionTurns.length > 1; ) {
      changed = false;
      let shortest = -1;
      for (let i = 0; i < regionTurns.length; i++) {
        const t = regionTurns[i] as { start: number; end: number };
        if (t.end - t.start < minTurn && (shortest < 0 || t.end - t.start < durationOf(regionTurns[shortest])))
          shortest = i;
      }
      if (shortest < 0) break;
      const before = regionTurns[shortest - 1];
      const after = regionTurns[shortest + 1];
      const into = !after || (before && durationOf(before) >= durationOf(after)) ? (before as typeof after) : after;
      const short = regionTurns[shortest] as { start: number; end: number; label: number };
      if (!into) break;
      into.start = Math.min(into.start, short.start);
      into.end = Math.max(into.end, short.end);
      regionTurns.splice(shortest, 1);
      // Neighbours that now share a label become one turn.
      for (let i = regionTurns.length - 1; i > 0; i--) {
        const a = regionTurns[i - 1] as { end: number; label: number };
        const b = regionTurns[i] as { end: number; label: number };
        if (a.label === b.label) {
          a.end = b.end;
          regionTurns.splice(i, 1);
        }
      }
      changed = true;
    }
    turns.push(...regionTurns);
  }
  const nameOf = speakerNamer(knownNames);
  return turns.map(({ start, end, label }) => ({ start: round(start), end: round(end), speaker: nameOf(label) }));
}

const durationOf = (turn: { start: number; end: number } | undefined) => (turn ? turn.end - turn.start : 0);
const round = (seconds: number) => Math.round(seconds * 1000) / 1000;
