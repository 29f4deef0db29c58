// English number words: cardinals, ordinals, years, digit strings and decimals, for the English text normalizer.
// Integers are handled exactly up to 10^15 - 1 (strings of digits, never floats); longer ones are read digit by digit.

const ONES = [
  'zero',
  'one',
  'two',
  'three',
  'four',
  'five',
  'six',
  'seven',
  'eight',
  'nine',
  'ten',
  'eleven',
  'twelve',
  'thirteen',
  'fourteen',
  'fifteen',
  'sixteen',
  'seventeen',
  'eighteen',
  'nineteen',
];
const TENS = ['', '', 'twenty', 'thirty', 'forty', 'fifty', 'sixty', 'seventy', 'eighty', 'ninety'];
const SCALES = ['', 'thousand', 'million', 'billion', 'trillion'];
/** Longest integer read as a number (15 digits: up to 999 trillion); longer ones are read digit by digit. */
const MAX_CARDINAL_DIGITS = 15;

function belowHundred(n: number): string {
  if (n < 20) return ONES[n] as string;
  const tens = TENS[Math.floor(n / 10)] as string;
  return n % 10 === 0 ? tens : `${tens}-${ONES[n % 10]}`;
}

function belowThousand(n: number): string {
  const hundreds = Math.floor(n / 100);
  const rest = n % 100;
  if (hundreds === 0) return belowHundred(rest);
  return rest === 0 ? `${ONES[hundreds]} hundred` : `${ONES[hundreds]} hundred ${belowHundred(rest)}`;
}

/** Each digit as a word: "0123" -> "zero one two three". */
export function digitWords(digits: string): string {
  return [...digits].map((d) => ONES[Number(d)] ?? d).join(' ');
}

/** A cardinal from a string of digits: "1299" -> "one thousand two hundred ninety-nine". */
export function cardinalWords(digits: string): string {
  const trimmed = digits.replace(/^0+(?=\d)/u, '');
  if (trimmed.length > MAX_CARDINAL_DIGITS) return digitWords(digits);
  if (trimmed === '0') return 'zero';
  const groups: number[] = [];
  for (let end = trimmed.length; end > 0; end -= 3) groups.unshift(Number(trimmed.slice(Math.max(0, end - 3), end)));
  const words: string[] = [];
  groups.forEach((group, i) => {
    if (group === 0) return;
    const scale = SCALES[groups.length - 1 - i] as string;
    words.push(scale === '' ? belowThousand(group) : `${belowThousand(group)} ${scale}`);
  });
  return words.join(' ');
}

const IRREGULAR_ORDINALS: Record<string, string> = {
  one: 'first',
  two: 'second',
  three: 'third',
  five: 'fifth',
  eight: 'eighth',
  nine: 'ninth',
  twelve: 'twelfth',
};

/** An ordinal from a string of digits: "21" -> "twenty-first". */
export function ordinalWords(digits: string): string {
  const cardinal = cardinalWords(digits);
  return cardinal.replace(/([a-z]+)$/u, (last: string) => {
    const irregular = IRREGULAR_ORDINALS[last];
    if (irregular) return irregular;
    if (last.endsWith('y')) return `${last.slice(0, -1)}ieth`;
    return `${last}th`;
  });
}

/** A year as people say it: 1969 -> "nineteen sixty-nine", 2005 -> "two thousand five", 1900 -> "nineteen hundred". */
export function yearWords(digits: string): string {
  const year = Number(digits);
  if (digits.length !== 4 || year < 1000) return cardinalWords(digits);
  const high = Math.floor(year / 100);
  const low = year % 100;
  if (year >= 2000 && year < 2010) return cardinalWords(digits);
  if (low === 0) return `${belowHundred(high)} hundred`;
  return `${belowHundred(high)} ${low < 10 ? `oh ${ONES[low]}` : belowHundred(low)}`;
}

/** A decimal: "3.5" -> "three point five", with the digits after the point one by one. */
export function decimalWords(whole: string, fraction: string): string {
  const integer = whole === '' ? 'zero' : cardinalWords(whole);
  return fraction === '' ? integer : `${integer} point ${digitWords(fraction)}`;
}
