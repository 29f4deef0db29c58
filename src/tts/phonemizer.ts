// Text to Piper's phonemes: espeak-ng in the addon gives each clause's IPA and its terminator (native/
// phonemizer_core.cc); this turns them into sentences of phoneme code points exactly as piper-phonemize does
// (phonemize_eSpeak): the phonemes decomposed (NFD: "ç" is "c" and U+0327), espeak-ng's language-switch flags such
// as "(fr)" dropped (the phonemes after them stay), the punctuation that ends a clause added as phonemes, and a new
// sentence begun after a clause that ends one. Checked against piper-phonemize's own build on 142 texts in 20
// languages: the same code points (BENCHMARKS.md, "Piper inside the addon").
import { isNativeError, type NativeClause, native, nativeAssets } from '../native.js';
import { abortReason, untilAborted } from '../util/job.js';

// espeak-ng's clause terminator flags (translate.h): the punctuation and intonation kind in the low 20 bits, and
// whether the clause ends a sentence.
const CLAUSE_KIND = 0x000f_ffff;
const CLAUSE_TYPE_SENTENCE = 0x0008_0000;
const CLAUSE_TYPE_CLAUSE = 0x0004_0000;
const INTONATION_COMMA = 0x1000;
const INTONATION_QUESTION = 0x2000;
const INTONATION_EXCLAMATION = 0x3000;

/** The phonemes piper-phonemize adds after a clause that ends with each kind of punctuation. */
const PUNCTUATION = new Map<number, number[]>([
  [40 | CLAUSE_TYPE_SENTENCE, [0x2e]], // .
  [40 | INTONATION_QUESTION | CLAUSE_TYPE_SENTENCE, [0x3f]], // ?
  [45 | INTONATION_EXCLAMATION | CLAUSE_TYPE_SENTENCE, [0x21]], // !
  [20 | INTONATION_COMMA | CLAUSE_TYPE_CLAUSE, [0x2c, 0x20]], // ", "
  [30 | CLAUSE_TYPE_CLAUSE, [0x3a, 0x20]], // ": "
  [30 | INTONATION_COMMA | CLAUSE_TYPE_CLAUSE, [0x3b, 0x20]], // "; "
]);

/** piper-phonemize's own phoneme maps by espeak-ng voice (before the voice's `phoneme_map`). */
const VOICE_PHONEME_MAPS: Record<string, ReadonlyMap<number, readonly number[]>> = {
  'pt-br': new Map([[0x63, [0x6b]]]), // c -> k
};

const OPEN = 0x28;
const CLOSE = 0x29;

/** One text's clauses as Piper's sentences of phoneme code points. */
export function piperSentences(clauses: readonly NativeClause[], voice: string): number[][] {
  const map = VOICE_PHONEME_MAPS[voice];
  const sentences: number[][] = [];
  let sentence: number[] | undefined;
  for (const { phonemes, terminator } of clauses) {
    if (!sentence) {
      sentence = [];
      sentences.push(sentence);
    }
    let inFlag = false;
    for (const char of phonemes.normalize('NFD')) {
      const code = char.codePointAt(0) as number;
      const mapped = map?.get(code) ?? [code];
      for (const phoneme of mapped) {
        // espeak-ng marks words it reads in another language "(en)...(fr)": the flags go, the phonemes stay.
        if (inFlag) {
          if (phoneme === CLOSE) inFlag = false;
        } else if (phoneme === OPEN) {
          inFlag = true;
        } else {
          sentence.push(phoneme);
        }
      }
    }
    const punctuation = PUNCTUATION.get(terminator & CLAUSE_KIND);
    if (punctuation) sentence.push(...punctuation);
    if ((terminator & CLAUSE_TYPE_SENTENCE) === CLAUSE_TYPE_SENTENCE) sentence = undefined;
  }
  return sentences;
}

/** A phonemizer failure: NO_VOICE (espeak-ng lacks the voice) or PHONEMIZER_FAILED. */
export class PhonemizerFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'PhonemizerFailure';
  }
}

/**
 * Piper's sentences of phonemes for each text, for espeak-ng voice `voice`; one native job for the whole batch (on
 * libuv's pool, under espeak-ng's process-wide lock).
 */
export async function phonemizeTexts(texts: string[], voice: string, signal?: AbortSignal): Promise<number[][][]> {
  signal?.throwIfAborted();
  if (texts.length === 0) return [];
  const job = native().phonemize(nativeAssets().espeakData, voice, texts);
  const onAbort = () => job.abort();
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const clauses = await untilAborted(job.promise, signal);
    return clauses.map((text) => piperSentences(text, voice));
  } catch (error) {
    if (signal?.aborted) throw abortReason(signal);
    if (isNativeError(error)) throw new PhonemizerFailure(error.code, error.message);
    throw error;
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}
