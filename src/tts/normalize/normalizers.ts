// Text normalizers per language, run on the main thread before the text is cut into sentences (they are pure string
// functions, linear in the text; a 5,000-character input takes well under a millisecond). Built in: English (`en`,
// reading n/n/yyyy day first outside the US). `createSpeech({ tts: { normalizers } })` adds or replaces one per
// language code (`en_GB` before `en`), or turns one off with null; a request turns normalization off with
// `normalize: false`.
import { SynthesisError } from '../../errors.js';
import { normalizeEnglish } from './english.js';

/** Rewrites text as the voice should read it; `language` is the voice's language code (`en_US`). */
export type TextNormalizer = (text: string, language: string) => string;

/** Languages that write dates month first. */
const MONTH_FIRST = new Set(['en_US', 'en_PH']);

export const BUILT_IN_NORMALIZERS: Readonly<Record<string, TextNormalizer>> = {
  en: (text, language) => normalizeEnglish(text, { dayFirst: !MONTH_FIRST.has(language) }),
};

/** The most a normalizer may lengthen a text (built in: at most about 6 times, "555-0123"). */
export const MAX_NORMALIZED_GROWTH = 10;

/**
 * The normalizer for a voice's language code: the configured one for the code, then for its language (the part
 * before `_`), then the built-in one; null in the configuration turns it off. Undefined when there is none. The
 * returned function checks the normalizer's result (a string, at most MAX_NORMALIZED_GROWTH times the text).
 */
export function normalizerFor(
  language: string,
  configured: Readonly<Record<string, TextNormalizer | null>>,
): ((text: string) => string) | undefined {
  const base = language.split(/[_-]/u)[0] ?? language;
  let chosen: TextNormalizer | null | undefined;
  for (const key of [language, base]) {
    if (Object.hasOwn(configured, key)) {
      chosen = configured[key];
      break;
    }
  }
  if (chosen === undefined) chosen = BUILT_IN_NORMALIZERS[base];
  if (!chosen) return undefined;
  const normalizer = chosen;
  return (text) => {
    let out: unknown;
    try {
      out = normalizer(text, language);
    } catch (error) {
      throw new SynthesisError(`the text normalizer for ${language} failed: ${(error as Error).message}`, {
        code: 'TTS_NORMALIZER_FAILED',
        cause: error,
      });
    }
    if (typeof out !== 'string' || out.length > MAX_NORMALIZED_GROWTH * text.length + 64) {
      throw new SynthesisError(
        `the text normalizer for ${language} returned ${typeof out === 'string' ? `${out.length} characters for ${text.length}` : typeof out}`,
        { code: 'TTS_NORMALIZER_FAILED' },
      );
    }
    return out;
  };
}
