// The accuracy tier's scoring (test/helpers/wer.ts): one normal form for every spelling of a phrase, and word error
// rates counted the standard way.
import { describe, expect, it } from 'vitest';
import { alignWords, corpusWer, normalizedWords, normalizeEnglish, wordErrorRate } from '../helpers/wer.js';

describe('normalizeEnglish', () => {
  it.each([
    ['And so, my fellow Americans: ask not!', 'and so my fellow americans ask not'],
    ['HE HOPED THERE WOULD BE STEW', 'he hoped there would be stew'],
    ['  spaced \t out\n words  ', 'spaced out words'],
    ['[MUSIC] hello (laughs) <unk> world', 'hello world'],
    ['um, I uh think so hmm', 'i think so'],
    ['Mr. Smith met Mrs. Jones and Dr. Who', 'mister smith met missus jones and doctor who'],
    [
      "I can't, won't, don't; it's we're they'll I'd you've I'm",
      'i can not will not do not it is we are they will i would you have i am',
    ],
    ["the nation's future", 'the nation is future'],
    ['it\u2019s fine', 'it is fine'],
    ['his belly counselled him; the colour grey', 'his belly counseled him the color gray'],
    ['Café naïve façade', 'cafe naive facade'],
    ['self-government', 'self government'],
  ])('%j -> %j', (input, expected) => {
    expect(normalizeEnglish(input)).toBe(expected);
  });

  it.each([
    ['forty-two line Bible', '42 line bible'],
    ['forty two', '42'],
    ['twenty one', '21'],
    ['one hundred', '100'],
    ['two hundred and five', '205'],
    ['three thousand four hundred and fifty six', '3456'],
    ['two million', '2000000'],
    ['fourteen fifty-five', '1455'],
    ['nineteen sixty four', '1964'],
    ['twenty twenty', '2020'],
    ['one two three', '123'],
    ['the fifth of november', 'the 5th of november'],
    ['twenty first century', '21st century'],
    ['the nineties', 'the 90s'],
    ['the ninth', 'the 9th'],
    ['forty percent', '40%'],
    ['three point five', '3.5'],
    ['1,000 people', '1000 people'],
    ['in 1455.', 'in 1455'],
    ['the 1960s', 'the 1960s'],
    ['zero', '0'],
  ])('numbers: %j -> %j', (input, expected) => {
    expect(normalizeEnglish(input)).toBe(expected);
  });

  it('keeps "one" spelled out where it stands alone, and "and" where it is not part of a number', () => {
    expect(normalizeEnglish('one of the ones')).toBe('one of the ones');
    expect(normalizeEnglish('bread and butter')).toBe('bread and butter');
    expect(normalizeEnglish('hundred and fifty and a cat')).toBe('150 and a cat');
    expect(normalizeEnglish('to the point')).toBe('to the point');
  });

  it('gives digits and spelled numbers one form', () => {
    const ref = 'the Gutenberg, or "forty-two line Bible" of about 1455,';
    const hyp = 'The Gutenberg or 42-line Bible of about fourteen fifty-five.';
    expect(normalizeEnglish(ref)).toBe(normalizeEnglish(hyp));
  });

  it('writes letter abbreviations and clock times one way', () => {
    expect(normalizeEnglish('Meet at 5 p.m. with U.A. staff')).toBe(normalizeEnglish('Meet at 5pm with UA staff'));
    expect(normalizeEnglish('at 10:30 a.m.')).toBe(normalizeEnglish('at 10.30 AM'));
    expect(normalizeEnglish('the U.S. team')).toBe('the us team');
    expect(normalizeEnglish('it cost 10.30 dollars')).not.toBe(normalizeEnglish('it cost 10 30 dollars'));
  });

  it('normalizes empty and punctuation-only text to nothing', () => {
    expect(normalizeEnglish('')).toBe('');
    expect(normalizeEnglish(' ... !? ')).toBe('');
    expect(normalizedWords(' ... ')).toEqual([]);
  });
});

describe('wordErrorRate', () => {
  it('is zero for the same words in another spelling', () => {
    const r = wordErrorRate(
      'And so my fellow Americans, ask not what your country can do for you',
      ' and so, my fellow Americans -- ask NOT what your country can do for you.',
    );
    expect(r).toEqual({ wer: 0, errors: 0, refWords: 14, hypWords: 14, sub: 0, del: 0, ins: 0 });
  });

  it('counts substitutions, deletions and insertions', () => {
    expect(wordErrorRate('a b c d', 'a x c d')).toMatchObject({ sub: 1, del: 0, ins: 0, errors: 1, wer: 0.25 });
    expect(wordErrorRate('a b c d', 'a c d')).toMatchObject({ sub: 0, del: 1, ins: 0, errors: 1, wer: 0.25 });
    expect(wordErrorRate('a b c d', 'a b c d e')).toMatchObject({ sub: 0, del: 0, ins: 1, errors: 1, wer: 0.25 });
    expect(wordErrorRate('a b', 'x y z w')).toMatchObject({ sub: 2, ins: 2, errors: 4, wer: 2 });
    expect(wordErrorRate('a b c', '')).toMatchObject({ del: 3, errors: 3, wer: 1, hypWords: 0 });
  });

  it('finds the minimum edit count', () => {
    // A shifted sequence: one deletion and one insertion, not six substitutions.
    expect(wordErrorRate('x a b c d e f', 'a b c d e f y')).toMatchObject({ errors: 2, del: 1, ins: 1, sub: 0 });
    expect(wordErrorRate('the cat sat on the mat', 'the cat sat on mat')).toMatchObject({ errors: 1, del: 1 });
  });

  it('handles an empty reference', () => {
    expect(wordErrorRate('', '').wer).toBe(0);
    expect(wordErrorRate('', 'hello there')).toMatchObject({ wer: Number.POSITIVE_INFINITY, ins: 2, refWords: 0 });
  });

  it('accepts another normalizer', () => {
    expect(wordErrorRate('A B', 'a b', (s) => s).wer).toBe(1);
  });
});

describe('alignWords', () => {
  it('pairs equal words in order and marks the rest', () => {
    expect(alignWords(['a', 'b', 'c'], ['a', 'x', 'c', 'd'])).toEqual([
      { op: 'equal', ref: 0, hyp: 0 },
      { op: 'sub', ref: 1, hyp: 1 },
      { op: 'equal', ref: 2, hyp: 2 },
      { op: 'ins', hyp: 3 },
    ]);
    expect(alignWords([], [])).toEqual([]);
    expect(alignWords(['a'], [])).toEqual([{ op: 'del', ref: 0 }]);
  });
});

describe('corpusWer', () => {
  it('weighs clips by their reference words', () => {
    const long = wordErrorRate('a b c d e f g h i j', 'a b c d e f g h i j');
    const short = wordErrorRate('a b', 'a x');
    expect(corpusWer([long, short])).toBeCloseTo(1 / 12);
    expect(corpusWer([])).toBe(0);
  });
});
