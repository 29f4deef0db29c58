import { describe, expect, it } from 'vitest';
import { identityTimeMap, startsInSpeech, timeMapFromSpans } from '../../src/stt/time-map.js';

describe('timeMapFromSpans', () => {
  const map = timeMapFromSpans([
    { origStart: 2, origEnd: 4, procStart: 0, procEnd: 2 },
    { origStart: 10, origEnd: 11, procStart: 2.1, procEnd: 3.1 },
  ]);

  it('shifts times inside a kept stretch', () => {
    expect(map(0)).toBe(2);
    expect(map(1.5)).toBe(3.5);
    expect(map(2.6)).toBeCloseTo(10.5);
  });

  it('interpolates across the gap between stretches, never backwards', () => {
    expect(map(2.05)).toBeCloseTo(7);
    let last = -1;
    for (let t = -0.5; t < 4; t += 0.01) {
      const mapped = map(t);
      expect(mapped).toBeGreaterThanOrEqual(last);
      last = mapped;
    }
  });

  it('clamps past the last stretch, and is the identity without stretches', () => {
    expect(map(50)).toBe(11);
    expect(timeMapFromSpans([])).toBe(identityTimeMap);
  });

  it('stays monotonic when stretches overlap by the VAD margin', () => {
    const overlapping = timeMapFromSpans([
      { origStart: 0, origEnd: 1.1, procStart: 0, procEnd: 1.1 },
      { origStart: 1.05, origEnd: 2, procStart: 1.2, procEnd: 2.15 },
    ]);
    expect(overlapping(1.15)).toBeLessThanOrEqual(overlapping(1.2));
  });
});

describe('startsInSpeech', () => {
  const spans = [
    { origStart: 1, origEnd: 3, procStart: 0, procEnd: 2 },
    { origStart: 10, origEnd: 12, procStart: 2.1, procEnd: 4.1 },
  ];

  it("moves a start before its stretch's speech onset (start + padding) to it, never past the end", () => {
    const items = [
      { start: 1.5, end: 2.5 },
      { start: 1.05, end: 1.6 },
      { start: 6, end: 10.6 },
      { start: 9.5, end: 10.1 },
      { start: 13, end: 14 },
    ];
    expect(startsInSpeech(items, spans, 0.2)).toEqual([
      { start: 1.5, end: 2.5 },
      { start: 1.2, end: 1.6 },
      { start: 10.2, end: 10.6 },
      { start: 10.1, end: 10.1 },
      { start: 13, end: 14 },
    ]);
  });
});
