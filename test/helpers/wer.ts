// Word error rate for the accuracy tier: an English text normalizer in the spirit of Whisper's
// EnglishTextNormalizer (the one its papers and most ASR comparisons score with), and word-level Levenshtein
// alignment. Reference and hypothesis go through the same normalizer, so what matters is that every spelling of one
// spoken phrase ends up as one string: "Forty-two" and "42", "Mr." and "mister", "counselled" and "counseled",
// "it's" and "it is" all compare equal; case and punctuation never count.
//
// Written for this project (no npm package does it); it covers the common cases of Whisper's normalizer, not every
// corner (currencies are only attached to their numbers, "and a half" is left alone, the spelling list is short).

/** Contractions and abbreviated titles, spelled out (applied in this order, after lowercasing). */
const REPLACEMENTS: readonly [RegExp, string][] = [
  [/\bwon't\b/g, 'will not'],
  [/\bcan't\b/g, 'can not'],
  [/\blet's\b/g, 'let us'],
  [/\bain't\b/g, 'aint'],
  [/\by'all\b/g, 'you all'],
  [/\bwanna\b/g, 'want to'],
  [/\bgotta\b/g, 'got to'],
  [/\bgonna\b/g, 'going to'],
  [/\bi'ma\b/g, 'i am going to'],
  [/\bimma\b/g, 'i am going to'],
  [/\bwoulda\b/g, 'would have'],
  [/\bcoulda\b/g, 'could have'],
  [/\bshoulda\b/g, 'should have'],
  [/\bma'am\b/g, 'madam'],
  [/\bmr\b/g, 'mister '],
  [/\bmrs\b/g, 'missus '],
  [/\bms\b/g, 'miss '],
  [/\bst\b/g, 'saint '],
  [/\bdr\b/g, 'doctor '],
  [/\bprof\b/g, 'professor '],
  [/\bcapt\b/g, 'captain '],
  [/\bgov\b/g, 'governor '],
  [/\bgen\b/g, 'general '],
  [/\bsen\b/g, 'senator '],
  [/\brep\b/g, 'representative '],
  [/\bpres\b/g, 'president '],
  [/\brev\b/g, 'reverend '],
  [/\bhon\b/g, 'honorable '],
  [/\blt\b/g, 'lieutenant '],
  [/\bcol\b/g, 'colonel '],
  [/\bjr\b/g, 'junior '],
  [/\bsr\b/g, 'senior '],
  [/'d been\b/g, ' had been'],
  [/'s been\b/g, ' has been'],
  [/'d gone\b/g, ' had gone'],
  [/'s gone\b/g, ' has gone'],
  [/'d done\b/g, ' had done'],
  [/'s got\b/g, ' has got'],
  [/n't\b/g, ' not'],
  [/'re\b/g, ' are'],
  // Possessive and "is" alike (as Whisper's normalizer does): both sides get the same treatment.
  [/'s\b/g, ' is'],
  [/'d\b/g, ' would'],
  [/'ll\b/g, ' will'],
  [/'t\b/g, ' not'],
  [/'ve\b/g, ' have'],
  [/'m\b/g, ' am'],
];

/** Fillers that never count. */
const FILLERS = /\b(hmm|mm|mhm|mmm|uh|um)\b/g;

/** Letters NFKD does not decompose. */
const LETTERS: Record<string, string> = {
  œ: 'oe',
  ø: 'o',
  æ: 'ae',
  ß: 'ss',
  đ: 'd',
  ð: 'd',
  þ: 'th',
  ł: 'l',
};

/** British spellings and their American forms (a short list of the common ones; extend as clips need). */
const SPELLINGS: Record<string, string> = Object.fromEntries(
  [
    'analyse:analyze',
    'apologise:apologize',
    'armour:armor',
    'behaviour:behavior',
    'cancelled:canceled',
    'cancelling:canceling',
    'catalogue:catalog',
    'centre:center',
    'centres:centers',
    'colour:color',
    'coloured:colored',
    'colours:colors',
    'counselled:counseled',
    'counselling:counseling',
    'counsellor:counselor',
    'defence:defense',
    'favour:favor',
    'favourite:favorite',
    'fibre:fiber',
    'grey:gray',
    'harbour:harbor',
    'honour:honor',
    'honoured:honored',
    'humour:humor',
    'jewellery:jewelry',
    'labelled:labeled',
    'labour:labor',
    'licence:license',
    'litre:liter',
    'manoeuvre:maneuver',
    'metre:meter',
    'modelled:modeled',
    'neighbour:neighbor',
    'neighbours:neighbors',
    'offence:offense',
    'organise:organize',
    'organised:organized',
    'parlour:parlor',
    'practise:practice',
    'programme:program',
    'realise:realize',
    'realised:realized',
    'recognise:recognize',
    'recognised:recognized',
    'rumour:rumor',
    'savour:savor',
    'splendour:splendor',
    'theatre:theater',
    'travelled:traveled',
    'traveller:traveler',
    'travelling:traveling',
    'valour:valor',
    'vapour:vapor',
    'vigour:vigor',
  ].map((pair) => pair.split(':') as [string, string]),
);

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
const MULTIPLIERS: Record<string, number> = {
  hundred: 100,
  thousand: 1_000,
  million: 1_000_000,
  billion: 1_000_000_000,
  trillion: 1_000_000_000_000,
};
const IRREGULAR_ORDINALS: Record<string, number> = { first: 1, second: 2, third: 3, fifth: 5, twelfth: 12 };

interface NumberWord {
  kind: 'one' | 'ten' | 'multiplier';
  value: number;
  /** "th", "st", "s" …: the word ends the number and keeps this suffix (ordinals, plurals). */
  suffix?: string;
}

function ordinalSuffix(n: number): string {
  if (n % 100 >= 11 && n % 100 <= 13) return 'th';
  return ['th', 'st', 'nd', 'rd'][n % 10] ?? 'th';
}

/** Every spelled number word with what it stands for. */
const NUMBER_WORDS: ReadonlyMap<string, NumberWord> = (() => {
  const map = new Map<string, NumberWord>();
  ONES.forEach((name, value) => {
    if (value === 0) return; // zero is a digit, handled on its own
    map.set(name, { kind: 'one', value });
    map.set(name === 'six' ? 'sixes' : `${name}s`, { kind: 'one', value, suffix: 's' });
    const ordinal = name === 'nine' ? 'ninth' : name.endsWith('t') ? `${name}h` : `${name}th`;
    if (!Object.values(IRREGULAR_ORDINALS).includes(value)) map.set(ordinal, { kind: 'one', value, suffix: 'th' });
  });
  for (const [name, value] of Object.entries(IRREGULAR_ORDINALS)) {
    map.set(name, { kind: 'one', value, suffix: ordinalSuffix(value) });
  }
  TENS.forEach((name, index) => {
    if (name === '') return;
    const value = index * 10;
    map.set(name, { kind: 'ten', value });
    map.set(name.replace(/y$/, 'ies'), { kind: 'ten', value, suffix: 's' });
    map.set(name.replace(/y$/, 'ieth'), { kind: 'ten', value, suffix: 'th' });
  });
  for (const [name, value] of Object.entries(MULTIPLIERS)) {
    map.set(name, { kind: 'multiplier', value });
    map.set(`${name}s`, { kind: 'multiplier', value, suffix: 's' });
    map.set(`${name}th`, { kind: 'multiplier', value, suffix: 'th' });
  }
  return map;
})();

const DIGITS = /^\d+(\.\d+)?$/;

function isNumeric(word: string | undefined): boolean {
  return word !== undefined && (NUMBER_WORDS.has(word) || DIGITS.test(word) || word === 'zero');
}

/**
 * Spelled-out numbers to digits, the way Whisper's normalizer reads them: "twenty one" -> 21, "two hundred and
 * five" -> 205, "nineteen sixty four" -> 1964 (a year: digits concatenated), "fifth" -> 5th, "nineties" -> 90s,
 * "forty percent" -> 40%, "three point five" -> 3.5. A value is a number while arithmetic applies and a digit
 * string once digits were concatenated.
 */
function standardizeNumbers(words: readonly string[]): string[] {
  const out: string[] = [];
  let value: number | string | undefined;
  const flush = (): void => {
    if (value !== undefined) out.push(String(value));
    value = undefined;
  };
  /** Adds a one/ten to the running value (add when the place is free, else concatenate). */
  const combine = (word: NumberWord, prev: string | undefined): number | string => {
    const n = word.value;
    if (value === undefined) return n;
    const prevWord = prev === undefined ? undefined : NUMBER_WORDS.get(prev);
    const afterDigit = word.kind === 'one' && prevWord?.kind === 'one' && prevWord.suffix === undefined;
    if (typeof value === 'string' || afterDigit) {
      // "fourteen fifty five": the five takes the place of the fifty's zero.
      if (prevWord?.kind === 'ten' && word.kind === 'one' && n < 10 && String(value).endsWith('0')) {
        return String(value).slice(0, -1) + n;
      }
      return String(value) + n;
    }
    const place = word.kind === 'one' && n < 10 ? 10 : 100;
    return value % place === 0 ? value + n : String(value) + n;
  };
  for (let i = 0; i < words.length; i++) {
    const prev = words[i - 1];
    const word = words[i]!;
    const next = words[i + 1];
    const spelled = NUMBER_WORDS.get(word);
    if (DIGITS.test(word)) {
      if (typeof value === 'string' && value.endsWith('.')) {
        value += word;
        continue;
      }
      flush();
      value = word.includes('.') ? word : Number(word);
    } else if (word === 'zero') {
      value = `${value ?? ''}0`;
    } else if (spelled && spelled.kind !== 'multiplier') {
      const combined = combine(spelled, prev);
      if (spelled.suffix !== undefined) {
        out.push(String(combined) + spelled.suffix);
        value = undefined;
      } else {
        value = combined;
      }
    } else if (spelled) {
      let combined: number | string = spelled.value;
      if (typeof value === 'number' && value !== 0) {
        combined = Math.floor(value / 1000) * 1000 + (value % 1000) * spelled.value;
      } else if (value !== undefined) {
        const product = Number(value) * spelled.value;
        if (Number.isInteger(product)) combined = product;
        else flush();
      }
      if (spelled.suffix !== undefined) {
        out.push(String(combined) + spelled.suffix);
        value = undefined;
      } else {
        value = combined;
      }
    } else if (word === 'and' && value !== undefined && prev !== undefined && prev in MULTIPLIERS && isNumeric(next)) {
      // "two hundred and five": the "and" belongs to the number.
    } else if (word === 'point' && isNumeric(next)) {
      value = `${value ?? ''}.`;
    } else if (word === 'percent' && value !== undefined) {
      out.push(`${value}%`);
      value = undefined;
    } else {
      flush();
      out.push(word);
    }
  }
  flush();
  // "one" reads better than "1" and is what both sides say most of the time.
  return out.map((w) => w.replace(/^1(s?)$/, 'one$1'));
}

/** Marks, symbols and punctuation to spaces, diacritics dropped (NFKD), except the characters in `keep`. */
function removeSymbolsAndDiacritics(text: string, keep: string): string {
  let result = '';
  for (const c of text.normalize('NFKD')) {
    if (keep.includes(c)) result += c;
    else if (LETTERS[c] !== undefined) result += LETTERS[c];
    else if (/\p{Mn}/u.test(c)) continue;
    else if (/[\p{M}\p{S}\p{P}]/u.test(c)) result += ' ';
    else result += c;
  }
  return result;
}

/** Normalizes English text for scoring; returns space-separated words (empty string for none). */
export function normalizeEnglish(text: string): string {
  let s = text.toLowerCase().replace(/[\u2018\u2019\u02bc]/g, "'");
  s = s.replace(/[<[][^>\]]*[>\]]/g, ''); // [MUSIC], <unk>
  s = s.replace(/\(([^)]+?)\)/g, ''); // (laughs)
  s = s.replace(FILLERS, '');
  s = s.replace(/\s+'/g, "'");
  for (const [pattern, replacement] of REPLACEMENTS) s = s.replace(pattern, replacement);
  s = s.replace(/\b(?:[a-z]\.){2,}/g, (m) => m.replace(/\./g, '')); // p.m. -> pm, u.s. -> us
  s = s.replace(/(\d{1,2})[.:](\d\d)(?=\s*(?:am|pm)\b)/g, '$1 $2'); // 10:30 am = 10.30 am
  s = s.replace(/(\d),(\d)/g, '$1$2'); // 1,000
  s = s.replace(/\.([^0-9]|$)/g, ' $1'); // sentence ends, not decimals
  s = removeSymbolsAndDiacritics(s, '.%$¢€£');
  s = s.replace(/([a-z])([0-9])/g, '$1 $2').replace(/([0-9])([a-z])/g, '$1 $2');
  s = s.replace(/([0-9])\s+(st|nd|rd|th|s)\b/g, '$1$2'); // 1960 s -> 1960s
  const words = standardizeNumbers(s.split(/\s+/).filter((w) => w !== '')).map((w) => SPELLINGS[w] ?? w);
  s = words.join(' ');
  s = s.replace(/([$¢€£])\s+([0-9])/g, '$1$2').replace(/([0-9])\s+%/g, '$1%');
  s = s.replace(/[.$¢€£]([^0-9]|$)/g, ' $1').replace(/([^0-9])%/g, '$1 ');
  return s.replace(/\s+/g, ' ').trim();
}

/** The normalized words of `text`. */
export function normalizedWords(text: string, normalize: (text: string) => string = normalizeEnglish): string[] {
  const normalized = normalize(text);
  return normalized === '' ? [] : normalized.split(' ');
}

export type EditOp =
  | { op: 'equal'; ref: number; hyp: number }
  | { op: 'sub'; ref: number; hyp: number }
  | { op: 'del'; ref: number }
  | { op: 'ins'; hyp: number };

/**
 * A minimum-edit alignment of two word sequences (unit costs), in order. Among equally cheap alignments it prefers
 * matches and substitutions, then deletions, so the counts are stable for a given pair.
 */
export function alignWords(ref: readonly string[], hyp: readonly string[]): EditOp[] {
  const rows = ref.length + 1;
  const cols = hyp.length + 1;
  const cost = new Uint32Array(rows * cols);
  for (let i = 0; i < rows; i++) cost[i * cols] = i;
  for (let j = 0; j < cols; j++) cost[j] = j;
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const diagonal = cost[(i - 1) * cols + j - 1]! + (ref[i - 1] === hyp[j - 1] ? 0 : 1);
      const del = cost[(i - 1) * cols + j]! + 1;
      const ins = cost[i * cols + j - 1]! + 1;
      cost[i * cols + j] = Math.min(diagonal, del, ins);
    }
  }
  const ops: EditOp[] = [];
  let i = ref.length;
  let j = hyp.length;
  while (i > 0 || j > 0) {
    const here = cost[i * cols + j]!;
    if (i > 0 && j > 0) {
      const same = ref[i - 1] === hyp[j - 1];
      if (here === cost[(i - 1) * cols + j - 1]! + (same ? 0 : 1)) {
        ops.push({ op: same ? 'equal' : 'sub', ref: i - 1, hyp: j - 1 });
        i--;
        j--;
        continue;
      }
    }
    if (i > 0 && here === cost[(i - 1) * cols + j]! + 1) {
      ops.push({ op: 'del', ref: i - 1 });
      i--;
    } else {
      ops.push({ op: 'ins', hyp: j - 1 });
      j--;
    }
  }
  return ops.reverse();
}

export interface WerResult {
  /** errors / refWords (0 when both are empty; Infinity for words against an empty reference). */
  wer: number;
  errors: number;
  refWords: number;
  hypWords: number;
  sub: number;
  del: number;
  ins: number;
}

/** Word error rate of `hypothesis` against `reference`, both normalized first. */
export function wordErrorRate(
  reference: string,
  hypothesis: string,
  normalize: (text: string) => string = normalizeEnglish,
): WerResult {
  const ref = normalizedWords(reference, normalize);
  const hyp = normalizedWords(hypothesis, normalize);
  const counts = { sub: 0, del: 0, ins: 0 };
  for (const step of alignWords(ref, hyp)) if (step.op !== 'equal') counts[step.op]++;
  const errors = counts.sub + counts.del + counts.ins;
  const wer = ref.length > 0 ? errors / ref.length : errors === 0 ? 0 : Number.POSITIVE_INFINITY;
  return { wer, errors, refWords: ref.length, hypWords: hyp.length, ...counts };
}

/** Corpus WER: all errors over all reference words (what "WER over a test set" means, not a mean of rates). */
export function corpusWer(results: readonly WerResult[]): number {
  const refWords = results.reduce((sum, r) => sum + r.refWords, 0);
  const errors = results.reduce((sum, r) => sum + r.errors, 0);
  return refWords > 0 ? errors / refWords : errors === 0 ? 0 : Number.POSITIVE_INFINITY;
}
