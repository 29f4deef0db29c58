// RTTM reading and writing: the real pyannote reference, round trips, and malformed records named by line.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { formatRttm, parseRttm } from '../../src/diarize/rttm.js';
import type { SpeakerTurn } from '../../src/diarize/turn.js';
import { InvalidOptionTypeError, InvalidOptionValueError } from '../../src/errors.js';
import { sharedAudio } from '../helpers/paths.js';

const SAMPLE = sharedAudio('pyannote_sample.rttm');

describe('parseRttm', () => {
  it('reads the pyannote sample: one file, two speakers, ten turns sorted by start', () => {
    const files = parseRttm(readFileSync(SAMPLE, 'utf8'), SAMPLE);
    expect([...files.keys()]).toEqual(['sample']);
    const turns = files.get('sample')!;
    expect(turns).toHaveLength(10);
    expect(new Set(turns.map((t) => t.speaker))).toEqual(new Set(['speaker90', 'speaker91']));
    expect(turns[0]).toEqual({ start: 6.69, end: expect.closeTo(7.12, 9), speaker: 'speaker90' });
    expect(turns[9]).toMatchObject({ start: 27.85, speaker: 'speaker90' });
    expect(turns[9]!.end).toBeCloseTo(30, 9);
    for (let i = 1; i < turns.length; i++) expect(turns[i]!.start).toBeGreaterThanOrEqual(turns[i - 1]!.start);
    // speaker90 18.050-21.490 and speaker91 18.150-18.590 overlap.
    const overlapping = turns.filter((t) => t.start < 18.59 && t.end > 18.15);
    expect(overlapping.map((t) => t.speaker).sort()).toEqual(['speaker90', 'speaker91']);
  });

  it('skips blank lines, comments and other record types, and tolerates extra whitespace and CRLF', () => {
    const text = [
      ';; a comment',
      '',
      'SPKR-INFO meeting 1 <NA> <NA> <NA> unknown alice <NA> <NA>',
      '   SPEAKER\tmeeting  1   0.500 1.250 <NA> <NA>   alice <NA> <NA>   ',
      'SPEAKER other 1 3 2 <NA> <NA> bob',
      'SPEAKER meeting 1 0.000 0.250 <NA> <NA> bob <NA>',
      '   ',
    ].join('\r\n');
    const files = parseRttm(text);
    expect([...files.keys()]).toEqual(['meeting', 'other']);
    expect(files.get('meeting')).toEqual([
      { start: 0, end: 0.25, speaker: 'bob' },
      { start: 0.5, end: 1.75, speaker: 'alice' },
    ]);
    expect(files.get('other')).toEqual([{ start: 3, end: 5, speaker: 'bob' }]);
    expect(parseRttm('').size).toBe(0);
  });

  it('names the line of a malformed SPEAKER record', () => {
    const good = 'SPEAKER f 1 0.0 1.0 <NA> <NA> a <NA> <NA>';
    const cases = [
      'SPEAKER f 1 0.0 1.0',
      'SPEAKER f 1 zero 1.0 <NA> <NA> a <NA> <NA>',
      'SPEAKER f 1 0.0 -1 <NA> <NA> a <NA> <NA>',
      'SPEAKER f 1 -0.5 1 <NA> <NA> a <NA> <NA>',
      'SPEAKER f 1 0x10 1 <NA> <NA> a <NA> <NA>',
      'SPEAKER f 1 0 Infinity <NA> <NA> a <NA> <NA>',
      'SPEAKER f 1 0 1 <NA> <NA> <NA> <NA> <NA>',
      'SPEAKER f 1 0 1 <NA> <NA> a <NA> <NA> extra',
    ];
    for (const bad of cases) {
      const text = `${good}\n;; fine\n${bad}\n`;
      expect(() => parseRttm(text, 'ref.rttm'), bad).toThrow(InvalidOptionValueError);
      expect(() => parseRttm(text, 'ref.rttm'), bad).toThrow(/^ref\.rttm: line 3 must be/);
    }
    expect(() => parseRttm(42 as unknown as string)).toThrow(InvalidOptionTypeError);
  });
});

describe('formatRttm', () => {
  it('writes sorted, newline-terminated SPEAKER records with three decimals', () => {
    const text = formatRttm('my meeting', [
      { start: 2, end: 3.5, speaker: 'B' },
      { start: 0.1234, end: 1, speaker: 'A' },
    ]);
    expect(text).toBe(
      'SPEAKER my_meeting 1 0.123 0.877 <NA> <NA> A <NA> <NA>\n' +
        'SPEAKER my_meeting 1 2.000 1.500 <NA> <NA> B <NA> <NA>\n',
    );
    expect(formatRttm('x', [], 2)).toBe('');
    expect(formatRttm('x', [{ start: 0, end: 1, speaker: 'Ann Lee' }], 2)).toBe(
      'SPEAKER x 2 0.000 1.000 <NA> <NA> Ann_Lee <NA> <NA>\n',
    );
  });

  it('round-trips through parseRttm, the pyannote sample included', () => {
    const original = parseRttm(readFileSync(SAMPLE, 'utf8')).get('sample')!;
    const again = parseRttm(formatRttm('sample', original)).get('sample')!;
    expect(again).toHaveLength(original.length);
    again.forEach((turn, i) => {
      expect(turn.speaker).toBe(original[i]!.speaker);
      expect(turn.start).toBeCloseTo(original[i]!.start, 9);
      expect(turn.end).toBeCloseTo(original[i]!.end, 9);
    });

    const turns: SpeakerTurn[] = [
      { start: 0.0004, end: 1.0006, speaker: 's1' },
      { start: 1.2, end: 1.2, speaker: 's2' },
      { start: 10, end: 65.4321, speaker: 's1' },
    ];
    const back = parseRttm(formatRttm('f', turns)).get('f')!;
    expect(back.map((t) => t.speaker)).toEqual(['s1', 's2', 's1']);
    const rounded = (x: number) => Math.round(x * 1000) / 1000;
    back.forEach((turn, i) => {
      expect(turn.start).toBeCloseTo(rounded(turns[i]!.start), 9);
      expect(turn.end).toBeCloseTo(rounded(turns[i]!.end), 9);
    });
  });

  it('refuses bad turns, file ids and channels', () => {
    expect(() => formatRttm('f', [{ start: 2, end: 1, speaker: 'a' }])).toThrow(/turns\[0\]\.end/);
    expect(() => formatRttm('f', [{ start: Number.NaN, end: 1, speaker: 'a' }])).toThrow(InvalidOptionTypeError);
    expect(() => formatRttm('f', [{ start: 0, end: 1, speaker: '' }])).toThrow(/turns\[0\]\.speaker/);
    expect(() => formatRttm('  ', [])).toThrow(InvalidOptionValueError);
    expect(() => formatRttm('f', [], 1.5)).toThrow(/channel/);
  });
});
