// Repeat loops: whisper's decoder, conditioned on its own output, can fall into saying one phrase over and over
// ("I'm fine, I'm fine, I'm fine, ...") or into writing the segment before again. Found here on the words of the
// segments (as whisper's tokens form them), so a loop can be decoded again (stt/transcribe.ts) or, if it survives
// that, cut back to its first occurrence.
import type { NativeSegment, NativeToken } from '../native.js';

/** A run of segments (indexes, inclusive) that holds a loop. */
export interface LoopWindow {
  first: number;
  last: number;
}

/** Longest phrase, in words, looked for as a repeat. */
const MAX_PHRASE_WORDS = 12;

/**
 * Times a phrase must follow itself to count as a loop: one word 6 times ("no no no no" is speech), two or three
 * words 4 times ("thank you thank you thank you" is too), longer phrases 3 times.
 */
export function minRepeats(phraseWords: number): number {
  if (phraseWords === 1) return 6;
  return phraseWords <= 3 ? 4 : 3;
}

/** Segments written twice in a row count as a loop from this many words (shorter ones, "Yes." "Yes.", are speech). */
const MIN_REPEATED_SEGMENT_WORDS = 3;

/**
 * A segment that starts with the words the one before it ended with, this many or more, wrote them twice: whisper
 * does this where a 30 s window ends inside a sentence ("... ask what you can do for you." "Ask what you can do for
 * your country.", in the 60-minute file with the VAD on).
 */
const MIN_OVERLAP_WORDS = 4;

interface SegmentWord {
  word: string;
  segment: number;
  /** Index in the segment's tokens where the word starts. */
  token: number;
}

const decoder = new TextDecoder('utf-8', { fatal: false });

function normalise(text: string): string {
  return text.toLowerCase().replace(/[^\p{L}\p{N}']/gu, '');
}

/** The words of each segment, from its tokens (a leading space starts a word, as words.ts reads them). */
function segmentWords(segments: readonly NativeSegment[]): SegmentWord[] {
  const words: SegmentWord[] = [];
  segments.forEach((segment, index) => {
    let offset = 0;
    let current: { bytes: Uint8Array[]; token: number } | undefined;
    const flush = () => {
      if (!current) return;
      const word = normalise(decoder.decode(Buffer.concat(current.bytes)));
      if (word !== '') words.push({ word, segment: index, token: current.token });
      current = undefined;
    };
    segment.tokens.forEach((token, t) => {
      const bytes = segment.tokenBytes.subarray(offset, offset + token.byteLength);
      offset += token.byteLength;
      if (token.special || bytes.byteLength === 0) return;
      if (!current || bytes[0] === 0x20) {
        flush();
        current = { bytes: [bytes], token: t };
      } else current.bytes.push(bytes);
    });
    flush();
  });
  return words;
}

interface PhraseRun {
  /** Index in the word list of the first word of the first occurrence. */
  start: number;
  phraseWords: number;
  repeats: number;
}

/** Phrases that follow themselves at least minRepeats times, left to right, not overlapping. */
function phraseRuns(words: readonly SegmentWord[]): PhraseRun[] {
  const runs: PhraseRun[] = [];
  let p = 0;
  while (p < words.length) {
    let found: PhraseRun | undefined;
    for (let n = 1; n <= MAX_PHRASE_WORDS && p + 2 * n <= words.length; n++) {
      let repeats = 1;
      while (p + (repeats + 1) * n <= words.length && samePhrase(words, p, p + repeats * n, n)) repeats++;
      if (repeats >= minRepeats(n) && (!found || repeats * n > found.repeats * found.phraseWords)) {
        found = { start: p, phraseWords: n, repeats };
      }
    }
    if (found) {
      runs.push(found);
      p += found.repeats * found.phraseWords;
    } else p++;
  }
  return runs;
}

function samePhrase(words: readonly SegmentWord[], a: number, b: number, n: number): boolean {
  for (let i = 0; i < n; i++) if (words[a + i]!.word !== words[b + i]!.word) return false;
  return true;
}

/** Words after the copy in the earlier segment that may differ (the copy's last word is often cut: "you" / "your"). */
const OVERLAP_SLACK_WORDS = 2;

/**
 * Where segment `i - 1`'s last words start to be written again at the start of segment `i` (an index into
 * `previous`), or -1 when fewer than MIN_OVERLAP_WORDS are: the longest run of `current`'s first words found in
 * `previous` ending at most OVERLAP_SLACK_WORDS before its end.
 */
function overlapStart(previous: readonly SegmentWord[], current: readonly SegmentWord[]): number {
  for (let k = Math.min(previous.length, current.length); k >= MIN_OVERLAP_WORDS; k--) {
    for (let slack = 0; slack <= OVERLAP_SLACK_WORDS; slack++) {
      const at = previous.length - k - slack;
      if (at < 0) break;
      let same = true;
      for (let j = 0; j < k && same; j++) same = previous[at + j]!.word === current[j]!.word;
      if (same) return at;
    }
  }
  return -1;
}

/** A segment's normalized words, space-separated. */
const textOf = (words: readonly SegmentWord[]): string => words.map((w) => w.word).join(' ');

function bySegment(words: readonly SegmentWord[], segmentCount: number): SegmentWord[][] {
  const grouped: SegmentWord[][] = Array.from({ length: segmentCount }, () => []);
  for (const word of words) grouped[word.segment]!.push(word);
  return grouped;
}

/** The segments that hold loops, as windows merged where they touch. */
export function findLoops(segments: readonly NativeSegment[]): LoopWindow[] {
  return loopWindows(segmentWords(segments), segments.length);
}

/** {@link findLoops} on plain segment texts (words split at spaces), for results already shaped. */
export function findTextLoops(texts: readonly string[]): LoopWindow[] {
  const words = texts.flatMap((text, segment) =>
    text
      .split(/\s+/u)
      .map(normalise)
      .filter((word) => word !== '')
      .map((word, token) => ({ word, segment, token })),
  );
  return loopWindows(words, texts.length);
}

function loopWindows(words: readonly SegmentWord[], segmentCount: number): LoopWindow[] {
  const windows: LoopWindow[] = [];
  for (const run of phraseRuns(words)) {
    const end = run.start + run.repeats * run.phraseWords - 1;
    windows.push({ first: words[run.start]!.segment, last: words[end]!.segment });
  }
  const grouped = bySegment(words, segmentCount);
  const texts = grouped.map(textOf);
  for (let i = 1; i < segmentCount; i++) {
    if (overlapStart(grouped[i - 1]!, grouped[i]!) >= 0) windows.push({ first: i - 1, last: i });
    if (texts[i]!.split(' ').length < MIN_REPEATED_SEGMENT_WORDS) continue;
    for (const back of [1, 2]) {
      if (i - back >= 0 && texts[i] === texts[i - back]) windows.push({ first: i - back, last: i });
    }
  }
  windows.sort((a, b) => a.first - b.first || a.last - b.last);
  const merged: LoopWindow[] = [];
  for (const window of windows) {
    const previous = merged[merged.length - 1];
    if (previous && window.first <= previous.last + 1) previous.last = Math.max(previous.last, window.last);
    else merged.push({ ...window });
  }
  return merged;
}

/** Fewest words of a phrase that {@link repeatsAPhrase} reports when it is said twice in a row. */
const MIN_ECHO_WORDS = 3;

/**
 * Whether a phrase of MIN_ECHO_WORDS or more words follows itself at once, in a segment or across two ("in being
 * comparatively modern in being comparatively modern"): stricter than findLoops, which lets speech say a phrase
 * twice. For a decode that has a fallback (stt/fitted-context.ts), where a false alarm costs only time.
 */
export function repeatsAPhrase(segments: readonly NativeSegment[]): boolean {
  const words = segmentWords(segments);
  for (let p = 0; p < words.length; p++) {
    for (let n = MIN_ECHO_WORDS; n <= MAX_PHRASE_WORDS && p + 2 * n <= words.length; n++) {
      if (samePhrase(words, p, p + n, n)) return true;
    }
  }
  return false;
}

/** Token ranges [from, to) of one segment to remove. */
type Cuts = Map<number, [number, number][]>;

/** `segment` without the tokens in `ranges` (text, start and end follow); undefined when no text token is left. */
function withoutTokens(segment: NativeSegment, ranges: readonly [number, number][]): NativeSegment | undefined {
  const removed = (i: number) => ranges.some(([from, to]) => i >= from && i < to);
  const kept: NativeToken[] = [];
  const bytes: Uint8Array[] = [];
  const text: Uint8Array[] = [];
  let offset = 0;
  segment.tokens.forEach((token, i) => {
    const piece = segment.tokenBytes.subarray(offset, offset + token.byteLength);
    offset += token.byteLength;
    if (removed(i)) return;
    kept.push(token);
    bytes.push(piece);
    if (!token.special) text.push(piece);
  });
  const spoken = kept.filter((t) => !t.special);
  if (spoken.length === 0) return undefined;
  return {
    ...segment,
    tokens: kept,
    tokenBytes: Buffer.concat(bytes),
    text: decoder.decode(Buffer.concat(text)),
    start: removed(0) ? Math.max(segment.start, spoken[0]!.start) : segment.start,
    end: ranges.some(([, to]) => to >= segment.tokens.length)
      ? Math.max(segment.start, spoken.at(-1)!.end)
      : segment.end,
  };
}

/**
 * The last resort for a loop that decoding again did not cure: each repeated phrase is kept once (what follows it
 * stays), a segment that repeats one of the two before it is dropped, and words written twice across a boundary are
 * kept in the later segment only. Returns new segments; the input is not changed.
 */
export function collapseLoops(segments: readonly NativeSegment[]): NativeSegment[] {
  const words = segmentWords(segments);
  const cuts: Cuts = new Map();
  const cut = (segment: number, from: number, to = segments[segment]!.tokens.length) => {
    cuts.set(segment, [...(cuts.get(segment) ?? []), [from, to]]);
  };
  for (const run of phraseRuns(words)) {
    const second = words[run.start + run.phraseWords]!;
    const last = words[run.start + run.repeats * run.phraseWords - 1]!;
    const after = words[run.start + run.repeats * run.phraseWords];
    // From the second occurrence to the end of the run: the words after it in its last segment stay.
    const stop = (segment: number) => (after?.segment === segment ? after.token : segments[segment]!.tokens.length);
    if (second.segment === last.segment) cut(second.segment, second.token, stop(second.segment));
    else {
      cut(second.segment, second.token);
      for (let s = second.segment + 1; s < last.segment; s++) cut(s, 0);
      cut(last.segment, 0, stop(last.segment));
    }
  }
  const grouped = bySegment(words, segments.length);
  const texts = grouped.map(textOf);
  for (let i = 1; i < segments.length; i++) {
    if (texts[i]!.split(' ').length >= MIN_REPEATED_SEGMENT_WORDS) {
      if (texts[i] === texts[i - 1] || (i >= 2 && texts[i] === texts[i - 2])) {
        cut(i, 0);
        continue;
      }
    }
    // Words written twice across the boundary: the earlier segment loses its copy.
    const overlap = overlapStart(grouped[i - 1]!, grouped[i]!);
    if (overlap >= 0) cut(i - 1, grouped[i - 1]![overlap]!.token);
  }
  const out: NativeSegment[] = [];
  segments.forEach((segment, i) => {
    const ranges = cuts.get(i);
    const kept = ranges ? withoutTokens(segment, ranges) : segment;
    if (kept) out.push(kept);
  });
  return out;
}
