// Maps times in the VAD-cut audio (speech stretches joined by short gaps) back to the original audio.
import type { NativeSpeechSpan } from '../native.js';

export type TimeMap = (processedSeconds: number) => number;

export const identityTimeMap: TimeMap = (t) => t;

/**
 * Inside a kept stretch, time shifts by the stretch's offset; inside a gap between two stretches it is
 * interpolated between the end of one and the start of the next, so mapped times never go backwards.
 */
export function timeMapFromSpans(spans: readonly NativeSpeechSpan[]): TimeMap {
  if (spans.length === 0) return identityTimeMap;
  return (t) => {
    const first = spans[0]!;
    if (t <= first.procStart) return first.origStart;
    for (let i = 0; i < spans.length; i++) {
      const span = spans[i]!;
      if (t <= span.procEnd) return Math.min(span.origEnd, span.origStart + (t - span.procStart));
      const next = spans[i + 1];
      if (next && t < next.procStart) {
        // Stretches may overlap by the VAD's overlap margin; never interpolate backwards.
        const from = Math.min(span.origEnd, next.origStart);
        const fraction = (t - span.procEnd) / (next.procStart - span.procEnd);
        return from + fraction * (next.origStart - from);
      }
    }
    return spans[spans.length - 1]!.origEnd;
  };
}

/**
 * With the VAD on, whisper starts a segment's first word where its timestamp token says, which is often the start
 * of the audio it was given: the padding the VAD kept before the speech, or silence that was cut away (0.4-1 s early
 * in the 60-minute file); DTW only knows where a token ends. A start before the VAD's onset of its speech stretch
 * (the stretch's start plus `padSeconds`; the next stretch's when the start is in cut-away silence) is moved to that
 * onset, never past the item's own end. On the speech islands this took the islands' first words from 120-190 ms
 * to 20-45 ms off their speech onset at the median; moving them only to the stretch's start, 120-190 ms
 * (BENCHMARKS.md "Invented words").
 */
export function startsInSpeech<T extends { start: number; end: number }>(
  items: T[],
  spans: readonly NativeSpeechSpan[],
  padSeconds: number,
): T[] {
  for (const item of items) {
    // The stretch the start is in, or the next one when it is in cut-away silence.
    const span = spans.find((s) => item.start <= s.origEnd);
    if (!span) continue;
    const onset = Math.round((span.origStart + padSeconds) * 1000) / 1000;
    if (item.start < onset) item.start = Math.min(item.end, onset);
  }
  return items;
}
