// Speakers onto a transcript: each word takes the speaker whose turn overlaps it most (the nearest turn when none
// does); a segment whose words change speaker is split at that word boundary. Segments are renumbered.
import type { Segment, Transcription, Word } from '../stt/types.js';
import type { SpeakerTurn } from './turn.js';

/** The speaker of [start, end]: most overlap, else the nearest turn; undefined when there are no turns. */
export function speakerAt(turns: readonly SpeakerTurn[], start: number, end: number): string | undefined {
  let best: string | undefined;
  let bestOverlap = 0;
  let nearest: string | undefined;
  let nearestGap = Number.POSITIVE_INFINITY;
  for (const turn of turns) {
    const overlap = Math.min(end, turn.end) - Math.max(start, turn.start);
    if (overlap > bestOverlap) {
      bestOverlap = overlap;
      best = turn.speaker;
    }
    const gap = overlap > 0 ? 0 : Math.max(turn.start - end, start - turn.end);
    if (gap < nearestGap) {
      nearestGap = gap;
      nearest = turn.speaker;
    }
  }
  return best ?? nearest;
}

/**
 * Labels the segments (and words, when present) of `transcription` with speakers. `words` are the transcription's
 * words with times (computed even when the caller did not ask for them); a segment's words are those whose middle
 * lies inside it.
 */
export function attachSpeakers(
  transcription: Transcription,
  words: readonly Word[],
  turns: readonly SpeakerTurn[],
): void {
  const segments: Segment[] = [];
  let w = 0;
  for (const segment of transcription.segments ?? []) {
    const own: Array<Word & { speaker: string | undefined }> = [];
    while (w < words.length && midpoint(words[w] as Word) < segment.end) {
      const word = words[w] as Word;
      if (midpoint(word) >= segment.start) own.push({ ...word, speaker: speakerAt(turns, word.start, word.end) });
      w++;
    }
    if (own.length === 0) {
      segments.push(labelled(segment, speakerAt(turns, segment.start, segment.end)));
      continue;
    }
    let runStart = 0;
    for (let i = 1; i <= own.length; i++) {
      if (i < own.length && own[i]?.speaker === own[runStart]?.speaker) continue;
      const run = own.slice(runStart, i);
      const first = runStart === 0;
      const last = i === own.length;
      segments.push(
        labelled(
          {
            id: 0,
            start: first ? segment.start : (run[0] as Word).start,
            end: last ? segment.end : (run[run.length - 1] as Word).end,
            text: first && last ? segment.text : run.map((word) => word.word).join(' '),
            ...(segment.speakerTurnNext !== undefined && last ? { speakerTurnNext: segment.speakerTurnNext } : {}),
          },
          run[0]?.speaker,
        ),
      );
      runStart = i;
    }
  }
  transcription.segments = segments.map((segment, id) => ({ ...segment, id }));
  if (transcription.words) {
    transcription.words = transcription.words.map((word) => {
      const speaker = speakerAt(turns, word.start, word.end);
      return speaker === undefined ? word : { ...word, speaker };
    });
  }
}

const midpoint = (word: Word) => (word.start + word.end) / 2;

function labelled(segment: Segment, speaker: string | undefined): Segment {
  return speaker === undefined ? segment : { ...segment, speaker };
}
