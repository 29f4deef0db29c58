// SSML input (text that starts with `<speak`): the subset voxmill reads, turned into a flat list of what to say, at
// which rate, and where to pause. Elements: speak, p, s, break (time | strength), say-as (interpret-as characters,
// spell-out, cardinal, ordinal, digits, date, time, telephone), phoneme (alphabet="ipa" ph), sub (alias), prosody
// (rate), voice (name: another installed voice or speaker), emphasis (accepted, no effect). Anything else, and any attribute an element does not take, is an error
// naming it and its place; the text of a document without markup reads as the same text would.
import { InvalidOptionValueError } from '../../errors.js';
import { normalizeEnglish } from '../normalize/english.js';
import { cardinalWords, digitWords, ordinalWords } from '../normalize/number-words.js';
import { parseXml, type XmlElement, type XmlNode, XmlSyntaxError } from './parse-xml.js';

/** What an SSML document asks for, in order. */
export type SsmlItem =
  /**
   * Text to speak (`rate`: the factor on the voice's length scale, 2 is half as fast; `voice`: the voice id of an
   * enclosing `<voice name>`, undefined for the request's own).
   */
  | ({ kind: 'text'; text: string } & Style)
  /** IPA phonemes spoken as given, standing for `text` (word timings report `text`). */
  | ({ kind: 'phonemes'; ipa: string; text: string } & Style)
  /** Silence, in seconds, in place of the pause between sentences there. */
  | { kind: 'pause'; seconds: number }
  /** A sentence ends here (the edges of `<s>` and `<p>`). */
  | { kind: 'boundary' };

/** How the text inside an element is spoken. */
export interface Style {
  rate: number;
  voice: string | undefined;
  /** Where the enclosing `<voice>` starts (for an error about its name). */
  voiceAt?: number;
}

/** Longest `<break>` accepted, in seconds. */
export const MAX_BREAK_SECONDS = 10;
/** Most silence all the breaks of one document may add up to, in seconds (a request's audio stays bounded). */
export const MAX_TOTAL_BREAK_SECONDS = 60;
/** The `<break strength>` pauses, in seconds (medium is Piper's own sentence pause). */
const BREAK_STRENGTHS: Record<string, number> = {
  none: 0,
  'x-weak': 0.1,
  weak: 0.15,
  medium: 0.2,
  strong: 0.4,
  'x-strong': 0.8,
};
/** `<prosody rate>` labels as speaking rates (1 = the voice's own). */
const RATES: Record<string, number> = { 'x-slow': 0.5, slow: 0.75, medium: 1, fast: 1.25, 'x-fast': 1.75, default: 1 };
/** Speaking rates accepted as percentages. */
const RATE_RANGE = [20, 400] as const;

const ATTRIBUTES: Record<string, readonly string[]> = {
  speak: ['version', 'xmlns', 'xml:lang', 'xmlns:xsi', 'xsi:schemaLocation'],
  p: ['xml:lang'],
  s: ['xml:lang'],
  break: ['time', 'strength'],
  'say-as': ['interpret-as', 'format', 'detail'],
  phoneme: ['alphabet', 'ph'],
  sub: ['alias'],
  prosody: ['rate'],
  emphasis: ['level'],
  voice: ['name'],
};

/** Whether text is SSML (starts with `<speak`, after white space). */
export function isSsml(text: string): boolean {
  return /^\s*(?:<\?xml[^>]*\?>\s*)?<speak[\s>/]/u.test(text);
}

class SsmlError extends Error {
  constructor(
    message: string,
    readonly at: number,
  ) {
    super(`${message} at character ${at + 1}`);
  }
}

/** The error for a problem at `at` in an SSML document (a `<voice>` naming no installed voice, found later). */
export function ssmlError(input: string, message: string, at: number, field = 'input'): InvalidOptionValueError {
  return new InvalidOptionValueError(field, `SSML voxmill can read (${message} at character ${at + 1})`, input);
}

/** Reads an SSML document; throws InvalidOptionValueError naming `field` and the place of the problem. */
export function parseSsml(input: string, field = 'input'): SsmlItem[] {
  try {
    const root = parseXml(input);
    if (root.name !== 'speak') throw new SsmlError(`the root element must be <speak>, not <${root.name}>`, root.at);
    const items: SsmlItem[] = [];
    walk(root, { rate: 1, voice: undefined }, items);
    let silence = 0;
    for (const item of items) if (item.kind === 'pause') silence += item.seconds;
    if (silence > MAX_TOTAL_BREAK_SECONDS) {
      throw new SsmlError(`the breaks add up to ${silence} s, more than ${MAX_TOTAL_BREAK_SECONDS} s`, 0);
    }
    return items;
  } catch (error) {
    if (error instanceof XmlSyntaxError || error instanceof SsmlError) {
      throw new InvalidOptionValueError(field, `SSML voxmill can read (${error.message})`, input);
    }
    throw error;
  }
}

function walk(element: XmlElement, style: Style, items: SsmlItem[]): void {
  const allowed = ATTRIBUTES[element.name];
  if (!allowed) throw new SsmlError(`<${element.name}> is not supported`, element.at);
  for (const name of element.attributes.keys()) {
    if (!allowed.includes(name)) throw new SsmlError(`<${element.name}> has no attribute ${name}`, element.at);
  }
  const attribute = (name: string) => element.attributes.get(name);
  switch (element.name) {
    case 'break':
      items.push({ kind: 'pause', seconds: breakSeconds(element) });
      return;
    case 'p':
    case 's':
      items.push({ kind: 'boundary' });
      children(element, style, items);
      items.push({ kind: 'boundary' });
      return;
    case 'say-as':
      items.push({ kind: 'text', text: sayAs(element), ...style });
      return;
    case 'phoneme': {
      if ((attribute('alphabet') ?? 'ipa') !== 'ipa') {
        throw new SsmlError(`<phoneme alphabet="${attribute('alphabet')}"> is not supported (only "ipa")`, element.at);
      }
      const ipa = attribute('ph');
      if (ipa === undefined || ipa.trim() === '') throw new SsmlError('<phoneme> needs ph', element.at);
      items.push({ kind: 'phonemes', ipa: ipa.trim(), text: textOf(element).trim() || ipa.trim(), ...style });
      return;
    }
    case 'sub': {
      const alias = attribute('alias');
      if (alias === undefined) throw new SsmlError('<sub> needs alias', element.at);
      items.push({ kind: 'text', text: alias, ...style });
      return;
    }
    case 'prosody': {
      const value = attribute('rate');
      const rate = value === undefined ? style.rate : style.rate / speakingRate(value, element.at);
      // Nested rates multiply; the result stays within the range one rate may have.
      if (rate > 100 / RATE_RANGE[0] || rate < 100 / RATE_RANGE[1]) {
        throw new SsmlError(
          `nested <prosody rate> come to ${(100 / rate).toFixed(0)}%, outside ${RATE_RANGE[0]}%-${RATE_RANGE[1]}%`,
          element.at,
        );
      }
      children(element, { ...style, rate }, items);
      return;
    }
    case 'voice': {
      const name = attribute('name')?.trim();
      if (!name) throw new SsmlError('<voice> needs name (a voice id)', element.at);
      // A voice change is a new sentence: the voices do not share one.
      items.push({ kind: 'boundary' });
      children(element, { ...style, voice: name, voiceAt: element.at }, items);
      items.push({ kind: 'boundary' });
      return;
    }
    default:
      // speak, emphasis
      children(element, style, items);
  }
}

function children(element: XmlElement, style: Style, items: SsmlItem[]): void {
  for (const child of element.children) {
    if (child.kind === 'text') {
      if (child.text.trim() !== '') items.push({ kind: 'text', text: child.text, ...style });
      else if (child.text.length > 0) items.push({ kind: 'text', text: ' ', ...style });
    } else walk(child, style, items);
  }
}

/** The text inside an element that may hold only text. */
function textOf(element: XmlElement): string {
  return element.children
    .map((child: XmlNode) => {
      if (child.kind === 'element') throw new SsmlError(`<${element.name}> may hold only text`, child.at);
      return child.text;
    })
    .join('');
}

function breakSeconds(element: XmlElement): number {
  const time = element.attributes.get('time');
  if (time !== undefined) {
    const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s)\s*$/u.exec(time);
    if (!match) throw new SsmlError(`<break time="${time}"> must be a duration such as 500ms or 1.5s`, element.at);
    const seconds = Number(match[1]) / (match[2] === 'ms' ? 1000 : 1);
    if (seconds > MAX_BREAK_SECONDS) {
      throw new SsmlError(`<break time="${time}"> is longer than ${MAX_BREAK_SECONDS} s`, element.at);
    }
    return seconds;
  }
  const strength = element.attributes.get('strength') ?? 'medium';
  const seconds = BREAK_STRENGTHS[strength];
  if (seconds === undefined) {
    throw new SsmlError(
      `<break strength="${strength}"> must be one of ${Object.keys(BREAK_STRENGTHS).join(', ')}`,
      element.at,
    );
  }
  return seconds;
}

function speakingRate(value: string, at: number): number {
  const named = RATES[value.trim()];
  if (named !== undefined) return named;
  const match = /^\s*(\d+(?:\.\d+)?)%\s*$/u.exec(value);
  const percent = match ? Number(match[1]) : Number.NaN;
  if (!(percent >= RATE_RANGE[0] && percent <= RATE_RANGE[1])) {
    throw new SsmlError(
      `<prosody rate="${value}"> must be ${Object.keys(RATES).join(', ')} or ${RATE_RANGE[0]}%-${RATE_RANGE[1]}%`,
      at,
    );
  }
  return percent / 100;
}

const SAY_AS = ['characters', 'spell-out', 'cardinal', 'number', 'ordinal', 'digits', 'date', 'time', 'telephone'];

/** The words a `<say-as>` stands for (English number words). */
function sayAs(element: XmlElement): string {
  const kind = element.attributes.get('interpret-as');
  const text = textOf(element).trim();
  if (kind === undefined || !SAY_AS.includes(kind)) {
    throw new SsmlError(`<say-as> needs interpret-as, one of ${SAY_AS.join(', ')}`, element.at);
  }
  const digits = text.replace(/[\s,]/gu, '');
  const fail = (what: string): never => {
    throw new SsmlError(`<say-as interpret-as="${kind}"> needs ${what}, not "${text}"`, element.at);
  };
  switch (kind) {
    case 'characters':
    case 'spell-out':
      // Letters one by one, as capitals between commas: espeak-ng reads "C, A, T" as the letters' names in one
      // sentence ("c a t" reads the "a" as the article; "C. A. T." ends a sentence after each letter).
      return [...text.replace(/\s+/gu, '')].map((c) => c.toUpperCase()).join(', ');
    case 'cardinal':
    case 'number':
      return /^\d{1,15}$/u.test(digits) ? cardinalWords(digits) : fail('a whole number');
    case 'ordinal':
      return /^\d{1,15}(?:st|nd|rd|th)?$/u.test(digits)
        ? ordinalWords(digits.replace(/\D/gu, ''))
        : fail('a whole number');
    case 'digits':
      return /^\d+$/u.test(digits) ? digitWords(digits) : fail('digits');
    case 'telephone':
      return /^[\d\s().+-]+$/u.test(text)
        ? text
            .split(/[^\d]+/u)
            .filter((group) => group !== '')
            .map(digitWords)
            .join(', ')
        : fail('a telephone number');
    case 'date':
      return dateWords(text, element.attributes.get('format') ?? 'mdy', fail);
    default: {
      // time
      if (!/^\d{1,2}:\d{2}(?::\d{2})?(?:\s?[ap]\.?m\.?)?$/iu.test(text)) return fail('a time such as 10:30 or 6:45 pm');
      const spoken = normalizeEnglish(text);
      return spoken === text ? fail('a valid time') : spoken;
    }
  }
}

function dateWords(text: string, format: string, fail: (what: string) => never): string {
  const parts = text.split(/[-/.\s]+/u).filter((p) => p !== '');
  const order = format.toLowerCase();
  if (!/^[dmy]{3}$/u.test(order) || new Set(order).size !== 3 || parts.length !== 3) {
    return fail('a date of three numbers in the order of format (mdy, dmy, ymd)');
  }
  const value = (letter: string) => parts[order.indexOf(letter)] as string;
  const [year, month, day] = [value('y'), value('m'), value('d')];
  const valid =
    /^\d{4}$/u.test(year) &&
    /^\d{1,2}$/u.test(month) &&
    /^\d{1,2}$/u.test(day) &&
    Number(month) >= 1 &&
    Number(month) <= 12 &&
    Number(day) >= 1 &&
    Number(day) <= 31;
  if (!valid) return fail('a valid date');
  return normalizeEnglish(`${year}-${month.padStart(2, '0')}-${day.padStart(2, '0')}`);
}
