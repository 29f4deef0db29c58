// Which word of the text each phoneme speaks. espeak-ng phonemizes a chunk of text into sentences of IPA with no
// trace of the words: it joins some ("of the" -> "ʌvðə", "at it" -> "æɾɪt"), reads others as several ("$3.50"), and
// ends sentences where the text has none ("Dr." is one). So each word is phonemized alone as well, and the
// chunk's phonemes are aligned to the words' phonemes in order by edit distance: a sound the word would also
// make there takes that word, and the few that differ (reductions, linking) take the word aligned beside them.
// Stress marks, spaces and punctuation are not sounds of a word: they take none.

/** A word of the input as it is reported: the text between spaces, outer punctuation trimmed. */
export interface TextWord {
  text: string;
  /** The text phonemized alone (the token with its punctuation: espeak reads "3.50" or "Dr." by it). */
  token: string;
  /** Its phonemes when they are given (SSML `<phoneme>`), not phonemized. */
  phonemes?: number[];
}

const SPEAKABLE = /[\p{L}\p{N}]/u;
const OUTER_PUNCTUATION = /^[\p{P}\p{S}]+|[\p{P}\p{S}]+$/gu;
// Characters of espeak-ng's IPA that are not a sound: spaces, stress marks, punctuation (pauses, not words).
const NOT_A_SOUND = /[\s\p{P}\u02C8\u02CC]/u;

/** The words of a chunk: tokens between white space that hold a letter or a digit. */
export function wordsOf(chunk: string): TextWord[] {
  const words: TextWord[] = [];
  for (const token of chunk.split(/\s+/u)) {
    if (!SPEAKABLE.test(token)) continue;
    const text = token.replace(OUTER_PUNCTUATION, '');
    words.push({ text: text === '' ? token : text, token });
  }
  return words;
}

/** Whether a phoneme code point is a sound (not a space, stress mark or punctuation). */
export function isSound(codePoint: number): boolean {
  return !NOT_A_SOUND.test(String.fromCodePoint(codePoint));
}

/** Cells of the alignment table above which the chunk is split evenly instead (memory stays bounded). */
const MAX_CELLS = 4_000_000;

/**
 * The word (index into `wordPhonemes`) of each phoneme of each sentence, -1 for those that are not sounds.
 * `wordPhonemes[w]` is word w phonemized alone (its sentences joined).
 */
export function wordOfEachPhoneme(sentences: readonly number[][], wordPhonemes: readonly number[][]): Int32Array[] {
  const result = sentences.map((phonemes) => new Int32Array(phonemes.length).fill(-1));
  // The sounds of the chunk, by where they are.
  const spoken: Array<{ sentence: number; index: number; sound: number }> = [];
  sentences.forEach((phonemes, sentence) => {
    phonemes.forEach((sound, index) => {
      if (isSound(sound)) spoken.push({ sentence, index, sound });
    });
  });
  const expected: Array<{ word: number; sound: number }> = [];
  wordPhonemes.forEach((phonemes, word) => {
    for (const sound of phonemes) if (isSound(sound)) expected.push({ word, sound });
  });
  if (spoken.length === 0 || expected.length === 0) return result;
  const words =
    (spoken.length + 1) * (expected.length + 1) > MAX_CELLS
      ? spoken.map((_, i) => (expected[Math.floor((i * expected.length) / spoken.length)] as { word: number }).word)
      : align(
          spoken.map((s) => s.sound),
          expected.map((e) => e.sound),
        ).map((j) => (j < 0 ? -1 : (expected[j] as { word: number }).word));
  fillGaps(words);
  spoken.forEach(({ sentence, index }, i) => {
    (result[sentence] as Int32Array)[index] = words[i] as number;
  });
  return result;
}

const DIAGONAL = 0;
const UP = 1; // a sound of the chunk no word expects
const LEFT = 2; // a sound a word expects that the chunk does not have

/** For each item of `a`, the index of the item of `b` aligned with it (Levenshtein), or -1 where none is. */
function align(a: readonly number[], b: readonly number[]): number[] {
  const n = a.length;
  const m = b.length;
  const width = m + 1;
  const cost = new Uint32Array((n + 1) * width);
  const move = new Uint8Array((n + 1) * width);
  for (let j = 1; j <= m; j++) {
    cost[j] = j;
    move[j] = LEFT;
  }
  for (let i = 1; i <= n; i++) {
    cost[i * width] = i;
    move[i * width] = UP;
    for (let j = 1; j <= m; j++) {
      const diagonal = (cost[(i - 1) * width + j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1);
      const up = (cost[(i - 1) * width + j] as number) + 1;
      const left = (cost[i * width + j - 1] as number) + 1;
      let best = diagonal;
      let step = DIAGONAL;
      if (up < best) {
        best = up;
        step = UP;
      }
      if (left < best) {
        best = left;
        step = LEFT;
      }
      cost[i * width + j] = best;
      move[i * width + j] = step;
    }
  }
  const partner = new Array<number>(n).fill(-1);
  for (let i = n, j = m; i > 0 || j > 0; ) {
    const step = move[i * width + j];
    if (step === DIAGONAL) partner[--i] = --j;
    else if (step === UP) i--;
    else j--;
  }
  return partner;
}

/** A sound aligned with no word takes the word before it (the word after it at the start). */
function fillGaps(words: number[]): void {
  let previous = -1;
  for (let i = 0; i < words.length; i++) {
    if (words[i] === -1) words[i] = previous;
    else previous = words[i] as number;
  }
  let next = -1;
  for (let i = words.length - 1; i >= 0; i--) {
    if (words[i] === -1) words[i] = next;
    else next = words[i] as number;
  }
}
