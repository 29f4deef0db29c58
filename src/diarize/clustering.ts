// Agglomerative clustering of speaker vectors (average linkage, cosine distance) with an automatic cluster count:
// merging stops at a distance threshold, within [minClusters, maxClusters], or at exactly numClusters. Each step
// only rescans the rows whose nearest neighbour was merged, so it runs in about O(n²) time and n² memory; callers
// cap n (see MAX_CLUSTERED_ITEMS) and assign the rest to the nearest centroid.

/** Most vectors clustered directly (a 1,500² float32 distance matrix is 9 MB). */
export const MAX_CLUSTERED_ITEMS = 1500;

export interface ClusterOptions {
  /** Stop merging when the closest clusters are farther apart than this (cosine distance, 0–2). */
  threshold: number;
  minClusters: number;
  maxClusters: number;
  /** Exactly this many clusters (overrides the threshold and the bounds). */
  numClusters?: number | undefined;
}

/** Scales a vector to unit length (a zero vector stays zero). */
export function normalize(vector: Float32Array): Float32Array {
  let norm = 0;
  for (const v of vector) norm += v * v;
  norm = Math.sqrt(norm);
  if (norm > 0) for (let i = 0; i < vector.length; i++) vector[i] = (vector[i] as number) / norm;
  return vector;
}

/** Cosine similarity of unit vectors. */
export function dot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += (a[i] as number) * (b[i] as number);
  return sum;
}

/**
 * Clusters unit vectors. Returns a cluster index per vector, 0..k-1, numbered by first appearance.
 */
export function agglomerate(vectors: readonly Float32Array[], options: ClusterOptions): Int32Array {
  const n = vectors.length;
  const labels = new Int32Array(n);
  if (n <= 1) return labels;
  const distance = new Float32Array(n * n);
  for (let i = 0; i < n; i++) {
    for (let j = i + 1; j < n; j++) {
      const d = 1 - dot(vectors[i] as Float32Array, vectors[j] as Float32Array);
      distance[i * n + j] = d;
      distance[j * n + i] = d;
    }
  }
  const size = new Int32Array(n).fill(1);
  const active = new Uint8Array(n).fill(1);
  const parent = Int32Array.from({ length: n }, (_, i) => i);
  const nearest = new Int32Array(n);
  const nearestDistance = new Float64Array(n);
  const findNearest = (i: number) => {
    let best = -1;
    let bestDistance = Number.POSITIVE_INFINITY;
    for (let j = 0; j < n; j++) {
      if (j === i || !active[j]) continue;
      const d = distance[i * n + j] as number;
      if (d < bestDistance) {
        bestDistance = d;
        best = j;
      }
    }
    nearest[i] = best;
    nearestDistance[i] = bestDistance;
  };
  for (let i = 0; i < n; i++) findNearest(i);
  const target = options.numClusters;
  const minimum = target ?? options.minClusters;
  const maximum = target ?? options.maxClusters;
  for (let clusters = n; clusters > Math.max(1, minimum); clusters--) {
    let a = -1;
    for (let i = 0; i < n; i++) {
      if (active[i] && (a < 0 || (nearestDistance[i] as number) < (nearestDistance[a] as number))) a = i;
    }
    const closest = nearestDistance[a] as number;
    if (target === undefined && clusters <= maximum && closest > options.threshold) break;
    const b = nearest[a] as number;
    // Average linkage (Lance-Williams): the merged cluster's distance is the size-weighted mean.
    const sa = size[a] as number;
    const sb = size[b] as number;
    for (let k = 0; k < n; k++) {
      if (!active[k] || k === a || k === b) continue;
      const d = ((distance[a * n + k] as number) * sa + (distance[b * n + k] as number) * sb) / (sa + sb);
      distance[a * n + k] = d;
      distance[k * n + a] = d;
    }
    size[a] = sa + sb;
    active[b] = 0;
    parent[b] = a;
    for (let k = 0; k < n; k++) {
      if (!active[k]) continue;
      if (k === a || nearest[k] === a || nearest[k] === b) findNearest(k);
      else if ((distance[k * n + a] as number) < (nearestDistance[k] as number)) {
        nearest[k] = a;
        nearestDistance[k] = distance[k * n + a] as number;
      }
    }
  }
  const root = (i: number): number => {
    let r = i;
    while (parent[r] !== r) r = parent[r] as number;
    return r;
  };
  const numbering = new Map<number, number>();
  for (let i = 0; i < n; i++) {
    const r = root(i);
    if (!numbering.has(r)) numbering.set(r, numbering.size);
    labels[i] = numbering.get(r) as number;
  }
  return labels;
}

/** Mean unit vector of each cluster. */
export function centroids(vectors: readonly Float32Array[], labels: Int32Array, count: number): Float32Array[] {
  const dimension = vectors[0]?.length ?? 0;
  const sums = Array.from({ length: count }, () => new Float32Array(dimension));
  vectors.forEach((vector, i) => {
    const sum = sums[labels[i] as number] as Float32Array;
    for (let d = 0; d < dimension; d++) sum[d] = (sum[d] as number) + (vector[d] as number);
  });
  return sums.map(normalize);
}

/** Index of the centroid closest to a unit vector (cosine). */
export function nearestCentroid(vector: Float32Array, centers: readonly Float32Array[]): number {
  let best = 0;
  let bestSimilarity = Number.NEGATIVE_INFINITY;
  centers.forEach((center, i) => {
    const similarity = dot(vector, center);
    if (similarity > bestSimilarity) {
      bestSimilarity = similarity;
      best = i;
    }
  });
  return best;
}
