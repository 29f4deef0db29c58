// An encoder context fitted to a short clip. Whisper encodes every window as 30 s (1500 audio positions), so a 2 s
// clip costs about what 30 s does; whisper.cpp can encode fewer positions (`audio_ctx`). Fitted exactly to the audio,
// the decoder tends to repeat itself (BENCHMARKS.md, "Realtime": "and so" to the token limit on 1 s); with a margin
// it mostly does not, and what is left is caught: a token limit for the clip's length stops a runaway decode early,
// and the caller decodes again with the full window when either that or a repeat loop shows up.
import type { NativeSegment, NativeTranscribeParams } from '../native.js';
import { findLoops, repeatsAPhrase } from './repetition.js';

/**
 * TranscribeOptions.fittedContextSeconds unless the call sets it: clips under 10 s get a shorter context, with every
 * model. It was off for tiny models when the context was fitted tightly to the clip (the audio plus 1.28 s), which
 * raised their WER; measured again (BENCHMARKS.md, "Short clips, second pass"), the tight fit costs base as much (17
 * -> 23 errors on the 50 spoken sentences of test/accuracy/normalization.test.ts), and a context of at least
 * MIN_CONTEXT costs neither (base 18, tiny.en 21 against 20 with beam 5).
 */
export const DEFAULT_FITTED_CONTEXT_SECONDS = 10;

/** Whisper's encoder positions per second of audio (1500 for its 30 s window). */
const POSITIONS_PER_SECOND = 50;
/** The model's full context. */
const FULL_CONTEXT = 1500;
/**
 * The context is the audio's positions rounded up to a multiple of this, plus this much again (1.28 s): the shape
 * that transcribed 2, 5, 8 and 11 s of jfk.wav right where an exact fit looped (BENCHMARKS.md, "Realtime").
 */
const CONTEXT_STEP = 64;
/**
 * But never fewer positions than this (15.36 s, about half the encoder's work of a full window). Whisper's encoder
 * attends over the whole window, silence included, in training; cut to the clip and a few seconds more (a margin
 * of 64 or 256 positions), base lost 6 words of 375 on the 50 spoken sentences, mostly a clip's first word ("her
 * flight" -> "or flight"). From 768 positions on it lost 1 (512: 8).
 */
const MIN_CONTEXT = 768;
/**
 * Tokens a window may decode per second of audio, plus TOKEN_ALLOWANCE: speech is about 3-4 text tokens a second
 * (2.5 words) and a pair of timestamp tokens per segment, so this is three times the fastest talker, while a loop
 * runs to whisper.cpp's own limit of 220 tokens a window.
 */
const MAX_TOKENS_PER_SECOND = 12;
const TOKEN_ALLOWANCE = 24;

/** The native parameters that fit the encoder to `seconds` of audio, or undefined when it is not shorter than `below`. */
export function fittedContext(
  seconds: number,
  below: number,
): Pick<NativeTranscribeParams, 'audioContext' | 'maxWindowTokens'> | undefined {
  if (!(seconds > 0) || seconds >= below) return undefined;
  const fitted = Math.ceil((seconds * POSITIONS_PER_SECOND) / CONTEXT_STEP) * CONTEXT_STEP + CONTEXT_STEP;
  const positions = Math.max(MIN_CONTEXT, fitted);
  if (positions >= FULL_CONTEXT) return undefined;
  return {
    audioContext: positions,
    maxWindowTokens: Math.ceil(seconds * MAX_TOKENS_PER_SECOND) + TOKEN_ALLOWANCE,
  };
}

/**
 * Whether a fitted decode must be done again with the full window: it holds a repeat loop, or says a phrase of three
 * or more words twice in a row (the fitted context's usual mistake: LJ001-0002 with base, beam 5, "in being
 * comparatively modern" twice in 1.9 s).
 */
export function fittedDecodeFailed(segments: readonly NativeSegment[]): boolean {
  return findLoops(segments).length > 0 || repeatsAPhrase(segments);
}
