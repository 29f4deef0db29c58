// Text clean-up before espeak-ng, and splitting into chunks that are phonemized and synthesized one after another.
//
// espeak-ng reads some input badly or dangerously, measured with piper-phonemize 1.4.11:
// - a NUL ends the text ("he\0llo world" is spoken as "he"); other control characters are read as noise;
// - emoji are read by name ("thumbs up medium skin tone"), URLs character by character;
// - a 5,000-character word traps the WASM module ("memory access out of bounds") and the next call never
//   returns, so words are cut well below that;
// - runs of markup (`***`, `---`, `###`) are read as symbol names.
// Everything here is pure string work, linear in the input.

/** Longest run of non-space characters passed to espeak; longer words are cut into pieces this long. */
export const MAX_WORD_CODE_POINTS = 64;
/** Default longest chunk handed to the phonemizer at once (code points). */
export const DEFAULT_MAX_CHUNK_CODE_POINTS = 400;

const CONTROL = /[\p{Cc}]/gu; // \n is restored below: it marks line and paragraph breaks
const FORMAT = /\p{Cf}/gu; // zero-width joiners, bidi marks, soft hyphens
const EMOJI = /[\p{Extended_Pictographic}\u{1F1E6}-\u{1F1FF}\u{1F3FB}-\u{1F3FF}\u{FE0E}\u{FE0F}\u{20E3}]/gu;
const URL = /\b(?:https?:\/\/|www\.)([^\s/?#]+)[^\s]*/giu;
const MARKUP = /[*_#~`|\\^<>{}[\]=]{2,}|[*_#~`|\\^{}[\]]/gu;
const REPEATED_PUNCTUATION = /([!?.,;:-])\1+/gu;
// espeak-ng reads three or more dots exactly as it reads `…` (a pause inside the sentence, never its end), so a run
// of dots becomes one `…` instead of collapsing into a full stop, which would end the sentence there.
const DOT_RUN = /\.{3,}/gu;

/**
 * Makes text safe and pleasant for espeak-ng: removes control and format characters, emoji and markup symbols,
 * reads URLs as their host name, collapses repeated punctuation, cuts words longer than
 * {@link MAX_WORD_CODE_POINTS}, and collapses white space (keeping line breaks, which separate sentences).
 * Never throws: any string (lone surrogates included) gives a string.
 */
export function normalizeText(input: string): string {
  let text = input.toWellFormed().replace(/\uFFFD/gu, ' ');
  text = text.normalize('NFC');
  text = text.replace(/\r\n?/gu, '\n').replace(/\n/gu, '\u2029'); // keep line breaks through the control filter
  text = text.replace(CONTROL, ' ').replace(/\u2029/gu, '\n');
  text = text.replace(FORMAT, '').replace(EMOJI, ' ');
  text = text.replace(URL, (_match, host: string) => ` ${host.replace(/^www\./iu, '')} `);
  text = text.replace(MARKUP, ' ').replace(DOT_RUN, '…').replace(REPEATED_PUNCTUATION, '$1');
  text = text.replace(/\S+/gu, cutLongWord);
  text = text
    .replace(/[^\S\n]+/gu, ' ')
    .replace(/ *\n */gu, '\n')
    .replace(/\n{3,}/gu, '\n\n');
  return text.trim();
}

function cutLongWord(word: string): string {
  const codePoints = [...word];
  if (codePoints.length <= MAX_WORD_CODE_POINTS) return word;
  const pieces: string[] = [];
  for (let i = 0; i < codePoints.length; i += MAX_WORD_CODE_POINTS) {
    pieces.push(codePoints.slice(i, i + MAX_WORD_CODE_POINTS).join(''));
  }
  return pieces.join(' ');
}

// Chunks are cut only where espeak-ng itself ends a sentence, so that cutting never changes what is said (measured
// with piper-phonemize 1.4.11 and piper-tts 1.8.0's espeak-ng 1.52): after ! ? (and CJK/Arabic/Devanagari stops)
// followed by white space; after a period followed by white space unless a lowercase word comes next ("at 5 p.m. on
// Friday", "etc. to the party", "e.g. chips" stay one sentence, and "e.g." is read "for example" only there); never
// after an ellipsis; at a blank line (where espeak ends the sentence too, but drops its ! ? or . which a chunk keeps).
const SENTENCE_END = /(?<=[!?。！？؟।])\s+|(?<=(?<!\.)\.)\s+(?![\s\p{Ll}])|\n{2,}/gu;

/**
 * Splits normalized text into chunks of whole sentences, each at most `maxCodePoints` long, so the first audio
 * is ready after the first sentence. A sentence longer than the limit is cut at the last comma, semicolon or
 * colon before it, else at the last space, else hard.
 */
export function splitIntoChunks(text: string, maxCodePoints = DEFAULT_MAX_CHUNK_CODE_POINTS): string[] {
  const chunks: string[] = [];
  for (const sentence of text.split(SENTENCE_END)) {
    // Code points once, then indices: re-spreading the rest after every cut would be quadratic.
    const points = [...sentence.trim()];
    let start = 0;
    while (points.length - start > maxCodePoints) {
      const end = start + maxCodePoints;
      let cut = -1;
      for (let i = end - 1; i > start && cut < 0; i--) {
        if (points[i] === ' ' && [',', ';', ':'].includes(points[i - 1] as string)) cut = i;
      }
      for (let i = end; i > start && cut < 0; i--) if (points[i] === ' ') cut = i;
      if (cut < 0) cut = end;
      chunks.push(points.slice(start, cut).join('').trim());
      start = cut;
      while (points[start] === ' ') start++;
    }
    const rest = points.slice(start).join('').trim();
    if (rest.length > 0) chunks.push(rest);
  }
  return chunks.filter((chunk) => chunk.length > 0);
}

/**
 * Where the complete sentences of text that is still arriving end: the end of the last sentence boundary (as
 * {@link splitIntoChunks} cuts normalized text) that a later letter or digit confirms, else 0; the search starts at
 * `from`. A full stop must be followed by a word that is not lowercase, looking past what normalization removes
 * (markup, emoji), so "e.g. **bold**" and "p.m. on Friday" stay one sentence; a full stop at the very end waits.
 */
export function completeTextEnd(text: string, from = 0): number {
  let end = 0;
  // The global pattern's lastIndex is set before every search (split() does not use it).
  SENTENCE_END.lastIndex = Math.max(0, from - 2); // the pattern looks back two characters
  for (let match = SENTENCE_END.exec(text); match; match = SENTENCE_END.exec(text)) {
    const after = match.index + match[0].length;
    const next = SPEAKABLE.exec(text.slice(after));
    if (!next) break; // nothing speakable yet: this cut is not confirmed, nor any later one
    // After a full stop (not at a blank line) a lowercase word goes on with the sentence.
    if (text[match.index - 1] === '.' && !match[0].includes('\n\n') && /\p{Ll}/u.test(next[0])) continue;
    end = after;
  }
  return end;
}

const SPEAKABLE = /[\p{L}\p{N}]/u;

/** Whether normalized text has anything a voice could say (a letter or a digit). */
export function hasSpeakableText(text: string): boolean {
  return /[\p{L}\p{N}]/u.test(text);
}
