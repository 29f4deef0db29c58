// From speaker vectors to speakers, for both pipelines (windows over VAD speech, and the segmentation model's local
// speakers): agglomerative clustering with an automatic count, the small-speaker rule, refinement and merging of
// close centroids; then names (known voices, else `speaker_N` by first appearance).

import { agglomerate, centroids, dot, MAX_CLUSTERED_ITEMS, nearestCentroid } from './clustering.js';
import type { DiarizeSettings } from './types.js';

/** A known speaker's voice as one unit embedding (the mean over its clip's windows). */
export interface KnownSpeakerVector {
  name: string;
  vector: Float32Array;
}

export interface SpeakerClusterOptions
  extends Pick<
    DiarizeSettings,
    'minSpeakers' | 'maxSpeakers' | 'numSpeakers' | 'minSpeakerSeconds' | 'shortSpeakerSeconds' | 'refine'
  > {
  /** Clustering threshold on cosine distance (the method's default already chosen). */
  threshold: number;
  /** After refinement, speakers whose centroids are closer than this (cosine distance) become one; 0: none. */
  mergeDistance: number;
  /** A speaker under minSpeakerSeconds farther than this from all others (cosine distance) stays; 2: none. */
  shortSpeakerDistance: number;
}

// Centroid refinement passes after clustering (k-means steps from the agglomerative start).
const REFINE_PASSES = 2;

/**
 * Clusters unit vectors, each standing for `seconds[i]` of speech: at most MAX_CLUSTERED_ITEMS of them (evenly
 * spaced) agglomeratively, then speakers with too little speech join their nearest neighbour, every vector takes its
 * nearest centroid (a few k-means steps when `refine`), and centroids closer than `mergeDistance` merge.
 * @returns a label per vector, 0.. by first appearance.
 */
export function clusterSpeakers(
  vectors: readonly Float32Array[],
  seconds: Float32Array,
  options: SpeakerClusterOptions,
): Int32Array {
  const minClusters = Math.min(options.minSpeakers, vectors.length);
  const numClusters = options.numSpeakers === undefined ? undefined : Math.min(options.numSpeakers, vectors.length);
  const clusterOptions = { threshold: options.threshold, minClusters, maxClusters: options.maxSpeakers, numClusters };
  const step = Math.max(1, vectors.length / MAX_CLUSTERED_ITEMS);
  const picked =
    vectors.length <= MAX_CLUSTERED_ITEMS
      ? vectors.map((_, i) => i)
      : Array.from({ length: MAX_CLUSTERED_ITEMS }, (_, i) => Math.floor(i * step));
  const sample = picked.map((i) => vectors[i] as Float32Array);
  // Each sampled vector stands for `step` vectors' speech.
  const sampleSeconds = Float32Array.from(picked, (i) => (seconds[i] as number) * step);
  let labels = agglomerate(sample, clusterOptions);
  let centers = centroids(sample, labels, countOf(labels));
  // Speakers under minSpeakerSeconds join their nearest neighbour, smallest first, unless one is a voice of its own:
  // enough speech (shortSpeakerSeconds) and far from every other speaker (shortSpeakerDistance). Kept clusters are
  // marked by their centroid, which later removals leave unchanged (they only move other clusters' members).
  const kept = new Set<Float32Array>();
  while (numClusters === undefined && centers.length > Math.max(1, minClusters)) {
    const speech = new Float64Array(centers.length);
    labels.forEach((label, i) => {
      speech[label] = (speech[label] as number) + (sampleSeconds[i] as number);
    });
    let smallest = -1;
    for (let c = 0; c < centers.length; c++) {
      if (kept.has(centers[c] as Float32Array)) continue;
      if (smallest < 0 || (speech[c] as number) < (speech[smallest] as number)) smallest = c;
    }
    if (smallest < 0) break;
    const total = speech[smallest] as number;
    if (total >= options.minSpeakerSeconds) break;
    const center = centers[smallest] as Float32Array;
    if (total >= options.shortSpeakerSeconds && farFromAll(center, centers, options.shortSpeakerDistance)) {
      kept.add(center);
      continue;
    }
    centers = centers.filter((_, c) => c !== smallest);
    labels = Int32Array.from(sample, (vector) => nearestCentroid(vector, centers));
    const moved = centroids(sample, labels, centers.length);
    // A kept cluster may gain members (vectors of the removed one): it stays kept under its new centroid.
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
export function countOf(labels: Int32Array): number {
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

/**
 * The name of each speaker (by label) that matches a known voice: pairs within `threshold` (cosine distance, the
 * distance below which clustering would have merged them) are taken closest first, each speaker and each name once.
 */
export function matchKnownSpeakers(
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

/**
 * Names labels as they first appear (call `nameOf(label)` in time order): a known speaker's name where it matched,
 * else `speaker_1`, `speaker_2`, ..., skipping the known names.
 */
export function speakerNamer(knownNames: ReadonlyArray<string | undefined>): (label: number) => string {
  const names = new Map<number, string>();
  const reserved = new Set(knownNames.filter((name) => name !== undefined));
  let numbered = 0;
  return (label) => {
    const given = names.get(label);
    if (given !== undefined) return given;
    let name = knownNames[label];
    if (name === undefined) {
      do name = `speaker_${++numbered}`;
      while (reserved.has(name));
    }
    names.set(label, name);
    return name;
  };
}
