// Speakers onto a transcript: each word takes the speaker whose turn overlaps it most (the nearest turn when none
// does); a segment whose words change speaker is split at that word boundary. Segments are renumbered.
import type { Segment, Transcription, Word } from '../stt/types.js';
import type { SpeakerTurn } from './turn.js';

/**
 * Answers "who speaks in [start, end]" for a list of turns sorted by start, for queries in time order: a pointer
 * sweeps forward, so labelling a whole transcript is linear. Turns of different speakers may overlap (the
 * segmentation pipeline's overlapped speech): the one overlapping the query most wins, else the nearest.
 */
export class TurnIndex {
  private next = 0;
  constructor(private readonly turns: readonly SpeakerTurn[]) {}

  /** Most overlap, else the nearest turn; undefined when there are no turns. */
  speakerAt(start: number, end: number): string | undefined {
    const turns = this.turns;
    if (turns.length === 0) return undefined;
    // Queries may step back a little (a word inside the previous segment's span): rewind while needed.
    while (this.next > 0 && (turns[this.next - 1] as SpeakerTurn).end > start) this.next--;
    while (this.next < turns.length && (turns[this.next] as SpeakerTurn).end <= start) this.next++;
    let best: string | undefined;
    let bestOverlap = 0;
    for (let i = this.next; i < turns.length && (turns[i] as SpeakerTurn).start < end; i++) {
      const turn = turns[i] as SpeakerTurn;
      const overlap = Math.min(end, turn.end) - Math.max(start, turn.start);
      if (overlap > bestOverlap) {
        bestOverlap = overlap;
        best = turn.speaker;
      }
    }
    if (best !== undefined) return best;
    const before = turns[this.next - 1];
    const after = turns[this.next];
    if (!after) return before?.speaker;
    if (!before) return after.speaker;
    return start - before.end <= after.start - end ? before.speaker : after.speaker;
  }
}

/** The speaker of [start, end] (see TurnIndex). */
export function speakerAt(turns: readonly SpeakerTurn[], start: number, end: number): string | undefined {
  return new TurnIndex(turns).speakerAt(start, end);
}

const letters = (text: string) => text.replace(/\s+/gu, '').length;

/**
 * Labels the segments (and words, when present) of `transcription` with speakers. `words` are the transcription's
 * words in order (computed even when the caller did not ask for them). Words are given to segments by their
 * text, in order (a segment's text is its words'), not by their times, so no word is lost at a segment boundary.
 */
export function attachSpeakers(
  transcription: Transcription,
  words: readonly Word[],
  turns: readonly SpeakerTurn[],
): void {
  const index = new TurnIndex([...turns].sort((a, b) => a.start - b.start));
  const original = transcription.segments ?? [];
  const owned: Word[][] = original.map(() => []);
  let w = 0;
  original.forEach((segment, i) => {
    const target = letters(segment.text);
    let taken = 0;
    while (w < words.length && (taken < target || i === original.length - 1)) {
      taken += letters((words[w] as Word).word);
      (owned[i] as Word[]).push(words[w] as Word);
      w++;
    }
  });
  const segments: Segment[] = [];
  original.forEach((segment, i) => {
    const own = (owned[i] as Word[]).map((word) => ({ ...word, speaker: index.speakerAt(word.start, word.end) }));
    if (own.length === 0) {
      segments.push(labelled(segment, index.speakerAt(segment.start, segment.end)));
      return;
    }
    // Scripts written without spaces (Chinese, Japanese, Thai) keep none between their words.
    const separator = segment.text.includes(' ') ? ' ' : '';
    let runStart = 0;
    for (let k = 1; k <= own.length; k++) {
      if (k < own.length && own[k]?.speaker === own[runStart]?.speaker) continue;
      const run = own.slice(runStart, k);
      const first = runStart === 0;
      const last = k === own.length;
      segments.push(
        labelled(
          {
            id: 0,
            start: first ? segment.start : (run[0] as Word).start,
            end: last ? segment.end : (run[run.length - 1] as Word).end,
            text: first && last ? segment.text : run.map((word) => word.word.trim()).join(separator),
            ...(segment.speakerTurnNext !== undefined && last ? { speakerTurnNext: segment.speakerTurnNext } : {}),
          },
          run[0]?.speaker,
        ),
      );
      runStart = k;
    }
  });
  transcription.segments = segments.map((segment, id) => ({ ...segment, id }));
  if (transcription.words) {
    const wordIndex = new TurnIndex([...turns].sort((a, b) => a.start - b.start));
    transcription.words = transcription.words.map((word) => {
      const speaker = wordIndex.speakerAt(word.start, word.end);
      return speaker === undefined ? word : { ...word, speaker };
    });
  }
}

function labelled(segment: Segment, speaker: string | undefined): Segment {
  return speaker === undefined ? segment : { ...segment, speaker };
}
