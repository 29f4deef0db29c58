// Words from whisper tokens: sub-word tokens merged (a leading space starts a word), punctuation
// attached to its word, UTF-8 decoded only after merging (a character may span tokens), and times
// made well-formed (start <= end, non-decreasing, inside [0, duration]).
import type { NativeSegment } from '../native.js';
import type { TimeMap } from './time-map.js';
import type { Word } from './types.js';

// Marks that belong to the word before them / after them (as OpenAI's whisper merges punctuation).
const CLOSING = new Set([
  '"',
  "'",
  '.',
  '。',
  ',',
  '，',
  '!',
  '！',
  '?',
  '？',
  ':',
  '：',
  ';',
  '”',
  ')',
  ']',
  '}',
  '、',
  '…',
]);
const OPENING = new Set(['"', "'", '“', '¿', '¡', '(', '[', '{', '-', '«']);

const decoder = new TextDecoder('utf-8', { fatal: false });

interface Piece {
  bytes: Uint8Array[];
  start: number;
  end: number;
  /** DTW time of the text token before the piece's first token (where the piece starts), or -1. */
  dtwStart: number;
  /** DTW time of the piece's last token (where it ends), or -1. */
  dtwEnd: number;
}

function onlyOf(text: string, set: Set<string>): boolean {
  const chars = [...text.trim()];
  return chars.length > 0 && chars.every((c) => set.has(c));
}

function text(piece: Piece): string {
  return decoder.decode(Buffer.concat(piece.bytes)).trim();
}

/**
 * Splits one segment's text tokens into raw word pieces (times still in processed seconds). `dtwBefore` is where
 * the segment's first token starts on the DTW path.
 */
function piecesOf(segment: NativeSegment, dtwBefore: number): Piece[] {
  const pieces: Piece[] = [];
  let offset = 0;
  let previousDtw = dtwBefore;
  for (const token of segment.tokens) {
    const bytes = segment.tokenBytes.subarray(offset, offset + token.byteLength);
    offset += token.byteLength;
    if (token.special || bytes.byteLength === 0) continue;
    const current = pieces[pieces.length - 1];
    if (current === undefined || bytes[0] === 0x20) {
      pieces.push({ bytes: [bytes], start: token.start, end: token.end, dtwStart: previousDtw, dtwEnd: token.dtw });
    } else {
      current.bytes.push(bytes);
      // Punctuation joins the text, not the time (see wordsFromSegments).
      if (!onlyOf(decoder.decode(bytes), CLOSING)) {
        current.end = Math.max(current.end, token.end);
        current.dtwEnd = token.dtw;
      }
    }
    previousDtw = token.dtw;
  }
  return pieces;
}

/**
 * Builds the words of all segments. With DTW times (token `dtw` >= 0) a word spans from the DTW time of the token
 * before it to the DTW time of its own last token; otherwise the token-timestamp heuristic's start/end are used.
 *
 * whisper.cpp's `t_dtw` marks where the alignment path leaves a token's row, which is where the token ends and the
 * next one begins (OpenAI's whisper and faster-whisper read the same path the same way). Taking a token's own
 * `t_dtw` as its start made every word one token late: 320 ms at the median against faster-whisper on the
 * LibriSpeech, LJ Speech and JFK clips with real tiny.en (test/accuracy/stt-accuracy.test.ts).
 */
export function wordsFromSegments(segments: readonly NativeSegment[], map: TimeMap, duration: number): Word[] {
  const words: Word[] = [];
  // Where the previous segment's last token ended on the DTW path; a new segment's first word starts there or at
  // the segment's own start, whichever is later (a segment after a pause, or in the next 30 s window).
  let lastDtw = -1;
  for (const segment of segments) {
    const pieces = piecesOf(segment, Math.max(lastDtw, segment.start));
    const useDtw = pieces.length > 0 && pieces.every((p) => p.dtwStart >= 0 && p.dtwEnd >= 0);
    if (useDtw) lastDtw = pieces[pieces.length - 1]!.dtwEnd;
    const merged: { text: string; start: number; end: number }[] = [];
    let pendingOpening: { text: string; start: number } | undefined;
    for (const [i, piece] of pieces.entries()) {
      let value = text(piece);
      if (value === '') continue;
      const start = useDtw ? piece.dtwStart : piece.start;
      const end = useDtw ? piece.dtwEnd : piece.end;
      // Punctuation joins a word's text but not its time (as OpenAI's whisper merges it): a comma's token ends
      // where the pause after the word ends, so taking its time stretched "Americans," over a 1 s pause.
      if (pendingOpening) {
        value = pendingOpening.text + value;
        pendingOpening = undefined;
      }
      const previous = merged[merged.length - 1];
      if (previous && onlyOf(value, CLOSING)) {
        previous.text += value;
      } else if (onlyOf(value, OPENING) && i + 1 < pieces.length) {
        pendingOpening = { text: value, start };
      } else {
        merged.push({ text: value, start, end });
      }
    }
    if (pendingOpening) merged.push({ text: pendingOpening.text, start: pendingOpening.start, end: segment.end });
    for (const w of merged) words.push({ word: w.text, start: map(w.start), end: map(w.end) });
  }
  return normaliseTimes(words, duration);
}

/** Millisecond precision, never rounding past the end of the audio. */
function round(seconds: number, duration: number): number {
  const rounded = Math.round(seconds * 1000) / 1000;
  return rounded > duration ? Math.floor(duration * 1000) / 1000 : rounded;
}

/** Clamps to [0, duration], makes starts and ends non-decreasing and start <= end. */
export function normaliseTimes<T extends { start: number; end: number }>(items: T[], duration: number): T[] {
  let lastStart = 0;
  let lastEnd = 0;
  for (const item of items) {
    const start = Math.min(duration, Math.max(lastStart, Number.isFinite(item.start) ? item.start : lastStart, 0));
    const end = Math.min(duration, Math.max(start, lastEnd, Number.isFinite(item.end) ? item.end : start));
    item.start = round(start, duration);
    item.end = round(end, duration);
    lastStart = start;
    lastEnd = end;
  }
  return items;
}
