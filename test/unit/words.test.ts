import { describe, expect, it } from 'vitest';
import { identityTimeMap } from '../../src/stt/time-map.js';
import { normaliseTimes, wordsFromSegments } from '../../src/stt/words.js';
import { segment } from '../helpers/fake-native.js';

describe('wordsFromSegments', () => {
  it('merges sub-word tokens and attaches punctuation to the word before it, without its time', () => {
    const seg = segment(0, 3, [
      { text: '[_BEG_]', special: true },
      { text: ' And', start: 0.1, end: 0.3 },
      { text: ' so', start: 0.3, end: 0.5 },
      { text: ' Amer', start: 0.5, end: 0.8 },
      { text: 'icans', start: 0.8, end: 1.2 },
      { text: ',', start: 1.2, end: 1.25 },
      { text: ' ask', start: 1.3, end: 1.6 },
      { text: '?', start: 1.6, end: 1.7 },
    ]);
    const words = wordsFromSegments([seg], identityTimeMap, 3);
    expect(words).toEqual([
      { word: 'And', start: 0.1, end: 0.3 },
      { word: 'so', start: 0.3, end: 0.5 },
      { word: 'Americans,', start: 0.5, end: 1.2 },
      { word: 'ask?', start: 1.3, end: 1.6 },
    ]);
  });

  it('joins an opening quote or bracket to the word after it', () => {
    const seg = segment(0, 2, [
      { text: ' "', start: 0.1, end: 0.2 },
      { text: 'hello', start: 0.2, end: 0.5 },
      { text: '"', start: 0.5, end: 0.55 },
      { text: ' (', start: 0.6, end: 0.65 },
      { text: 'world', start: 0.65, end: 1 },
      { text: ')', start: 1, end: 1.05 },
    ]);
    expect(wordsFromSegments([seg], identityTimeMap, 2).map((w) => w.word)).toEqual(['"hello"', '(world)']);
  });

  it('decodes UTF-8 only after merging, so a character split across tokens survives', () => {
    const euro = Buffer.from(' 5€', 'utf8'); // the € is 3 bytes: split it across two tokens
    const seg = segment(0, 1, [
      { text: '', bytes: euro.subarray(0, 3) },
      { text: '', bytes: euro.subarray(3) },
    ]);
    expect(wordsFromSegments([seg], identityTimeMap, 1)[0]!.word).toBe('5€');
  });

  it('uses DTW times when every token has one: a word spans from the token before it to its own last token', () => {
    // t_dtw marks where a token ends on the alignment path; the first word starts at the segment's start.
    const seg = segment(1, 4, [
      { text: ' one', dtw: 1.2, start: 9, end: 9 },
      { text: ' tw', dtw: 1.8, start: 9, end: 9 },
      { text: 'o', dtw: 2.0, start: 9, end: 9 },
      { text: ' three', dtw: 3.1, start: 9, end: 9 },
    ]);
    expect(wordsFromSegments([seg], identityTimeMap, 10)).toEqual([
      { word: 'one', start: 1, end: 1.2 },
      { word: 'two', start: 1.2, end: 2 },
      { word: 'three', start: 2, end: 3.1 },
    ]);
  });

  it('starts the first DTW word of a segment where the previous segment ended, or at its own start after a pause', () => {
    const first = segment(0, 2, [{ text: ' a', dtw: 1.5, start: 9, end: 9 }]);
    const next = segment(1.5, 3, [{ text: ' b', dtw: 2.5, start: 9, end: 9 }]);
    const afterPause = segment(6, 8, [{ text: ' c', dtw: 7, start: 9, end: 9 }]);
    expect(wordsFromSegments([first, next, afterPause], identityTimeMap, 10)).toEqual([
      { word: 'a', start: 0, end: 1.5 },
      { word: 'b', start: 1.5, end: 2.5 },
      { word: 'c', start: 6, end: 7 },
    ]);
  });

  it('maps times through the VAD time map', () => {
    const seg = segment(0, 1, [{ text: ' hi', start: 0.2, end: 0.4 }]);
    const words = wordsFromSegments([seg], (t) => t + 10, 20);
    expect(words).toEqual([{ word: 'hi', start: 10.2, end: 10.4 }]);
  });

  it('returns no words for special-only or empty segments', () => {
    const seg = segment(0, 1, [{ text: '[_TT_50]', special: true }, { text: ' ' }]);
    expect(wordsFromSegments([seg], identityTimeMap, 1)).toEqual([]);
  });
});

describe('normaliseTimes', () => {
  it('clamps to [0, duration], keeps start <= end and both non-decreasing', () => {
    const items = [
      { start: -1, end: 0.5 },
      { start: 0.4, end: 0.2 },
      { start: 0.3, end: Number.NaN },
      { start: 5, end: 99 },
    ];
    const out = normaliseTimes(items, 4.9996);
    for (let i = 0; i < out.length; i++) {
      const w = out[i]!;
      expect(w.start).toBeGreaterThanOrEqual(0);
      expect(w.start).toBeLessThanOrEqual(w.end);
      expect(w.end).toBeLessThanOrEqual(4.9996);
      if (i > 0) {
        expect(w.start).toBeGreaterThanOrEqual(out[i - 1]!.start);
        expect(w.end).toBeGreaterThanOrEqual(out[i - 1]!.end);
      }
    }
    expect(out[0]).toEqual({ start: 0, end: 0.5 });
    expect(out[3]).toEqual({ start: 4.999, end: 4.999 });
  });
});
