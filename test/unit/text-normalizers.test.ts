// The English text normalizer (numbers, dates, times, money, units, abbreviations in words), its number words, the
// per-language registry with `tts.normalizers`, and the WAV size fix-up of the JSON speech answer.
import { describe, expect, it } from 'vitest';
// A bound on how long work takes grows with this machine's slowdown.
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import { finalizeWavSizes } from '../../src/audio/wav-sizes.js';
import { InvalidOptionTypeError, SynthesisError } from '../../src/errors.js';
import { resolveTtsOptions } from '../../src/tts/config.js';
import { normalizeEnglish } from '../../src/tts/normalize/english.js';
import { normalizerFor } from '../../src/tts/normalize/normalizers.js';
import { cardinalWords, ordinalWords, yearWords } from '../../src/tts/normalize/number-words.js';

describe('number words', () => {
  it('reads cardinals, ordinals and years', () => {
    expect(cardinalWords('0')).toBe('zero');
    expect(cardinalWords('1299')).toBe('one thousand two hundred ninety-nine');
    expect(cardinalWords('1000000')).toBe('one million');
    expect(cardinalWords('999999999999999')).toMatch(/^nine hundred ninety-nine trillion/);
    expect(cardinalWords('1234567890123456')).toBe(
      'one two three four five six seven eight nine zero one two three four five six',
    );
    expect(['1', '2', '3', '5', '12', '20', '21', '100'].map(ordinalWords)).toEqual([
      'first',
      'second',
      'third',
      'fifth',
      'twelfth',
      'twentieth',
      'twenty-first',
      'one hundredth',
    ]);
    expect(['1969', '1900', '1905', '2005', '2024'].map(yearWords)).toEqual([
      'nineteen sixty-nine',
      'nineteen hundred',
      'nineteen oh five',
      'two thousand five',
      'twenty twenty-four',
    ]);
  });
});

describe('normalizeEnglish', () => {
  const cases: Array<[string, string]> = [
    ['It costs $3.50.', 'It costs three dollars and fifty cents.'],
    ['From $1,299 to $1.', 'From one thousand two hundred ninety-nine dollars to one dollar.'],
    ['$0.99 or £12 or €2.01', 'ninety-nine cents or twelve pounds or two euros and one cent'],
    ['$1.5 million', 'one point five million dollars'],
    ['Due 2026-11-24.', 'Due November twenty-fourth, twenty twenty-six.'],
    ['On 12/25/2024 we rest.', 'On December twenty-fifth, twenty twenty-four we rest.'],
    ['At 10:30 a.m., 9:05pm and 12:00.', "At ten thirty a.m., nine oh five p.m. and twelve o'clock."],
    [
      'Call 555-0123 or 555-867-5309.',
      'Call five five five, zero one two three or five five five, eight six seven, five three zero nine.',
    ],
    [
      '50 km/h, 72°F, 1 kg, 3.5 GB',
      'fifty kilometers per hour, seventy-two degrees Fahrenheit, one kilogram, three point five gigabytes',
    ],
    [
      'Add 1/2 cup and 3/4 spoon, 3/8 inch; 24/7.',
      'Add one half cup and three quarters spoon, three eighths inch; 24/7.',
    ],
    ['Chapters 1-12, pages 10–20.', 'Chapters 1 to 12, pages 10 to 20.'],
    ['In 1969 and in 2023 we had 2023 items.', 'In nineteen sixty-nine and in twenty twenty-three we had 2023 items.'],
    ['The year 1969; 1969 alone.', 'The year nineteen sixty-nine; 1969 alone.'],
    ['Mr. Smith met Dr. Jones on St. James St.', 'Mister Smith met Doctor Jones on Saint James St.'],
    ['Brazil vs. Germany, No. 5 & #3, etc. to go', 'Brazil versus Germany, number 5 and number 3, et cetera to go'],
    ['Versions 1.2.3 and 3.14 and -5', 'Versions 1.2.3 and 3.14 and -5'],
    [
      '-5°C, -$5.50, 2-3 kg, x86-64',
      'minus five degrees Celsius, minus five dollars and fifty cents, 2 to three kilograms, x86-64',
    ],
    ['12:30:45, 1:00:00, 10.0.0.1:5000', "twelve thirty and forty-five seconds, one o'clock, 10.0.0.1:5000"],
    ['$5.999, €1.234,56', 'five point nine nine nine dollars, €1.234,56'],
    ['1234 points, room 1420, 9/11, 3/2', '1234 points, room 1420, 9/11, 3/2'],
    ['1,'.repeat(3), '1,'.repeat(3)],
  ];
  it.each(cases)('%s', (text, expected) => {
    expect(normalizeEnglish(text)).toBe(expected);
  });

  it('reads n/n/yyyy day first when asked (en_GB), and leaves impossible dates alone', () => {
    expect(normalizeEnglish('On 04/07/1976.', { dayFirst: true })).toBe('On July fourth, nineteen seventy-six.');
    expect(normalizeEnglish('On 13/45/2020.')).toBe('On 13/45/2020.');
  });

  it('is linear: 5,000 characters of digits and symbols take a few milliseconds', () => {
    const text = '$1,2 12/12/ 10:6 -- 5-5-5 1/1/1 '.repeat(160).slice(0, 5000);
    // A run of "1," was quadratic in the unit rule (every comma a new start): 25,000 of them now take about 1 ms.
    const commas = '1,'.repeat(25_000);
    const started = performance.now();
    normalizeEnglish(text);
    normalizeEnglish(commas);
    expect(performance.now() - started).toBeLessThan(scaledMs(50));
  });
});

describe('normalizerFor', () => {
  it('takes the configured normalizer for the code, then the language, then the built-in; null turns it off', () => {
    const british = normalizerFor('en_GB', {});
    expect(british?.('On 04/07/1976.')).toBe('On July fourth, nineteen seventy-six.');
    expect(normalizerFor('en_US', {})?.('On 04/07/1976.')).toBe('On April seventh, nineteen seventy-six.');
    expect(normalizerFor('de_DE', {})).toBeUndefined();
    expect(normalizerFor('en_US', { en: null })).toBeUndefined();
    const shout = (text: string, language: string) => `${text.toUpperCase()} (${language})`;
    expect(normalizerFor('en_US', { en_US: shout, en: null })?.('hi')).toBe('HI (en_US)');
    expect(normalizerFor('de_DE', { de: shout })?.('hallo')).toBe('HALLO (de_DE)');
  });

  it('turns a normalizer that throws or runs away into SynthesisError TTS_NORMALIZER_FAILED', () => {
    const throws = normalizerFor('en_US', {
      en: () => {
        throw new Error('boom');
      },
    });
    expect(() => throws?.('x')).toThrow(SynthesisError);
    expect(() => throws?.('x')).toThrow(/normalizer for en_US failed: boom/);
    const huge = normalizerFor('en_US', { en: (text) => text.repeat(1000) });
    expect(() => huge?.('hello')).toThrow(/returned 5000 characters for 5/);
    const wrong = normalizerFor('en_US', { en: (() => 42) as unknown as (text: string) => string });
    expect(() => wrong?.('hello')).toThrow(/returned number/);
  });

  it('tts.normalizers takes functions or null per language, naming the entry when wrong', () => {
    expect(resolveTtsOptions({ normalizers: { en: null } }).normalizers).toEqual({ en: null });
    expect(() => resolveTtsOptions({ normalizers: { en: 'upper' } })).toThrow(InvalidOptionTypeError);
    expect(() => resolveTtsOptions({ normalizers: { en: 'upper' } })).toThrow(/^tts\.normalizers\.en must be/);
  });
});

describe('finalizeWavSizes', () => {
  it('writes the RIFF and data sizes of a streamed wav, past other chunks, and leaves other bytes alone', () => {
    const header = Buffer.alloc(12 + 8 + 16 + 8 + 3 + 1 + 8);
    header.write('RIFF', 0, 'latin1');
    header.writeUInt32LE(0xffffffff, 4);
    header.write('WAVE', 8, 'latin1');
    header.write('fmt ', 12, 'latin1');
    header.writeUInt32LE(16, 16);
    header.write('LIST', 36, 'latin1');
    header.writeUInt32LE(3, 40); // odd: padded to 4
    header.write('data', 48, 'latin1');
    header.writeUInt32LE(0xffffffff, 52);
    const wav = Buffer.concat([header, Buffer.alloc(100)]);
    finalizeWavSizes(wav);
    expect(wav.readUInt32LE(4)).toBe(wav.length - 8);
    expect(wav.readUInt32LE(52)).toBe(100);
    const mp3 = Buffer.from([0xff, 0xfb, 0x90, 0x00, 1, 2, 3, 4, 5, 6, 7, 8]);
    finalizeWavSizes(mp3);
    expect([...mp3]).toEqual([0xff, 0xfb, 0x90, 0x00, 1, 2, 3, 4, 5, 6, 7, 8]);
  });
});
