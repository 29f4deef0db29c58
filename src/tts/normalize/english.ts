// English text normalization before espeak-ng: what espeak reads wrongly or oddly is rewritten in words. Measured
// with piper-phonemize 1.4.11: "$3.50" is read "dollar three point five zero", "2026-11-24" "two thousand twenty
// six dash eleven dash twenty four", "12/25/2024" with "slash", "5 km/h" "five K M slash H", "1/2" "one slash two",
// "555-0123" "five hundred fifty five dash zero one two three", "1969" "nineteen hundred sixty nine", and "Mr." or
// "Dr." ends the sentence there. What espeak already reads well (plain integers, decimals, "3rd", "3.5%", "-5",
// "e.g.", "FBI", e-mail addresses) is left to it. Every rule is a regular expression over the text, so the whole pass
// is linear in its length. `dayFirst` reads n/n/yyyy as day/month (en_GB and the like).
import { cardinalWords, decimalWords, digitWords, ordinalWords, yearWords } from './number-words.js';

const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];

/** Titles and abbreviations with their full stop, read as words (the stop would otherwise end the sentence). */
const ABBREVIATIONS: ReadonlyArray<readonly [RegExp, string]> = [
  [/\bMr\.(?=\s)/gu, 'Mister'],
  [/\bMrs\.(?=\s)/gu, 'Missus'],
  [/\bMs\.(?=\s)/gu, 'Miz'],
  [/\bDr\.(?=\s+\p{Lu})/gu, 'Doctor'],
  [/\bProf\.(?=\s)/gu, 'Professor'],
  [/\bSt\.(?=\s+\p{Lu})/gu, 'Saint'],
  [/\bMt\.(?=\s+\p{Lu})/gu, 'Mount'],
  [/\bJr\./gu, 'Junior'],
  [/\bSr\./gu, 'Senior'],
  [/\bvs\.?(?=\s)/gu, 'versus'],
  [/\betc\.(?=\s+\p{Ll})/gu, 'et cetera'],
  [/\betc\./gu, 'et cetera.'],
  [/\bi\.e\.(?=\s)/gu, 'that is'],
  [/\bapprox\.(?=\s)/gu, 'approximately'],
  [/\b[Nn]o\.(?=\s*\d)/gu, 'number'],
  [/#(?=\d)/gu, 'number '],
  [/\s&\s/gu, ' and '],
];

/** Units after a number: [pattern, singular, plural]. Longer spellings first. */
const UNITS: ReadonlyArray<readonly [string, string, string]> = [
  ['km/h', 'kilometer per hour', 'kilometers per hour'],
  ['m/s', 'meter per second', 'meters per second'],
  ['mph', 'mile per hour', 'miles per hour'],
  ['kph', 'kilometer per hour', 'kilometers per hour'],
  ['°C', 'degree Celsius', 'degrees Celsius'],
  ['°F', 'degree Fahrenheit', 'degrees Fahrenheit'],
  ['km', 'kilometer', 'kilometers'],
  ['cm', 'centimeter', 'centimeters'],
  ['mm', 'millimeter', 'millimeters'],
  ['kg', 'kilogram', 'kilograms'],
  ['mg', 'milligram', 'milligrams'],
  ['lbs', 'pound', 'pounds'],
  ['lb', 'pound', 'pounds'],
  ['oz', 'ounce', 'ounces'],
  ['ft', 'foot', 'feet'],
  ['mi', 'mile', 'miles'],
  ['ml', 'milliliter', 'milliliters'],
  ['mL', 'milliliter', 'milliliters'],
  ['GHz', 'gigahertz', 'gigahertz'],
  ['MHz', 'megahertz', 'megahertz'],
  ['kHz', 'kilohertz', 'kilohertz'],
  ['Hz', 'hertz', 'hertz'],
  ['TB', 'terabyte', 'terabytes'],
  ['GB', 'gigabyte', 'gigabytes'],
  ['MB', 'megabyte', 'megabytes'],
  ['KB', 'kilobyte', 'kilobytes'],
  ['kB', 'kilobyte', 'kilobytes'],
  ['ms', 'millisecond', 'milliseconds'],
  ['kW', 'kilowatt', 'kilowatts'],
  ['kWh', 'kilowatt hour', 'kilowatt hours'],
];
const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/gu, '\\$&');
// The amount: digits with thousands separators or without, then decimals; an optional minus before it. The lookbehind
// keeps a match from starting inside a number ("1,2,3,..." would otherwise rescan from every comma: quadratic).
const UNIT_PATTERN = new RegExp(
  `(?<![\\w.,])([-−]?)(\\d{1,3}(?:,\\d{3})+|\\d+)(\\.\\d+)?\\s?(${[...UNITS]
    .sort((a, b) => b[0].length - a[0].length)
    .map(([unit]) => escapeRegExp(unit))
    .join('|')})(?![\\p{L}\\d])`,
  'gu',
);
const UNIT_WORDS = new Map(UNITS.map(([unit, one, many]) => [unit, [one, many] as const]));

const CURRENCIES: Record<string, readonly [string, string, string, string]> = {
  $: ['dollar', 'dollars', 'cent', 'cents'],
  '€': ['euro', 'euros', 'cent', 'cents'],
  '£': ['pound', 'pounds', 'penny', 'pence'],
  '¥': ['yen', 'yen', 'sen', 'sen'],
};

/** Denominators read as fractions (cooking, measures): 9/11 or 24/7 are not fractions. */
const FRACTION_DENOMINATORS = new Set(['2', '3', '4', '5', '6', '8', '10', '16']);

/** Words that announce a year after them: "in 1874", "since 2015". */
const YEAR_CONTEXT =
  'in|since|by|of|from|until|till|before|after|year|early|late|mid|around|circa|summer|winter|spring|autumn|fall';

const FRACTION_NAMES: Record<string, readonly [string, string]> = {
  '2': ['half', 'halves'],
  '4': ['quarter', 'quarters'],
};

/** An amount as words: "1,299" -> "one thousand two hundred ninety-nine"; "1.5" -> "one point five". */
function amountWords(amount: string): string {
  const [whole = '', fraction = ''] = amount.replace(/,/gu, '').split('.');
  return decimalWords(whole, fraction);
}

const isOne = (amount: string) => amount.replace(/,/gu, '') === '1';

function currency(
  sign: string,
  symbol: string,
  amount: string,
  fraction: string | undefined,
  scale: string | undefined,
): string {
  const [one, many, subunit, subunits] = CURRENCIES[symbol] as readonly [string, string, string, string];
  const minus = sign === '' ? '' : 'minus ';
  const whole = amount.replace(/,/gu, '');
  if (scale) return `${minus}${amountWords(fraction ? `${whole}.${fraction}` : whole)} ${scale} ${many}`;
  // Three or more decimals are not cents: the amount is read as a decimal ("5.999 dollars").
  if (fraction && fraction.length > 2) return `${minus}${decimalWords(whole, fraction)} ${many}`;
  const main = `${cardinalWords(whole)} ${isOne(whole) ? one : many}`;
  if (!fraction || /^0+$/u.test(fraction)) return `${minus}${main}`;
  const cents = fraction.length === 1 ? `${fraction}0` : fraction;
  const centWords = `${cardinalWords(cents)} ${cents === '01' ? subunit : subunits}`;
  return `${minus}${whole === '0' ? centWords : `${main} and ${centWords}`}`;
}

function time(hours: string, minutes: string, seconds: string | undefined, suffix: string | undefined): string {
  const hour = cardinalWords(hours);
  const minute = Number(minutes);
  const spokenSuffix = suffix ? ` ${suffix.toLowerCase().startsWith('a') ? 'a.m.' : 'p.m.'}` : '';
  const secondWords =
    seconds === undefined || seconds === '00'
      ? ''
      : ` and ${cardinalWords(seconds)} ${seconds === '01' ? 'second' : 'seconds'}`;
  if (minute === 0 && secondWords === '') return suffix ? `${hour}${spokenSuffix}` : `${hour} o'clock`;
  const minuteWords = minute === 0 ? "o'clock" : minute < 10 ? `oh ${cardinalWords(minutes)}` : cardinalWords(minutes);
  return `${hour} ${minuteWords}${secondWords}${spokenSuffix}`;
}

function date(year: string, month: string, day: string): string | undefined {
  const m = Number(month);
  const d = Number(day);
  if (m < 1 || m > 12 || d < 1 || d > 31) return undefined;
  return `${MONTHS[m - 1]} ${ordinalWords(String(d))}, ${yearWords(year)}`;
}

function fraction(whole: string, numerator: string, denominator: string): string {
  // Only proper fractions of common denominators: "24/7", "9/11" and "3/2" stay as espeak reads them.
  if (!FRACTION_DENOMINATORS.has(denominator) || Number(numerator) >= Number(denominator)) return whole;
  const many = numerator !== '1';
  const named = FRACTION_NAMES[denominator];
  const name = named ? named[many ? 1 : 0] : `${ordinalWords(denominator)}${many ? 's' : ''}`;
  return `${numerator === '1' ? 'one' : cardinalWords(numerator)} ${name}`;
}

/** Options of {@link normalizeEnglish}. */
export interface EnglishNormalizerOptions {
  /** Read n/n/yyyy as day/month/year (British), not month/day/year (American). */
  dayFirst: boolean;
}

/** Rewrites numbers, dates, times, money, units and abbreviations of English text in words. */
export function normalizeEnglish(text: string, options: EnglishNormalizerOptions = { dayFirst: false }): string {
  let out = text;
  for (const [pattern, words] of ABBREVIATIONS) out = out.replace(pattern, words);
  // Dates: ISO first (2026-11-24), then n/n/yyyy.
  out = out.replace(/\b(\d{4})-(\d{2})-(\d{2})\b/gu, (m, y: string, mo: string, d: string) => date(y, mo, d) ?? m);
  out = out.replace(/\b(\d{1,2})\/(\d{1,2})\/(\d{4})\b/gu, (m, a: string, b: string, y: string) =>
    options.dayFirst ? (date(y, b, a) ?? m) : (date(y, a, b) ?? m),
  );
  // Times: 10:30, 6:45 a.m., 9:05pm, 12:30:45 (hours 0-23, minutes 00-59); not inside a longer run of numbers
  // ("10.0.0.1:5000").
  out = out.replace(
    /(?<![\d.:])([01]?\d|2[0-3]):([0-5]\d)(?::([0-5]\d))?(?![\d:])(?:\s?([ap])\.?m\.?(?![\p{L}]))?/giu,
    (_m, h: string, mi: string, s: string | undefined, suffix: string | undefined) => time(h, mi, s, suffix),
  );
  // Money: $3.50, $1,299, €20, $1.5 million, -$5; not a European "€1.234,56" (left to espeak-ng).
  out = out.replace(
    /([-−]?)([$€£¥])\s?(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?!\d|[.,]\d)(?:\s(thousand|million|billion|trillion)\b)?/gu,
    (_m, sign: string, symbol: string, amount: string, cents: string | undefined, scale: string | undefined) =>
      currency(sign, symbol, amount, cents, scale),
  );
  // Telephone numbers: 555-0123, 555-123-4567, read digit by digit in groups.
  out = out.replace(/(?<![\d-])(\d{3})-(\d{3})-(\d{4})(?![\d-])/gu, (_m, a: string, b: string, c: string) =>
    [a, b, c].map(digitWords).join(', '),
  );
  out = out.replace(
    /(?<![\d-])(\d{3})-(\d{4})(?![\d-])/gu,
    (_m, a: string, b: string) => `${digitWords(a)}, ${digitWords(b)}`,
  );
  // Ranges of numbers: 1-5, 10–20 -> "to" (after dates and telephone numbers took theirs, before units: "2-3 kg").
  out = out.replace(
    /(?<![\p{L}\d.,-])(\d+)\s?[–-]\s?(\d+)(?!\d|[.,]\d)/gu,
    (_m, a: string, b: string) => `${a} to ${b}`,
  );
  // Units after a number: 5 km/h, 72°F, 10 kg, -5°C.
  out = out.replace(UNIT_PATTERN, (_m, sign: string, amount: string, decimals: string | undefined, unit: string) => {
    const [one, many] = UNIT_WORDS.get(unit) as readonly [string, string];
    const value = `${amount}${decimals ?? ''}`;
    return `${sign === '' ? '' : 'minus '}${amountWords(value)} ${isOne(value) ? one : many}`;
  });
  // Fractions: 1/2, 3/4, 2/3.
  out = out.replace(/(?<![\d/])([1-9])\/(\d{1,2})(?![\d/])/gu, fraction);
  // Years after a word that announces one: "in 1874" -> "in eighteen seventy-four", "since 2015".
  out = out.replace(
    new RegExp(`\\b(${YEAR_CONTEXT})\\s(1[1-9]\\d\\d|20[1-9]\\d)\\b(?![.,]\\d|\\s?%)`, 'giu'),
    (_m, word: string, year: string) => `${word} ${yearWords(year)}`,
  );
  return out;
}
