// Skipped speech: whisper's decoder sometimes jumps over speech. A timestamp token far past the words before it makes
// a segment of ten words span 22 s, or the end-of-window timestamp after a sentence drops the rest of a 30 s window.
// Whisper's own checks (temperature fallback on compression ratio and log-probability) never see it: what it wrote is
// good text. Which call it hits depends on float rounding (the ten-minute benchmark file lost 45 words with the
// portable build's base model, none with the native build's; BENCHMARKS.md "Skipped speech"). Found here with the VAD:
// a stretch (a gap between two segments, or one segment) holding more seconds of speech than its words account for;
// stt/transcribe.ts decodes such a stretch again on its own and keeps what it recovers. Frame energy was tried first
// and cannot tell speech from noise 10 dB under it: it re-decoded noise and invented words (BENCHMARKS.md).
import type { NativeSegment, NativeSpeechSpan } from '../native.js';
import { isAnnotationOnly } from './annotations.js';

/** A stretch to decode again, on the input's timeline: segments `first`..`last` (none for a gap: last = first - 1). */
export interface SkipWindow {
  from: number;
  to: number;
  first: number;
  last: number;
}

/**
 * Seconds of speech (by the VAD, whose stretches hold the short pauses between words and its padding) one word
 * accounts for. On the ten-minute benchmark file's segments (base and tiny.en, correctly decoded) the VAD found 0.30 s
 * a word at the median and 0.37-0.48 at the 90th percentile: no segment passed this allowance by more than 1.2 s, and
 * the segment that had skipped three sentences passed it by 5.0 s.
 */
export const SECONDS_PER_WORD = 0.5;
/** Seconds of speech beyond what a stretch's words account for, from which the stretch is decoded again. */
export const MIN_SKIPPED_SECONDS = 3;
/** Words a second decode must add to what it replaces to be kept (fewer could be a hallucination on noise). */
export const MIN_RECOVERED_WORDS = 3;
/**
 * Longer stretches are left alone: a skip is one 30 s window's (a jump to a later timestamp, or to the window's end),
 * and a longer stretch without text is more likely music or noise than speech.
 */
export const MAX_SKIP_SECONDS = 30;

/** Seconds of speech in input [from, to]: from the call's VAD stretches, or a VAD run over that stretch alone. */
export type SpeechSeconds = (from: number, to: number) => number | Promise<number>;

/** Scripts written without spaces between words (Chinese, Japanese, Thai, Lao, Khmer, Myanmar). */
const UNSPACED =
  /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Thai}\p{Script=Lao}\p{Script=Khmer}\p{Script=Myanmar}]/gu;

/**
 * Words of a text: each space-separated word with a letter or digit in it that is not of a script written without
 * spaces, and one per two letters of those scripts (about a syllable each), so mixed text counts both.
 */
export function wordCount(text: string): number {
  let words = 0;
  let unspaced = 0;
  for (const token of text.split(/\s+/)) {
    const letters = token.match(UNSPACED)?.length ?? 0;
    unspaced += letters;
    if (/[\p{L}\p{N}]/u.test(token.replace(UNSPACED, ''))) words++;
  }
  return words + Math.ceil(unspaced / 2);
}

/** Seconds of [from, to] inside speech stretches (input timeline, in order; overlapping ones counted once). */
export function speechSecondsIn(spans: readonly NativeSpeechSpan[], from: number, to: number): number {
  let seconds = 0;
  let covered = from;
  for (const span of spans) {
    const start = Math.max(covered, span.origStart);
    const end = Math.min(to, span.origEnd);
    if (end > start) {
      seconds += end - start;
      covered = end;
    }
  }
  return seconds;
}

/**
 * The stretches of `segments` (input timeline, in order, empty ones left out) where speech was skipped: each gap
 * between two segments, and each segment, of at most MAX_SKIP_SECONDS whose seconds of speech exceed what its words
 * account for by MIN_SKIPPED_SECONDS. Before the first segment and after the last nothing is looked at (a recording's
 * music or noise with no speech beside it stays without text), nor a gap at or across an annotation whisper wrote
 * there (`covered`: segments that were only "(music)" or the like and have been dropped; those still in `segments`
 * count the same), nor such a segment itself. Only stretches that could hold that much speech (by their length) are
 * measured, and none once `limit` are found.
 */
export async function findSkips(
  segments: readonly NativeSegment[],
  speechSeconds: SpeechSeconds,
  covered: readonly { start: number; end: number }[] = [],
  limit = Number.POSITIVE_INFINITY,
): Promise<SkipWindow[]> {
  const windows: SkipWindow[] = [];
  const annotations = [...covered, ...segments.filter((segment) => isAnnotationOnly(segment.text))];
  const annotated = (from: number, to: number) => annotations.some((c) => c.start <= to && c.end >= from);
  for (let i = 0; i < segments.length && windows.length < limit; i++) {
    const segment = segments[i]!;
    if (isAnnotationOnly(segment.text)) continue;
    const previous = segments[i - 1];
    if (previous && !isAnnotationOnly(previous.text)) {
      const [from, to] = [previous.end, segment.start];
      if (to - from >= MIN_SKIPPED_SECONDS && to - from <= MAX_SKIP_SECONDS && !annotated(from, to)) {
        if ((await speechSeconds(from, to)) >= MIN_SKIPPED_SECONDS) windows.push({ from, to, first: i, last: i - 1 });
      }
    }
    const length = segment.end - segment.start;
    const allowed = wordCount(segment.text) * SECONDS_PER_WORD;
    if (length - allowed >= MIN_SKIPPED_SECONDS && length <= MAX_SKIP_SECONDS && windows.length < limit) {
      if ((await speechSeconds(segment.start, segment.end)) - allowed >= MIN_SKIPPED_SECONDS) {
        windows.push({ from: segment.start, to: segment.end, first: i, last: i });
      }
    }
  }
  return windows;
}
