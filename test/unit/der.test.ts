// Diarization error rate: hand-computed cases, the pyannote sample, and the Hungarian mapping against brute force.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { maximumWeightAssignment, scoreDiarization } from '../../src/diarize/der.js';
import { parseRttm } from '../../src/diarize/rttm.js';
import type { SpeakerTurn } from '../../src/diarize/turn.js';
import { InvalidOptionTypeError, InvalidOptionValueError } from '../../src/errors.js';
import { sharedAudio } from '../helpers/paths.js';

const turn = (start: number, end: number, speaker: string): SpeakerTurn => ({ start, end, speaker });
const sample = (): SpeakerTurn[] => parseRttm(readFileSync(sharedAudio('pyannote_sample.rttm'), 'utf8')).get('sample')!;
const NO_COLLAR = { collar: 0 };

describe('scoreDiarization', () => {
  it('scores a perfect hypothesis 0 whatever its labels are called', () => {
    const reference = sample();
    const renamed = reference.map((t) => ({ ...t, speaker: t.speaker === 'speaker90' ? 'SPEAKER_01' : 'SPEAKER_00' }));
    for (const options of [undefined, NO_COLLAR, { collar: 0.5, skipOverlap: true }]) {
      const score = scoreDiarization(reference, renamed, options);
      expect(score.der).toBe(0);
      expect(score.missed + score.falseAlarm + score.confusion).toBeCloseTo(0, 9);
      expect(score.mapping).toEqual({ SPEAKER_01: 'speaker90', SPEAKER_00: 'speaker91' });
    }
    expect(scoreDiarization(reference, reference, NO_COLLAR).total).toBeCloseTo(11.85 + 12.5, 9);
  });

  it("takes parseRttm's result for a document of one file, and names the files of one with several", () => {
    const document = parseRttm(readFileSync(sharedAudio('pyannote_sample.rttm'), 'utf8'));
    expect(scoreDiarization(document, sample(), NO_COLLAR).der).toBe(0);
    expect(scoreDiarization(sample(), document).der).toBe(0);
    expect(scoreDiarization(document, parseRttm('')).missed).toBeGreaterThan(0);
    const two = parseRttm(
      'SPEAKER a 1 0.000 1.000 <NA> <NA> x <NA> <NA>\nSPEAKER b 1 0.000 1.000 <NA> <NA> y <NA> <NA>\n',
    );
    expect(() => scoreDiarization(two, sample())).toThrow(InvalidOptionValueError);
    expect(() => scoreDiarization(two, sample())).toThrow(/reference.*this one has 2: a, b; pass \.get\(fileId\)/u);
  });

  it('scores swapped labels 0', () => {
    const reference = [turn(0, 4, 'A'), turn(4, 7, 'B'), turn(7, 9, 'A')];
    const swapped = [turn(0, 4, 'B'), turn(4, 7, 'A'), turn(7, 9, 'B')];
    const score = scoreDiarization(reference, swapped, NO_COLLAR);
    expect(score).toMatchObject({ der: 0, missed: 0, falseAlarm: 0, confusion: 0, total: 9 });
    expect(score.mapping).toEqual({ B: 'A', A: 'B' });
  });

  it('gives the known confusion when all of the pyannote sample is labelled one speaker', () => {
    const reference = sample();
    // One label over the union of the reference speech (speaker90: 11.85 s, speaker91: 12.50 s, 1.89 s overlap).
    const union = reference
      .map((t) => ({ ...t }))
      .sort((a, b) => a.start - b.start)
      .reduce<SpeakerTurn[]>((acc, t) => {
        const last = acc[acc.length - 1];
        if (last && t.start <= last.end) last.end = Math.max(last.end, t.end);
        else acc.push({ ...t, speaker: 'everyone' });
        return acc;
      }, []);
    const score = scoreDiarization(reference, union, NO_COLLAR);
    expect(score.total).toBeCloseTo(24.35, 9);
    expect(score.missed).toBeCloseTo(1.89, 9); // the overlapped speech: two speakers, one label
    expect(score.falseAlarm).toBeCloseTo(0, 9);
    expect(score.confusion).toBeCloseTo(9.96, 9); // 22.46 s of speech, 12.50 s of it mapped to speaker91
    expect(score.der).toBeCloseTo(11.85 / 24.35, 9);
    expect(score.mapping).toEqual({ everyone: 'speaker91' });
    // The default collar leaves the boundaries out, so less is scored and less is wrong.
    const collared = scoreDiarization(reference, union);
    expect(collared.total).toBeLessThan(score.total);
    expect(collared.confusion).toBeLessThan(score.confusion);
  });

  it('counts pure missed speech', () => {
    expect(scoreDiarization([turn(0, 10, 'A')], [], NO_COLLAR)).toEqual({
      der: 1,
      missed: 10,
      falseAlarm: 0,
      confusion: 0,
      total: 10,
      mapping: {},
    });
    // Default collar: 0.25 s at each end of the turn is not scored.
    expect(scoreDiarization([turn(0, 10, 'A')], [])).toMatchObject({ der: 1, missed: 9.5, total: 9.5 });
    const partial = scoreDiarization([turn(0, 10, 'A')], [turn(0, 6, 'x')], NO_COLLAR);
    expect(partial).toMatchObject({ missed: 4, falseAlarm: 0, confusion: 0, total: 10, der: 0.4 });
  });

  it('counts pure false alarm', () => {
    const reference = [turn(0, 10, 'A')];
    const hypothesis = [turn(0, 10, 'x'), turn(12, 15, 'y')];
    expect(scoreDiarization(reference, hypothesis, NO_COLLAR)).toMatchObject({
      der: 0.3,
      missed: 0,
      falseAlarm: 3,
      confusion: 0,
      total: 10,
      mapping: { x: 'A' },
    });
    const collared = scoreDiarization(reference, hypothesis);
    expect(collared.falseAlarm).toBeCloseTo(3, 9);
    expect(collared.der).toBeCloseTo(3 / 9.5, 9);
    // A second hypothesis speaker over the reference speaker is false alarm too.
    expect(scoreDiarization(reference, [turn(0, 10, 'x'), turn(2, 4, 'y')], NO_COLLAR)).toMatchObject({
      falseAlarm: 2,
      confusion: 0,
      der: 0.2,
    });
  });

  it('ignores a 0.2 s boundary shift inside a 0.25 s collar and counts it without one', () => {
    const reference = [turn(1, 5, 'A'), turn(5, 9, 'B')];
    const shifted = [turn(1, 5.2, 'x'), turn(5.2, 9, 'y')];
    const collared = scoreDiarization(reference, shifted, { collar: 0.25 });
    expect(collared.der).toBe(0);
    expect(collared.total).toBeCloseTo(8 - 4 * 0.25, 9); // four boundaries, none sharing a collar side
    const exact = scoreDiarization(reference, shifted, NO_COLLAR);
    expect(exact.confusion).toBeCloseTo(0.2, 9);
    expect(exact.missed + exact.falseAlarm).toBeCloseTo(0, 9);
    expect(exact.der).toBeCloseTo(0.2 / 8, 9);
    expect(exact.mapping).toEqual({ x: 'A', y: 'B' });
  });

  it('counts overlapped reference speech once per speaker, and can leave it out', () => {
    const reference = [turn(0, 10, 'A'), turn(5, 10, 'B')];
    const one = scoreDiarization(reference, [turn(0, 10, 'x')], NO_COLLAR);
    expect(one).toMatchObject({ total: 15, missed: 5, falseAlarm: 0, confusion: 0 });
    expect(one.der).toBeCloseTo(5 / 15, 9);
    expect(scoreDiarization(reference, [turn(0, 10, 'x'), turn(5, 10, 'y')], NO_COLLAR).der).toBe(0);
    // Two hypothesis speakers on the overlap, but A's label changes there: one of the two is confused.
    const crossed = scoreDiarization(reference, [turn(0, 5, 'x'), turn(5, 10, 'y'), turn(5, 10, 'z')], NO_COLLAR);
    expect(crossed).toMatchObject({ missed: 0, falseAlarm: 0, total: 15 });
    expect(crossed.confusion).toBeCloseTo(5, 9);
    const skipped = scoreDiarization(reference, [turn(0, 10, 'x')], { collar: 0, skipOverlap: true });
    expect(skipped).toMatchObject({ total: 5, missed: 0, der: 0 });
  });

  it('merges overlapping turns of one speaker and drops empty ones', () => {
    const score = scoreDiarization([turn(0, 5, 'A'), turn(3, 8, 'A'), turn(9, 9, 'A')], [turn(0, 8, 'x')], NO_COLLAR);
    expect(score).toMatchObject({ total: 8, der: 0 });
  });

  it('defines the rate when there is no reference speech', () => {
    expect(scoreDiarization([], []).der).toBe(0);
    expect(scoreDiarization([], [turn(0, 2, 'x')])).toMatchObject({ der: 1, falseAlarm: 2, total: 0 });
    // Speech only inside the collar of a reference turn is not scored either.
    expect(scoreDiarization([turn(0, 0.4, 'A')], [turn(0, 0.4, 'x')]).der).toBe(0);
  });

  it('refuses malformed turns and options with typed errors', () => {
    const ok = [turn(0, 1, 'A')];
    expect(() => scoreDiarization([turn(2, 1, 'A')], ok)).toThrow(/reference\[0\]\.end/);
    expect(() => scoreDiarization(ok, [turn(0, Number.POSITIVE_INFINITY, 'x')])).toThrow(InvalidOptionValueError);
    expect(() => scoreDiarization(ok, [turn(Number.NaN, 1, 'x')])).toThrow(InvalidOptionTypeError);
    expect(() => scoreDiarization(ok, [turn(-1, 1, 'x')])).toThrow(/hypothesis\[0\]\.start/);
    expect(() => scoreDiarization(ok, [{ start: 0, end: 1 } as SpeakerTurn])).toThrow(/hypothesis\[0\]\.speaker/);
    expect(() => scoreDiarization('nope' as unknown as SpeakerTurn[], ok)).toThrow(InvalidOptionTypeError);
    expect(() => scoreDiarization(ok, ok, { collar: -1 })).toThrow(/options\.collar/);
    expect(() => scoreDiarization(ok, ok, { collar: Number.POSITIVE_INFINITY })).toThrow(/options\.collar/);
    expect(() => scoreDiarization(ok, ok, { skipOverlap: 'yes' as unknown as boolean })).toThrow(/skipOverlap/);
    expect(() => scoreDiarization(ok, ok, { colar: 0 } as never)).toThrow(/options\.colar/);
  });
});

// A small deterministic generator, so a failing case can be replayed.
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The best total weight of a one-to-one pairing, by trying every pairing. */
function bruteForceBest(weights: number[][]): number {
  const columns = Math.max(0, ...weights.map((row) => row.length));
  const used = new Array<boolean>(columns).fill(false);
  const visit = (row: number): number => {
    if (row === weights.length) return 0;
    let best = visit(row + 1); // row left unpaired
    for (let c = 0; c < columns; c++) {
      if (used[c]) continue;
      used[c] = true;
      best = Math.max(best, (weights[row]![c] ?? 0) + visit(row + 1));
      used[c] = false;
    }
    return best;
  };
  return visit(0);
}

describe('maximumWeightAssignment', () => {
  it('finds the best pairing on 200 random matrices of up to 5 x 5, square or not', () => {
    const next = random(20240601);
    for (let n = 0; n < 200; n++) {
      const rows = 1 + Math.floor(next() * 5);
      const columns = 1 + Math.floor(next() * 5);
      // Integers with many zeros and ties, where greedy choices go wrong.
      const weights = Array.from({ length: rows }, () =>
        Array.from({ length: columns }, () => (next() < 0.3 ? 0 : Math.floor(next() * 10))),
      );
      const assignment = maximumWeightAssignment(weights);
      expect(assignment).toHaveLength(rows);
      const picked = assignment.filter((c) => c >= 0);
      expect(new Set(picked).size, JSON.stringify(weights)).toBe(picked.length);
      expect(picked.length).toBe(Math.min(rows, columns));
      const total = assignment.reduce((sum, c, r) => sum + (c >= 0 ? weights[r]![c]! : 0), 0);
      expect(total, JSON.stringify(weights)).toBe(bruteForceBest(weights));
    }
  });

  it('handles empty input', () => {
    expect(maximumWeightAssignment([])).toEqual([]);
    expect(maximumWeightAssignment([[], []])).toEqual([-1, -1]);
  });
});

/**
 * DER by brute force on a 0.1 s grid (the random turns below lie on it, so the frame counts are exact): per frame
 * the speaker sets, then the best label mapping by trying all of them.
 */
function bruteForceDer(reference: SpeakerTurn[], hypothesis: SpeakerTurn[]) {
  const frames = 10 * Math.max(0, ...reference.map((t) => t.end), ...hypothesis.map((t) => t.end));
  const refLabels = [...new Set(reference.map((t) => t.speaker))];
  const hypLabels = [...new Set(hypothesis.map((t) => t.speaker))];
  const speaking = (turns: SpeakerTurn[], labels: string[], f: number) =>
    labels
      .map((label, i) =>
        turns.some((t) => t.speaker === label && Math.round(t.start * 10) <= f && f < Math.round(t.end * 10)) ? i : -1,
      )
      .filter((i) => i >= 0);
  let total = 0;
  let errors = 0;
  const overlap = refLabels.map(() => hypLabels.map(() => 0));
  for (let f = 0; f < Math.round(frames); f++) {
    const refs = speaking(reference, refLabels, f);
    const hyps = speaking(hypothesis, hypLabels, f);
    total += refs.length;
    errors += Math.max(refs.length, hyps.length); // missed + false alarm + min(n_ref, n_hyp), before corrections
    for (const r of refs) for (const h of hyps) overlap[r]![h]! += 1;
  }
  errors -= bruteForceBest(overlap);
  return { total: total / 10, errors: errors / 10 };
}

describe('scoreDiarization against brute force', () => {
  it('agrees on 200 random cases of up to 5 speakers each side', () => {
    const next = random(7);
    const randomTurns = (speakers: number, prefix: string) =>
      Array.from({ length: Math.floor(next() * 12) }, () => {
        const start = Math.floor(next() * 200) / 10;
        const end = start + Math.floor(next() * 60) / 10;
        return turn(start, end, `${prefix}${Math.floor(next() * speakers)}`);
      });
    for (let n = 0; n < 200; n++) {
      const reference = randomTurns(1 + Math.floor(next() * 5), 'r');
      const hypothesis = randomTurns(1 + Math.floor(next() * 5), 'h');
      const score = scoreDiarization(reference, hypothesis, NO_COLLAR);
      const expected = bruteForceDer(reference, hypothesis);
      const context = JSON.stringify({ reference, hypothesis });
      expect(score.total, context).toBeCloseTo(expected.total, 6);
      expect(score.missed + score.falseAlarm + score.confusion, context).toBeCloseTo(expected.errors, 6);
    }
  });
});
