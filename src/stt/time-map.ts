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
