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
const UNIT_PATTERN = new RegExp(
  `(?<![\\w.])(\\d[\\d,]*(?:\\.\\d+)?)\\s?(${[...UNITS]
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

function currency(_m: string, symbol: string, amount: string, fraction: string | undefined, scale?: string): string {
  const [one, many, subunit, subunits] = CURRENCIES[symbol] as readonly [string, string, string, string];
  const whole = amount.replace(/,/gu, '');
  if (scale) return `${amountWords(fraction ? `${whole}.${fraction}` : whole)} ${scale} ${many}`;
  const main = `${cardinalWords(whole)} ${isOne(whole) ? one : many}`;
  if (!fraction || /^0+$/u.test(fraction)) return main;
  const cents = fraction.length === 1 ? `${fraction}0` : fraction.slice(0, 2);
  const centWords = `${cardinalWords(cents)} ${cents === '01' ? subunit : subunits}`;
  return whole === '0' ? centWords : `${main} and ${centWords}`;
}

function time(_m: string, hours: string, minutes: string, suffix: string | undefined): string {
  const hour = cardinalWords(hours);
  const minute = Number(minutes);
  const spokenSuffix = suffix ? ` ${suffix.toLowerCase().startsWith('a') ? 'a.m.' : 'p.m.'}` : '';
  if (minute === 0) return suffix ? `${hour}${spokenSuffix}` : `${hour} o'clock`;
  const minuteWords = minute < 10 ? `oh ${cardinalWords(minutes)}` : cardinalWords(minutes);
  return `${hour} ${minuteWords}${spokenSuffix}`;
}

function date(year: string, month: string, day: string): string | undefined {
  const m = Number(month);
  const d = Number(day);
  if (m < 1 || m > 12 || d < 1 || d > 31) return undefined;
  return `${MONTHS[m - 1]} ${ordinalWords(String(d))}, ${yearWords(year)}`;
}

function fraction(_m: string, numerator: string, denominator: string): string {
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
  // Times: 10:30, 6:45 a.m., 9:05pm (hours 0-23, minutes 00-59).
  out = out.replace(
    /\b([01]?\d|2[0-3]):([0-5]\d)(?::[0-5]\d)?(?:\s?([ap])\.?m\.?(?![\p{L}]))?/giu,
    (m, h: string, mi: string, s: string | undefined) => time(m, h, mi, s),
  );
  // Money: $3.50, $1,299, €20, $1.5 million.
  out = out.replace(
    /([$€£¥])\s?(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?:\s(thousand|million|billion|trillion)\b)?/gu,
    (m, symbol: string, amount: string, cents: string | undefined, scale: string | undefined) =>
      currency(m, symbol, amount, cents, scale),
  );
  // Telephone numbers: 555-0123, 555-123-4567, read digit by digit in groups.
  out = out.replace(/\b(\d{3})-(\d{3})-(\d{4})\b/gu, (_m, a: string, b: string, c: string) =>
    [a, b, c].map(digitWords).join(', '),
  );
  out = out.replace(/\b(\d{3})-(\d{4})\b/gu, (_m, a: string, b: string) => `${digitWords(a)}, ${digitWords(b)}`);
  // Units after a number: 5 km/h, 72°F, 10 kg.
  out = out.replace(UNIT_PATTERN, (_m, amount: string, unit: string) => {
    const [one, many] = UNIT_WORDS.get(unit) as readonly [string, string];
    return `${amountWords(amount)} ${isOne(amount) ? one : many}`;
  });
  // Fractions: 1/2, 3/4, 2/3 (small denominators only: 24/7 and 9/11 are not fractions).
  out = out.replace(/(?<![\d/])([1-9])\/([2-9]|1[0-2])(?![\d/])/gu, fraction);
  // Ranges of numbers: 1-5, 10–20 -> "to" (after dates and telephone numbers took theirs).
  out = out.replace(/(?<![\d.,-])(\d+)\s?[–-]\s?(\d+)(?!\d|[.,]\d)/gu, (_m, a: string, b: string) => `${a} to ${b}`);
  // Years: 1100-1999 read in pairs ("nineteen sixty-nine"); 2010-2099 too after a word that announces a year.
  out = out.replace(/(?<![\d$€£¥.,-])(1[1-9]\d\d)(?![\d.,%]|\s?(?:[%°]|\p{L}*\d))/gu, (_m, year: string) =>
    yearWords(year),
  );
  out = out.replace(
    /\b(in|since|by|of|from|until|till|before|after|year|early|late|mid|around|circa|summer|winter|spring|autumn|fall)\s(20[1-9]\d)\b(?![.,]\d)/giu,
    (_m, word: string, year: string) => `${word} ${yearWords(year)}`,
  );
  return out;
}
