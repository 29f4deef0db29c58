// Diarization of 16 kHz mono PCM given its speech regions: speaker vectors for short windows over speech (built-in
// MFCC statistics, or a speaker-embedding model), agglomerative clustering with an automatic count, per-frame labels
// refined by resegmentation (a Gaussian per speaker over the frames, smoothed over time), then turns.
// Memory is linear in the speech duration (the frames' features) plus a capped clustering matrix.

import type { SpeechRegion } from '../audio/speech-regions.js';
import { agglomerate, centroids, dot, MAX_CLUSTERED_ITEMS, nearestCentroid, normalize } from './clustering.js';
import { FeatureExtractor, FRAME_SHIFT, FRAME_SHIFT_SECONDS, SAMPLE_RATE } from './features.js';
import type { SpeakerTurn } from './turn.js';
import type { DiarizeSettings } from './types.js';

/** A window of speech handed to a speaker-embedding model: its samples' range. */
export interface EmbeddingWindow {
  startSample: number;
  endSample: number;
}

/** A known speaker's voice as one unit embedding (the mean over its clip's windows). */
export interface KnownSpeakerVector {
  name: string;
  vector: Float32Array;
}

export interface PipelineOptions extends Omit<DiarizeSettings, 'threshold' | 'mergeDistance' | 'shortSpeakerDistance'> {
  /** Clustering threshold on cosine distance (the method's default already chosen). */
  threshold: number;
  /** After refinement, speakers whose centroids are closer than this (cosine distance) become one; 0: none. */
  mergeDistance: number;
  /** A speaker under minSpeakerSeconds farther than this from all others (cosine distance) stays; 2: none. */
  shortSpeakerDistance: number;
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
// Centroid refinement passes after clustering (k-means steps from the agglomerative start).
const REFINE_PASSES = 2;

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
  const windowLabels = cluster(vectors, options);
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

/**
 * The name of each speaker (by label) that matches a known voice: pairs within `threshold` (cosine distance, the
 * distance below which clustering would have merged them) are taken closest first, each speaker and each name once.
 */
function matchKnownSpeakers(
  centers: readonly Float32Array[],
  known: readonly KnownSpeakerVector[],
  threshold: number,
): Array<string | undefined> {
  const pairs: Array<{ speaker: number; name: string; distance: number }> = [];
  centers.forEach((center, speaker) => {
    for (const { name, vector } of known) {
      // A clip whose embeddings cancel out (or a model that returned zeros) matches nobody.
      if (!vector.some((v) => v !== 0)) continue;
      const distance = 1 - dot(center, vector);
      if (distance <= threshold) pairs.push({ speaker, name, distance });
    }
  });
  pairs.sort((a, b) => a.distance - b.distance);
  const names: Array<string | undefined> = new Array(centers.length).fill(undefined);
  const taken = new Set<string>();
  for (const { speaker, name } of pairs) {
    if (names[speaker] !== undefined || taken.has(name)) continue;
    names[speaker] = name;
    taken.add(name);
  }
  return names;
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

/**
 * Clusters at most MAX_CLUSTERED_ITEMS vectors (evenly spaced) agglomeratively, drops speakers with too little
 * speech, then gives every vector its nearest centroid (a few k-means steps when `refine`).
 */
function cluster(vectors: Float32Array[], options: PipelineOptions): Int32Array {
  const minClusters = Math.min(options.minSpeakers, vectors.length);
  const numClusters = options.numSpeakers === undefined ? undefined : Math.min(options.numSpeakers, vectors.length);
  const clusterOptions = { threshold: options.threshold, minClusters, maxClusters: options.maxSpeakers, numClusters };
  const step = Math.max(1, vectors.length / MAX_CLUSTERED_ITEMS);
  const sample =
    vectors.length <= MAX_CLUSTERED_ITEMS
      ? vectors
      : Array.from({ length: MAX_CLUSTERED_ITEMS }, (_, i) => vectors[Math.floor(i * step)] as Float32Array);
  let labels = agglomerate(sample, clusterOptions);
  let centers = centroids(sample, labels, countOf(labels));
  // Each sampled window stands for `step` windows, each for `hopSeconds` of new speech.
  const secondsPerItem = step * options.hopSeconds;
  // Speakers under minSpeakerSeconds join their nearest neighbour, smallest first, unless one is a voice of its own:
  // enough speech (shortSpeakerSeconds) and far from every other speaker (shortSpeakerDistance). Kept clusters are
  // marked by their centroid, which later removals leave unchanged (they only move other clusters' members).
  const kept = new Set<Float32Array>();
  while (numClusters === undefined && centers.length > Math.max(1, minClusters)) {
    const counts = new Int32Array(centers.length);
    for (const label of labels) counts[label] = (counts[label] as number) + 1;
    let smallest = -1;
    for (let c = 0; c < centers.length; c++) {
      if (kept.has(centers[c] as Float32Array)) continue;
      if (smallest < 0 || (counts[c] as number) < (counts[smallest] as number)) smallest = c;
    }
    if (smallest < 0) break;
    const seconds = (counts[smallest] as number) * secondsPerItem;
    if (seconds >= options.minSpeakerSeconds) break;
    const center = centers[smallest] as Float32Array;
    if (seconds >= options.shortSpeakerSeconds && farFromAll(center, centers, options.shortSpeakerDistance)) {
      kept.add(center);
      continue;
    }
    centers = centers.filter((_, c) => c !== smallest);
    labels = Int32Array.from(sample, (vector) => nearestCentroid(vector, centers));
    const moved = centroids(sample, labels, centers.length);
    // A kept cluster may gain members (windows of the removed one): it stays kept under its new centroid.
    centers = moved.map((next, c) => {
      if (kept.delete(centers[c] as Float32Array)) kept.add(next);
      return next;
    });
  }
  let all = Int32Array.from(vectors, (vector) => nearestCentroid(vector, centers));
  for (let pass = 0; options.refine && pass < REFINE_PASSES && centers.length > 1; pass++) {
    centers = centroids(vectors, all, centers.length);
    all = Int32Array.from(vectors, (vector) => nearestCentroid(vector, centers));
  }
  // Clusters refinement left empty do not count as speakers (or as merge partners).
  const used = new Set(all);
  if (used.size < centers.length) {
    centers = centers.filter((_, c) => used.has(c));
    all = Int32Array.from(vectors, (vector) => nearestCentroid(vector, centers));
  }
  while (options.numSpeakers === undefined && options.mergeDistance > 0 && centers.length > Math.max(1, minClusters)) {
    let pair: [number, number] | undefined;
    let closest = options.mergeDistance;
    for (let a = 0; a < centers.length; a++) {
      for (let b = a + 1; b < centers.length; b++) {
        const distance = 1 - dot(centers[a] as Float32Array, centers[b] as Float32Array);
        if (distance < closest) {
          closest = distance;
          pair = [a, b];
        }
      }
    }
    if (!pair) break;
    const [keep, drop] = pair;
    all = all.map((label) => (label === drop ? keep : label));
    centers = centroids(vectors, all, centers.length);
    centers = centers.filter((_, c) => c !== drop);
    all = Int32Array.from(vectors, (vector) => nearestCentroid(vector, centers));
  }
  return renumber(all);
}

/** Whether every other centroid lies farther than `distance` (cosine) from `center`. */
function farFromAll(center: Float32Array, centers: readonly Float32Array[], distance: number): boolean {
  return centers.every((other) => other === center || 1 - dot(center, other) > distance);
}

/** Number of labels 0..k-1 (a loop: spreading 500,000 labels into Math.max overflows the stack). */
function countOf(labels: Int32Array): number {
  let max = -1;
  for (const label of labels) if (label > max) max = label;
  return max + 1;
}

/** Labels numbered 0.. by first appearance, with empty clusters squeezed out. */
function renumber(labels: Int32Array): Int32Array {
  const numbering = new Map<number, number>();
  return labels.map((label) => {
    if (!numbering.has(label)) numbering.set(label, numbering.size);
    return numbering.get(label) as number;
  });
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
  const names = new Map<number, string>();
  const reserved = new Set(knownNames.filter((name) => name !== undefined));
  let numbered = 0;
  const nameOf = (label: number): string => {
    const known = knownNames[label];
    if (known !== undefined) return known;
    let name: string;
    do name = `speaker_${++numbered}`;
    while (reserved.has(name));
    return name;
  };
  return turns.map(({ start, end, label }) => {
    if (!names.has(label)) names.set(label, nameOf(label));
    return { start: round(start), end: round(end), speaker: names.get(label) as string };
  });
}

const durationOf = (turn: { start: number; end: number } | undefined) => (turn ? turn.end - turn.start : 0);
const round = (seconds: number) => Math.round(seconds * 1000) / 1000;
