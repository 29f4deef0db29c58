// tinydiarize (`*-tdrz` whisper models) marks a speaker change after a segment (`speakerTurnNext`); the stretches
// between marks are one speaker each.

import type { SpeechRegion } from '../audio/speech-regions.js';
import type { Segment } from '../stt/types.js';

/** The stretches between speaker-turn marks; empty when the transcript has no mark at all. */
export function turnStretches(segments: readonly Segment[]): SpeechRegion[] {
  if (!segments.some((segment) => segment.speakerTurnNext)) return [];
  const stretches: SpeechRegion[] = [];
  let current: SpeechRegion | undefined;
  for (const segment of segments) {
    if (current) current.end = segment.end;
    else current = { start: segment.start, end: segment.end };
    if (segment.speakerTurnNext) {
      stretches.push(current);
      current = undefined;
    }
  }
  if (current) stretches.push(current);
  return stretches.filter((stretch) => stretch.end > stretch.start);
}
