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
 * With the VAD on, a segment's first word has no reliable start: whisper's timestamp token before it can land in the
 * silence that was cut away (0.4-1 s early in the 60-minute file), and DTW only knows where a token ends. A start
 * inside cut-away silence is moved to the start of the next speech stretch (never past the item's own end). Moving it
 * further, to the VAD's onset (stretch start + padding), or moving starts that lie in the stretch before: both
 * measured worse (BENCHMARKS.md "Invented words").
 */
export function startsInSpeech<T extends { start: number; end: number }>(
  items: T[],
  spans: readonly NativeSpeechSpan[],
): T[] {
  for (const item of items) {
    if (spans.some((s) => item.start >= s.origStart && item.start <= s.origEnd)) continue;
    const next = spans.find((s) => s.origStart > item.start);
    if (next) item.start = Math.min(item.end, Math.round(next.origStart * 1000) / 1000);
  }
  return items;
}
