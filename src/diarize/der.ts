/**
 * Diarization error rate, scored as NIST md-eval and pyannote.metrics do.
 *
 * The timeline is cut at every turn boundary into elementary segments. In a segment of duration d with n_ref
 * reference and n_hyp hypothesis speakers:
 * - missed speech is max(0, n_ref - n_hyp) * d,
 * - false alarm is max(0, n_hyp - n_ref) * d,
 * - confusion is (min(n_ref, n_hyp) - n_correct) * d, where n_correct counts the hypothesis speakers whose label
 *   maps to one of the segment's reference speakers,
 * - the scored total is n_ref * d (overlapped reference speech counts once per speaker).
 * The label mapping is the one-to-one mapping that maximises the total time each hypothesis label overlaps its
 * reference label (the Hungarian algorithm), so label names never matter.
 *
 * The collar is md-eval's `-c`: `collar` seconds on each side of every reference boundary are not scored.
 * pyannote.metrics' `collar` is the whole width (half on each side), so its `collar=0.5` is `collar: 0.25` here.
 */
import { InvalidOptionValueError } from '../errors.js';
import { booleanOption, numberOption, objectOption, rejectUnknownKeys } from '../util/validate.js';
import { type SpeakerTurn, validateTurns } from './turn.js';

/** Options of {@link scoreDiarization}. */
export interface DiarizationScoreOptions {
  /** Seconds not scored on each side of every reference turn boundary. Default 0.25 (the NIST RT setting). */
  collar?: number;
  /** Leave out the time where two or more reference speakers talk at once. Default false. */
  skipOverlap?: boolean;
}

/** What {@link scoreDiarization} found. Durations are seconds. */
export interface DiarizationScore {
  /** (missed + falseAlarm + confusion) / total; 0 when nothing was to be scored and nothing was said, 1 when
   * there is no scored reference speech but the hypothesis has scored speech (as pyannote.metrics does). */
  der: number;
  missed: number;
  falseAlarm: number;
  confusion: number;
  /** Scored reference speech, counted per speaker. */
  total: number;
  /** Hypothesis label to the reference label it was mapped to; labels with no scored overlap under the optimal
   * mapping are absent. */
  mapping: Record<string, string>;
}

const KNOWN_OPTIONS = ['collar', 'skipOverlap'] as const;

/** Turns, or what `parseRttm` returns for a document of one file: `scoreDiarization` takes either. */
export type SpeakerTurns = SpeakerTurn[] | ReadonlyMap<string, SpeakerTurn[]>;

/** The turns of `value`: itself, or the one file of a parsed RTTM document (a typed error names the files). */
function oneFile(param: string, value: unknown): unknown {
  if (!(value instanceof Map)) return value;
  // A document with no SPEAKER record (a hypothesis with no speech) is no turns.
  if (value.size === 0) return [];
  if (value.size === 1) return [...value.values()][0];
  const ids = [...value.keys()].slice(0, 5).join(', ');
  throw new InvalidOptionValueError(
    param,
    `turns, or a parsed RTTM document of one file (this one has ${value.size}${ids ? `: ${ids}` : ''}; pass .get(fileId))`,
    `Map(${value.size})`,
  );
}

/**
 * Scores a hypothesis diarization against a reference. Turns of the same speaker that overlap or touch are merged
 * first; zero-length turns count for nothing.
 * @throws InvalidOptionTypeError / InvalidOptionValueError for turns without finite times, with start > end or a
 * negative start, without a speaker label, and for unknown or out-of-range options.
 */
export function scoreDiarization(
  reference: SpeakerTurns,
  hypothesis: SpeakerTurns,
  options?: DiarizationScoreOptions,
): DiarizationScore {
  const ref = byLabel(validateTurns('reference', oneFile('reference', reference)));
  const hyp = byLabel(validateTurns('hypothesis', oneFile('hypothesis', hypothesis)));
  const opts = objectOption('options', options);
  rejectUnknownKeys('options', opts, KNOWN_OPTIONS);
  const collar = numberOption('options.collar', opts.collar, 0, Number.POSITIVE_INFINITY) ?? 0.25;
  if (!Number.isFinite(collar)) throw new InvalidOptionValueError('options.collar', 'a finite number', collar);
  const skipOverlap = booleanOption('options.skipOverlap', opts.skipOverlap) ?? false;

  const unscored =
    collar > 0 ? mergeIntervals(ref.turns.flatMap(({ start, end }) => collarsOf(start, end, collar))) : [];
  const segments = elementarySegments(ref, hyp, unscored);

  let missed = 0;
  let falseAlarm = 0;
  let total = 0;
  let matchable = 0;
  const overlap = ref.labels.map(() => new Float64Array(hyp.labels.length));
  for (const { duration, refs, hyps } of segments) {
    if (skipOverlap && refs.length > 1) continue;
    total += refs.length * duration;
    missed += Math.max(0, refs.length - hyps.length) * duration;
    falseAlarm += Math.max(0, hyps.length - refs.length) * duration;
    matchable += Math.min(refs.length, hyps.length) * duration;
    for (const r of refs) {
      const row = overlap[r] as Float64Array;
      for (const h of hyps) row[h] = (row[h] as number) + duration;
    }
  }

  const assignment = maximumWeightAssignment(overlap.map((row) => Array.from(row)));
  const mapping: Record<string, string> = {};
  let matched = 0;
  assignment.forEach((h, r) => {
    const weight = h < 0 ? 0 : ((overlap[r] as Float64Array)[h] as number);
    if (weight <= 0) return;
    matched += weight;
    mapping[hyp.labels[h] as string] = ref.labels[r] as string;
  });
  // Summed over segments, n_correct * d is the overlap of the mapped pairs, so confusion needs no second pass.
  const confusion = Math.max(0, matchable - matched);
  const errors = missed + falseAlarm + confusion;
  const der = total > 0 ? errors / total : errors > 0 ? 1 : 0;
  return { der, missed, falseAlarm, confusion, total, mapping };
}

/**
 * Solves the assignment problem: given non-negative `weights[row][column]` (a missing cell weighs 0), pairs rows
 * with columns one-to-one so that the sum of the paired weights is as large as possible (Hungarian algorithm,
 * O(n^3)). Returns, for each row, its column, or -1 for the rows left over when there are more rows than columns.
 * Every row is paired when there are enough columns, so a pair may weigh 0: callers that care drop those.
 */
export function maximumWeightAssignment(weights: readonly (readonly number[])[]): number[] {
  const rows = weights.length;
  const columns = rows === 0 ? 0 : Math.max(...weights.map((row) => row.length));
  if (rows === 0 || columns === 0) return new Array<number>(rows).fill(-1);
  const at = (r: number, c: number): number => weights[r]?.[c] ?? 0;
  // The solver below wants no more rows than columns; solve the transpose otherwise.
  if (rows > columns) {
    const byColumn = minimumCostAssignment(columns, rows, (c, r) => -at(r, c));
    const result = new Array<number>(rows).fill(-1);
    byColumn.forEach((r, c) => {
      result[r] = c;
    });
    return result;
  }
  return minimumCostAssignment(rows, columns, (r, c) => -at(r, c));
}

/**
 * Kuhn-Munkres with potentials for an n x m cost matrix, n <= m: every row gets a distinct column, total cost
 * minimal. Indices inside are 1-based, 0 standing for the virtual start column.
 */
function minimumCostAssignment(n: number, m: number, cost: (row: number, column: number) => number): number[] {
  const u = new Float64Array(n + 1);
  const v = new Float64Array(m + 1);
  const rowOf = new Int32Array(m + 1); // rowOf[j]: the row holding column j, 0 if none
  const way = new Int32Array(m + 1);
  for (let i = 1; i <= n; i++) {
    rowOf[0] = i;
    let j0 = 0;
    const minv = new Float64Array(m + 1).fill(Number.POSITIVE_INFINITY);
    const used = new Uint8Array(m + 1);
    do {
      used[j0] = 1;
      const i0 = rowOf[j0] as number;
      let delta = Number.POSITIVE_INFINITY;
      let j1 = 0;
      for (let j = 1; j <= m; j++) {
        if (used[j]) continue;
        const reduced = cost(i0 - 1, j - 1) - (u[i0] as number) - (v[j] as number);
        if (reduced < (minv[j] as number)) {
          minv[j] = reduced;
          way[j] = j0;
        }
        if ((minv[j] as number) < delta) {
          delta = minv[j] as number;
          j1 = j;
        }
      }
      for (let j = 0; j <= m; j++) {
        if (used[j]) {
          const row = rowOf[j] as number;
          u[row] = (u[row] as number) + delta;
          v[j] = (v[j] as number) - delta;
        } else {
          minv[j] = (minv[j] as number) - delta;
        }
      }
      j0 = j1;
    } while (rowOf[j0] !== 0);
    // Flip the augmenting path back to the start.
    do {
      const j1 = way[j0] as number;
      rowOf[j0] = rowOf[j1] as number;
      j0 = j1;
    } while (j0 !== 0);
  }
  const result = new Array<number>(n).fill(-1);
  for (let j = 1; j <= m; j++) {
    const row = rowOf[j] as number;
    if (row > 0) result[row - 1] = j - 1;
  }
  return result;
}

interface Labelled {
  /** Distinct labels, in order of first appearance. */
  labels: string[];
  /** Merged turns, label replaced by its index. */
  turns: Array<{ start: number; end: number; label: number }>;
}

/** Indexes labels and merges each label's overlapping or touching turns; drops zero-length turns. */
function byLabel(turns: SpeakerTurn[]): Labelled {
  const labels: string[] = [];
  const index = new Map<string, number>();
  const perLabel: Array<Array<{ start: number; end: number }>> = [];
  for (const { start, end, speaker } of turns) {
    let label = index.get(speaker);
    if (label === undefined) {
      label = labels.length;
      index.set(speaker, label);
      labels.push(speaker);
      perLabel.push([]);
    }
    if (end > start) perLabel[label]?.push({ start, end });
  }
  const merged = perLabel.flatMap((intervals, label) => mergeIntervals(intervals).map((t) => ({ ...t, label })));
  return { labels, turns: merged };
}

function collarsOf(start: number, end: number, collar: number): Array<{ start: number; end: number }> {
  return [
    { start: start - collar, end: start + collar },
    { start: end - collar, end: end + collar },
  ];
}

/** Sorted union of intervals; intervals that overlap or touch become one. */
function mergeIntervals(intervals: Array<{ start: number; end: number }>): Array<{ start: number; end: number }> {
  const sorted = [...intervals].sort((a, b) => a.start - b.start);
  const merged: Array<{ start: number; end: number }> = [];
  for (const { start, end } of sorted) {
    const last = merged[merged.length - 1];
    if (last !== undefined && start <= last.end) last.end = Math.max(last.end, end);
    else merged.push({ start, end });
  }
  return merged;
}

interface Segment {
  duration: number;
  /** Reference label indices speaking throughout the segment. */
  refs: number[];
  /** Hypothesis label indices speaking throughout the segment. */
  hyps: number[];
}

/**
 * Cuts the timeline at every turn and collar boundary and lists, for each piece outside the collars where anyone
 * speaks, who speaks in the reference and in the hypothesis.
 */
function elementarySegments(ref: Labelled, hyp: Labelled, unscored: Array<{ start: number; end: number }>): Segment[] {
  // Events at one instant: ends before starts, so that touching turns never seem to overlap.
  const events: Array<{ time: number; delta: 1 | -1; side: 0 | 1; label: number }> = [];
  for (const [side, { turns }] of [ref, hyp].entries()) {
    for (const { start, end, label } of turns) {
      events.push({ time: start, delta: 1, side: side as 0 | 1, label });
      events.push({ time: end, delta: -1, side: side as 0 | 1, label });
    }
  }
  events.sort((a, b) => a.time - b.time || a.delta - b.delta);
  const times = [...new Set([...events.map((e) => e.time), ...unscored.flatMap((c) => [c.start, c.end])])].sort(
    (a, b) => a - b,
  );
  const active = [new Set<number>(), new Set<number>()] as const;
  const segments: Segment[] = [];
  let next = 0;
  let collar = 0;
  for (let k = 0; k + 1 < times.length; k++) {
    const time = times[k] as number;
    for (; next < events.length && (events[next]?.time as number) <= time; next++) {
      const event = events[next] as (typeof events)[number];
      if (event.delta > 0) active[event.side].add(event.label);
      else active[event.side].delete(event.label);
    }
    const end = times[k + 1] as number;
    if (active[0].size === 0 && active[1].size === 0) continue;
    // Collar intervals are sorted and disjoint, and their bounds are cut points: a piece is inside or outside.
    while (collar < unscored.length && (unscored[collar]?.end as number) <= time) collar++;
    const inCollar = collar < unscored.length && (unscored[collar]?.start as number) <= time;
    if (inCollar) continue;
    segments.push({ duration: end - time, refs: [...active[0]], hyps: [...active[1]] });
  }
  return segments;
}
