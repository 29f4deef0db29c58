// whisper's non-speech annotations: the subtitle habits it learned ("[BLANK_AUDIO]", "(upbeat music)", "*sigh*",
// "♪"), which it writes where nothing was said. A segment made only of them is not a transcript of speech.
//
// Dropping them afterwards, not suppressing their tokens while decoding (whisper's `suppress_nst`): with real base
// weights, suppression on 15 files of noise and music turned 15 annotations into 850 invented words ("I'm not sure
// if I'm going to be able to ..."), since the decoder, barred from saying "(music)", says something else
// (BENCHMARKS.md "Invented words").

const ANNOTATION = /\[[^\]]*\]|\([^)]*\)|\*[^*]*\*|[♪♫♬♩]/gu;
const LEFTOVER = /[\s.,!?;:'"…-]/gu;

/** Whether `text` holds nothing but annotations (and the spaces and punctuation between them). */
export function isAnnotationOnly(text: string): boolean {
  const trimmed = text.trim();
  if (trimmed === '') return false;
  const rest = trimmed.replace(ANNOTATION, '');
  return rest.length < trimmed.length && rest.replace(LEFTOVER, '') === '';
}
