// Diarization with a local speaker segmentation model (pyannote's segmentation-3.0), after pyannote.audio's
// SpeakerDiarization pipeline:
//  1. 10 s chunks every `segmentationStepSeconds` go through the segmentation model: for each of its frames (16.9 ms
//     apart), which of up to three local speakers talk (two at once in overlapped speech).
//  2. Each local speaker of each chunk is embedded over the frames where it talks alone (all its frames when that is
//     too short), at most `segmentationEmbedSeconds` of them from the middle: one vector per (chunk, local speaker),
//     or per stretch of it where its talk pauses `segmentationSplitPauseSeconds` (the model often gives a short turn
//     of one voice the local speaker of the voice beside it; each stretch then finds its own speaker).
//     Every moment is in 10 s / step chunks, so the cap is what keeps the encoder's cost near the audio's length (a
//     split local speaker is capped per stretch: CAM++ on a 10-minute file costs about 10 % more, BENCHMARKS.md).
//  3. The vectors are clustered into global speakers (speaker-clusters.ts: the same rules as the window pipeline);
//     within a chunk two local speakers never become one global speaker (stretches of one local speaker may).
//  4. Reconstruction on the global frame grid: each global speaker's activity averaged over the chunks covering a
//     frame, and the number of speakers per frame (the chunks' mean count, rounded) picks the most active ones, so
//     overlapped speech gets two speakers. Runs of frames become turns.
// Chunks with no speech in the VAD's regions are not run (they count as silence). Memory: a byte per frame and local
// speaker of each chunk (two where a local speaker is split), and the global grid (a float per frame and speaker),
// besides the samples.

import type { SpeechRegion } from '../audio/speech-regions.js';
import { centroids, dot } from './clustering.js';
import { SAMPLE_RATE } from './features.js';
import type { EmbeddingWindow } from './pipeline.js';
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

/** The segmentation model's chunk: 10 s at 16 kHz, what segmentation-3.0 was trained on. */
export const CHUNK_SAMPLES = 160_000;
/** Samples between two of its frames (SincNet's stride 10 times three max-pools of 3). */
export const FRAME_STEP = 270;
/** Samples one frame sees (its receptive field); a frame's middle is FRAME_STEP * f + FRAME_SPAN / 2. */
export const FRAME_SPAN = 991;
/** Frames of one chunk: the whole receptive fields that fit (589). */
export const CHUNK_FRAMES = Math.floor((CHUNK_SAMPLES - FRAME_SPAN) / FRAME_STEP) + 1;
/** Local speakers per chunk (segmentation-3.0's powerset: at most 3 per chunk, 2 per frame). */
export const LOCAL_SPEAKERS = 3;
/**
 * The powerset classes, in the model's output order: which local speakers each one means (pyannote's Powerset with
 * 3 classes and at most 2 per frame: none, each alone, then the pairs).
 */
export const POWERSET: readonly (readonly number[])[] = [[], [0], [1], [2], [0, 1], [0, 2], [1, 2]];
/** A local speaker is embedded over at least this much speech; with less it is left out of the clustering. */
export const MIN_EMBED_SECONDS = 0.5;
/** Embedded speech is cut to whole multiples of this many frames (15 frames: 0.25 s; MIN_EMBED_SECONDS is 30). */
const EMBED_BUCKET_FRAMES = 15;
/** Stretches one local speaker of one chunk is split into at most (past it, the closest stretches join). */
export const MAX_STRETCHES = 8;
/** Index of a (chunk, local speaker, stretch) in the mapping from local to global speakers. */
const slot = (chunk: number, local: number, stretch: number) =>
  (chunk * LOCAL_SPEAKERS + local) * MAX_STRETCHES + stretch;

/**
 * Runs the segmentation model on `batch` chunks of CHUNK_SAMPLES samples each; returns the log-probabilities of the
 * POWERSET classes, [batch, frames, POWERSET.length] flattened.
 */
export type SegmentationRunner = (chunks: Float32Array, batch: number) => Promise<Float32Array>;

export interface SegmentationPipelineOptions
  extends Omit<
      DiarizeSettings,
      'threshold' | 'mergeDistance' | 'shortSpeakerDistance' | 'segmentationSplitPauseSeconds'
    >,
    SpeakerClusterOptions {
  /** The pause (seconds) that splits a local speaker's talk into stretches embedded on their own; 0: none. */
  segmentationSplitPauseSeconds: number;
  segment: SegmentationRunner;
  /** Chunks per segmentation call. */
  segmentationBatch: number;
  /** Unit vectors of windows of `samples`, in order (see EmbeddingWindow). */
  embed: (samples: Float32Array, windows: EmbeddingWindow[]) => Promise<Float32Array[]>;
  knownSpeakers?: KnownSpeakerVector[];
  /** Awaited between stages: lets a worker take a cancel message; throws to stop. */
  checkpoint?: () => Promise<void>;
}

interface Chunk {
  /** First sample. */
  start: number;
  /** Frames x LOCAL_SPEAKERS activity (1: talking), or undefined for a chunk not run (no speech). */
  activity: Uint8Array | undefined;
  /** Frames x LOCAL_SPEAKERS: which embedded stretch of its local speaker a talking frame belongs to (0: the only). */
  stretch?: Uint8Array;
}

/** One local speaker of one chunk, embedded. */
export interface LocalSpeaker {
  chunk: number;
  local: number;
  /** Its stretch (0 for a local speaker embedded whole). */
  stretch?: number;
  vector: Float32Array;
  /** Seconds of the chunk's speech it stands for. */
  seconds: number;
}

export async function diarizeWithSegmentation(
  samples: Float32Array,
  regions: readonly SpeechRegion[],
  options: SegmentationPipelineOptions,
): Promise<SpeakerTurn[]> {
  const step = chunkStep(options.segmentationStepSeconds);
  const chunks = chunkStarts(samples.length, step).map((start) => ({ start, activity: undefined }) as Chunk);
  const frames = await segmentChunks(samples, chunks, regions, options);
  if (frames === 0) return [];
  const locals = await embedLocalSpeakers(samples, chunks, frames, step, options);
  if (locals.length === 0) return [];
  const vectors = locals.map((l) => l.vector);
  const labels = clusterSpeakers(
    vectors,
    Float32Array.from(locals, (l) => l.seconds),
    options,
  );
  const speakers = countOf(labels);
  const centers = centroids(vectors, labels, speakers);
  await options.checkpoint?.();
  const mapping = assignLocals(chunks.length, locals, centers);
  const known = options.knownSpeakers ?? [];
  const names = known.length > 0 ? matchKnownSpeakers(centers, known, options.threshold) : [];
  return reconstruct(samples.length, chunks, frames, mapping, speakers, names);
}

/**
 * The chunk step in samples: a whole number of frames, so every chunk's frames fall on one global grid, and at most
 * a chunk's frames, so no frame between two chunks goes uncovered.
 */
function chunkStep(seconds: number): number {
  return Math.min(CHUNK_FRAMES, Math.max(1, Math.round((seconds * SAMPLE_RATE) / FRAME_STEP))) * FRAME_STEP;
}

/** Chunk starts every `step` samples, the last one ending with the audio (short audio: one chunk, zero padded). */
export function chunkStarts(length: number, step: number): number[] {
  const starts: number[] = [];
  for (let start = 0; start === 0 || start + CHUNK_SAMPLES <= length; start += step) starts.push(start);
  const last = starts[starts.length - 1] as number;
  if (last + CHUNK_SAMPLES < length) {
    // The last chunk ends at the audio's end, on the frame grid (its end may pass the audio by less than a frame).
    starts.push(Math.ceil((length - CHUNK_SAMPLES) / FRAME_STEP) * FRAME_STEP);
  }
  return starts;
}

/** Whether any speech region overlaps [start, end) samples. */
function hasSpeech(regions: readonly SpeechRegion[], start: number, end: number): boolean {
  const from = start / SAMPLE_RATE;
  const to = end / SAMPLE_RATE;
  return regions.some((r) => r.end > from && r.start < to);
}

/**
 * Runs the model over the chunks that hold speech, in batches, and keeps each one's hard activity (the most likely
 * powerset class per frame, as local speakers). Returns the frames per chunk (0 when no chunk had speech).
 */
async function segmentChunks(
  samples: Float32Array,
  chunks: Chunk[],
  regions: readonly SpeechRegion[],
  options: SegmentationPipelineOptions,
): Promise<number> {
  const wanted = chunks.filter((c) => hasSpeech(regions, c.start, c.start + CHUNK_SAMPLES));
  const batchSize = Math.max(1, options.segmentationBatch);
  let frames = 0;
  for (let first = 0; first < wanted.length; first += batchSize) {
    const batch = wanted.slice(first, first + batchSize);
    const input = new Float32Array(batch.length * CHUNK_SAMPLES);
    batch.forEach((chunk, i) => {
      input.set(
        samples.subarray(chunk.start, Math.min(samples.length, chunk.start + CHUNK_SAMPLES)),
        i * CHUNK_SAMPLES,
      );
    });
    const output = await options.segment(input, batch.length);
    const classes = POWERSET.length;
    frames = CHUNK_FRAMES;
    // The frame grid (FRAME_STEP apart) is what turns frames into times: any other count would misplace every turn.
    if (output.length !== batch.length * frames * classes) {
      throw new Error(
        `the segmentation model answered ${output.length} values for ${batch.length} chunks; ${batch.length} x ${frames} frames x ${classes} classes expected`,
      );
    }
    batch.forEach((chunk, i) => {
      const activity = new Uint8Array(frames * LOCAL_SPEAKERS);
      for (let f = 0; f < frames; f++) {
        const at = (i * frames + f) * classes;
        let best = 0;
        for (let k = 1; k < classes; k++) if ((output[at + k] as number) > (output[at + best] as number)) best = k;
        for (const speaker of POWERSET[best] as readonly number[]) activity[f * LOCAL_SPEAKERS + speaker] = 1;
      }
      chunk.activity = activity;
    });
    await options.checkpoint?.();
  }
  return frames;
}

/**
 * One vector per local speaker that talks long enough: embedded over the frames where it talks alone, or over all
 * its frames when those are too few. Frame f's own samples are the FRAME_STEP around its middle. The pieces are laid
 * end to end in one buffer per batch of chunks, one window each.
 */
async function embedLocalSpeakers(
  samples: Float32Array,
  chunks: readonly Chunk[],
  frames: number,
  step: number,
  options: SegmentationPipelineOptions,
): Promise<LocalSpeaker[]> {
  const locals: LocalSpeaker[] = [];
  const minFrames = Math.ceil((MIN_EMBED_SECONDS * SAMPLE_RATE) / FRAME_STEP);
  const capFrames = Math.round((options.segmentationEmbedSeconds * SAMPLE_RATE) / FRAME_STEP);
  const maxFrames = Math.max(minFrames, capFrames - (capFrames % EMBED_BUCKET_FRAMES));
  // How many chunks see each moment: a local speaker's seconds are shared among them.
  const coverage = CHUNK_SAMPLES / step;
  const ownStart = Math.round(FRAME_SPAN / 2 - FRAME_STEP / 2);
  const splitFrames = Math.round((options.segmentationSplitPauseSeconds * SAMPLE_RATE) / FRAME_STEP);
  const EMBED_BATCH_CHUNKS = 16;
  for (let first = 0; first < chunks.length; first += EMBED_BATCH_CHUNKS) {
    const pieces: Array<{ chunk: number; local: number; stretch: number; frames: Int32Array; seconds: number }> = [];
    for (let c = first; c < Math.min(chunks.length, first + EMBED_BATCH_CHUNKS); c++) {
      const chunk = chunks[c] as Chunk;
      const { activity } = chunk;
      if (!activity) continue;
      for (let k = 0; k < LOCAL_SPEAKERS; k++) {
        const all: number[] = [];
        for (let f = 0; f < frames; f++) if (activity[f * LOCAL_SPEAKERS + k]) all.push(f);
        if (all.length < minFrames) continue;
        const stretches = splitFrames > 0 ? stretchesOf(all, splitFrames, minFrames) : [all];
        if (stretches.length > 1) {
          chunk.stretch ??= new Uint8Array(frames * LOCAL_SPEAKERS);
          const stretchOf = chunk.stretch;
          stretches.forEach((stretch, r) => {
            for (const f of stretch) stretchOf[f * LOCAL_SPEAKERS + k] = r;
          });
        }
        stretches.forEach((stretch, r) => {
          const alone = stretch.filter((f) => {
            for (let j = 0; j < LOCAL_SPEAKERS; j++) if (j !== k && activity[f * LOCAL_SPEAKERS + j]) return false;
            return true;
          });
          // Every stretch has minFrames (stretchesOf's promise, and `all` has them when not split).
          let chosen = alone.length >= minFrames ? alone : stretch;
          // The middle of it, at most maxFrames, in whole buckets: pieces of a few lengths batch together, and the
          // encoder's memory arena serves a few shapes instead of growing with every length.
          const kept = Math.min(maxFrames, chosen.length - (chosen.length % EMBED_BUCKET_FRAMES));
          if (kept < chosen.length) {
            const from = Math.floor((chosen.length - kept) / 2);
            chosen = chosen.slice(from, from + kept);
          }
          const seconds = (stretch.length * FRAME_STEP) / SAMPLE_RATE / coverage;
          pieces.push({ chunk: c, local: k, stretch: r, frames: Int32Array.from(chosen), seconds });
        });
      }
    }
    if (pieces.length === 0) continue;
    let total = 0;
    for (const piece of pieces) total += piece.frames.length * FRAME_STEP;
    const buffer = new Float32Array(total);
    const windows: EmbeddingWindow[] = [];
    let at = 0;
    for (const piece of pieces) {
      const begin = at;
      const origin = (chunks[piece.chunk] as Chunk).start + ownStart;
      for (const f of piece.frames) {
        const from = origin + f * FRAME_STEP;
        // Frames past the audio's end (a zero-padded chunk) hold zeros, as the model saw them.
        if (from < samples.length) buffer.set(samples.subarray(from, Math.min(samples.length, from + FRAME_STEP)), at);
        at += FRAME_STEP;
      }
      windows.push({ startSample: begin, endSample: at });
    }
    const vectors = await options.embed(buffer, windows);
    pieces.forEach((piece, i) => {
      const vector = vectors[i] as Float32Array;
      if (vector.some((v) => v !== 0))
        locals.push({ chunk: piece.chunk, local: piece.local, stretch: piece.stretch, vector, seconds: piece.seconds });
    });
    await options.checkpoint?.();
  }
  return locals;
}

/**
 * A local speaker's talking frames (ascending) cut at pauses of `pause` frames or more into stretches; a stretch under
 * `minFrames` joins its nearer neighbour, so each returned one (at most MAX_STRETCHES) can be embedded.
 */
export function stretchesOf(all: readonly number[], pause: number, minFrames: number): number[][] {
  const runs: number[][] = [];
  for (const f of all) {
    const last = runs[runs.length - 1];
    if (last && f - (last[last.length - 1] as number) <= pause) last.push(f);
    else runs.push([f]);
  }
  const pauseAfter = (r: number) => ((runs[r + 1] as number[])[0] as number) - ((runs[r] as number[]).at(-1) as number);
  const join = (r: number) => {
    (runs[r] as number[]).push(...(runs[r + 1] as number[]));
    runs.splice(r + 1, 1);
  };
  // Short runs join the neighbour across the shorter pause, shortest first, until every run is long enough.
  for (;;) {
    let shortest = -1;
    for (let r = 0; r < runs.length && runs.length > 1; r++) {
      const n = (runs[r] as number[]).length;
      if (n < minFrames && (shortest < 0 || n < (runs[shortest] as number[]).length)) shortest = r;
    }
    if (shortest < 0) break;
    const before = shortest > 0 ? pauseAfter(shortest - 1) : Number.POSITIVE_INFINITY;
    const after = shortest < runs.length - 1 ? pauseAfter(shortest) : Number.POSITIVE_INFINITY;
    join(before <= after ? shortest - 1 : shortest);
  }
  // Then, past MAX_STRETCHES, the two runs with the shortest pause between them become one.
  while (runs.length > MAX_STRETCHES) {
    let at = 0;
    for (let r = 1; r < runs.length - 1; r++) if (pauseAfter(r) < pauseAfter(at)) at = r;
    join(at);
  }
  return runs;
}

/** Assignments tried per chunk at most (about a millisecond); a chunk with more is assigned greedily. */
const MAX_ASSIGNMENTS = 20_000;

/**
 * The global speaker of each (chunk, local speaker, stretch): within a chunk, distinct local speakers get distinct
 * speakers where there are enough (stretches of one local speaker may share one or not), chosen to maximize the summed
 * similarity to their centroids. When each one's nearest centroid already keeps the local speakers apart, that is the
 * answer; else every assignment is tried (up to MAX_ASSIGNMENTS), else the best pairs are taken greedily.
 * @returns mapping[slot(chunk, local, stretch)] = speaker, or -1 (not embedded: left out).
 */
export function assignLocals(
  chunkCount: number,
  locals: readonly LocalSpeaker[],
  centers: readonly Float32Array[],
): Int32Array {
  const mapping = new Int32Array(chunkCount * LOCAL_SPEAKERS * MAX_STRETCHES).fill(-1);
  const byChunk = new Map<number, LocalSpeaker[]>();
  for (const local of locals) {
    const list = byChunk.get(local.chunk) ?? [];
    list.push(local);
    byChunk.set(local.chunk, list);
  }
  for (const [chunk, list] of byChunk) {
    const choice = chooseSpeakers(
      list.map((l) => l.local),
      list.map((l) => centers.map((center) => dot(l.vector, center))),
      centers.length,
    );
    list.forEach((local, i) => {
      mapping[slot(chunk, local.local, local.stretch ?? 0)] = choice[i] as number;
    });
  }
  return mapping;
}

/**
 * For items (stretches) of local speakers `owners` with `scores[item][speaker]`: a speaker per item, items of
 * different owners never sharing one while there are enough speakers.
 */
function chooseSpeakers(owners: readonly number[], scores: readonly number[][], speakers: number): number[] {
  const nearest = scores.map((row) => {
    let best = 0;
    for (let s = 1; s < speakers; s++) if ((row[s] as number) > (row[best] as number)) best = s;
    return best;
  });
  const distinct = speakers >= new Set(owners).size;
  const clash = (choice: readonly number[]) =>
    choice.some((c, i) => choice.some((d, j) => j > i && c === d && owners[i] !== owners[j]));
  if (!distinct || !clash(nearest)) return nearest;
  if (speakers ** owners.length <= MAX_ASSIGNMENTS) {
    let best: number[] = nearest;
    let bestScore = Number.NEGATIVE_INFINITY;
    const choice: number[] = [];
    const search = (i: number, score: number) => {
      if (i === owners.length) {
        if (score > bestScore) {
          bestScore = score;
          best = [...choice];
        }
        return;
      }
      for (let s = 0; s < speakers; s++) {
        // A speaker taken by another local speaker of this chunk is not offered.
        if (choice.some((c, j) => c === s && owners[j] !== owners[i])) continue;
        choice.push(s);
        search(i + 1, score + ((scores[i] as number[])[s] as number));
        choice.pop();
      }
    };
    search(0, 0);
    return best;
  }
  // Greedy: the most similar (item, speaker) pairs first, a speaker kept by the first owner that takes it.
  const pairs = scores.flatMap((row, i) => row.map((score, s) => ({ i, s, score })));
  pairs.sort((x, y) => y.score - x.score);
  const choice = new Array<number>(owners.length).fill(-1);
  const ownerOf = new Map<number, number>();
  for (const { i, s } of pairs) {
    if (choice[i] !== -1) continue;
    const owner = ownerOf.get(s);
    if (owner !== undefined && owner !== owners[i]) continue;
    choice[i] = s;
    ownerOf.set(s, owners[i] as number);
  }
  // An item every speaker was taken from (other owners took them all): its nearest.
  return choice.map((c, i) => (c >= 0 ? c : (nearest[i] as number)));
}

/**
 * Global speaker activity on the frame grid (a frame every FRAME_STEP samples from the start), averaged over the
 * chunks covering each frame; the chunks' mean number of talking local speakers, rounded, says how many speakers a
 * frame has, and the most active ones take it. Runs become turns from the middle of their first frame to the middle
 * of the frame after their last (as pyannote binarizes).
 */
function reconstruct(
  length: number,
  chunks: readonly Chunk[],
  frames: number,
  mapping: Int32Array,
  speakers: number,
  knownNames: ReadonlyArray<string | undefined>,
): SpeakerTurn[] {
  // Speakers are bits of a 32-bit word per frame; maxSpeakers and numSpeakers are at most 32 (src/diarize/request.ts).
  if (speakers > 32) throw new Error(`${speakers} speakers: the segmentation pipeline labels at most 32`);
  const gridFrames = Math.max(1, Math.ceil(length / FRAME_STEP));
  const activity = new Float32Array(gridFrames * speakers);
  const count = new Float32Array(gridFrames);
  const coverage = new Uint16Array(gridFrames);
  const chunkSpeakers = new Float32Array(speakers);
  chunks.forEach((chunk, c) => {
    const offset = chunk.start / FRAME_STEP;
    for (let f = 0; f < frames; f++) {
      const g = offset + f;
      if (g >= gridFrames) break;
      coverage[g] = (coverage[g] as number) + 1;
      const { activity: local } = chunk;
      if (!local) continue;
      chunkSpeakers.fill(0);
      let talking = 0;
      for (let k = 0; k < LOCAL_SPEAKERS; k++) {
        if (!local[f * LOCAL_SPEAKERS + k]) continue;
        talking++;
        const s = mapping[slot(c, k, chunk.stretch?.[f * LOCAL_SPEAKERS + k] ?? 0)] as number;
        if (s >= 0) chunkSpeakers[s] = 1;
      }
      count[g] = (count[g] as number) + talking;
      for (let s = 0; s < speakers; s++)
        activity[g * speakers + s] = (activity[g * speakers + s] as number) + (chunkSpeakers[s] as number);
    }
  });
  // Per frame, the active speakers (a bit per speaker: at most 32, DiarizeSettings' bound on maxSpeakers).
  const active = new Uint32Array(gridFrames);
  const order = Array.from({ length: speakers }, (_, s) => s);
  for (let g = 0; g < gridFrames; g++) {
    const covering = coverage[g] as number;
    if (covering === 0) continue;
    // Rounded half up (pyannote rounds half to even): where 2 of 4 chunks hear a speaker, the frame keeps one.
    const wanted = Math.min(speakers, Math.round((count[g] as number) / covering));
    if (wanted === 0) continue;
    order.sort((a, b) => (activity[g * speakers + b] as number) - (activity[g * speakers + a] as number));
    let bits = 0;
    for (let i = 0; i < wanted; i++) {
      const s = order[i] as number;
      if ((activity[g * speakers + s] as number) > 0) bits |= 1 << s;
    }
    active[g] = bits;
  }
  const middle = (g: number) => Math.min(length, g * FRAME_STEP + FRAME_SPAN / 2) / SAMPLE_RATE;
  const runs: Array<{ start: number; end: number; label: number }> = [];
  for (let s = 0; s < speakers; s++) {
    const bit = 1 << s;
    for (let g = 0; g < gridFrames; ) {
      if (!((active[g] as number) & bit)) {
        g++;
        continue;
      }
      const first = g;
      while (g < gridFrames && (active[g] as number) & bit) g++;
      runs.push({ start: middle(first), end: middle(g), label: s });
    }
  }
  runs.sort((a, b) => a.start - b.start || a.label - b.label);
  const nameOf = speakerNamer(knownNames);
  return runs.map(({ start, end, label }) => ({ start: round(start), end: round(end), speaker: nameOf(label) }));
}

const round = (seconds: number) => Math.round(seconds * 1000) / 1000;
