// SSML items (ssml.ts) as a synthesis job's chunks: runs of text and phonemes at one rate are cleaned, normalized and
// cut into sentences like plain text, with each <phoneme> held in place by a private-use character that neither the
// cleaning, the normalizer nor the sentence splitter touches; a <break> becomes a pause chunk, and the edges of <s>
// and <p> end sentences.

import type { ChunkPart, SynthChunk } from '../synth-job.js';
import { normalizeText, splitIntoChunks } from '../text.js';
import type { SsmlItem } from './ssml.js';

/** The first code point standing for a <phoneme> (the supplementary private use area A). */
const PLACEHOLDER_BASE = 0xf0000;
const PLACEHOLDER = /[\u{F0000}-\u{FFFFD}]/u;
/** Private-use characters in the document's own text: they would pass for placeholders, and speak nothing. */
const PRIVATE_USE = /[\p{Co}]/gu;

/** A voice an SSML document names (or the request's own, `name` undefined), as the engine resolved it. */
export interface ChunkVoice {
  /** Index into the job's `voices`; undefined for the request's own voice. */
  index: number | undefined;
  /** Its language's text normalizer (the identity when off). */
  normalize: (text: string) => string;
}

/**
 * The chunks of an SSML document: `voiceFor` gives each voice named by `<voice>` (and the request's, for undefined)
 * its place in the job and its normalizer; `maxChunkChars` is the longest chunk.
 */
export function ssmlChunks(
  items: readonly SsmlItem[],
  voiceFor: (name: string | undefined) => ChunkVoice,
  maxChunkChars: number,
): SynthChunk[] {
  const chunks: SynthChunk[] = [];
  let run:
    | { text: string; phonemes: Array<{ ipa: string; text: string }>; rate: number; voice: string | undefined }
    | undefined;
  // Whether the next run goes on a sentence that is still open (a run before it ended without a sentence end).
  let open = false;
  const flush = (ended: boolean) => {
    if (run) {
      const { phonemes, rate } = run;
      const voice = voiceFor(run.voice);
      const pieces = splitIntoChunks(voice.normalize(normalizeText(run.text)), maxChunkChars)
        .map((piece) => ({ piece, parts: partsOf(piece, phonemes) }))
        .filter(({ parts }) => parts.some((part) => 'ipa' in part || /[\p{L}\p{N}]/u.test(part.text)));
      pieces.forEach(({ parts }, i) => {
        const chunk = { parts, lengthFactor: rate, joined: i === 0 && open };
        chunks.push(voice.index === undefined ? chunk : { ...chunk, voice: voice.index });
      });
      open = pieces.length > 0 && !/[.!?。！？]["')\]]*$/u.test(pieces.at(-1)?.piece ?? '');
      run = undefined;
    }
    if (ended) open = false;
  };
  for (const item of items) {
    if (item.kind === 'boundary') {
      flush(true);
    } else if (item.kind === 'pause') {
      flush(true);
      // A break of 0 s still takes the place of the pause between sentences there (`strength="none"`).
      chunks.push({ pause: item.seconds });
    } else {
      if (run && (run.rate !== item.rate || run.voice !== item.voice)) flush(false);
      run ??= { text: '', phonemes: [], rate: item.rate, voice: item.voice };
      if (item.kind === 'text') run.text += item.text.replace(PRIVATE_USE, ' ');
      else {
        run.text += ` ${String.fromCodePoint(PLACEHOLDER_BASE + run.phonemes.length)} `;
        run.phonemes.push({ ipa: item.ipa, text: item.text });
      }
    }
  }
  flush(true);
  return chunks;
}

/** A chunk's text split at its placeholders into text and phoneme parts. */
function partsOf(piece: string, phonemes: ReadonlyArray<{ ipa: string; text: string }>): ChunkPart[] {
  const parts: ChunkPart[] = [];
  let text = '';
  for (const char of piece) {
    if (PLACEHOLDER.test(char)) {
      if (text.trim() !== '') parts.push({ text: text.trim() });
      text = '';
      const phoneme = phonemes[(char.codePointAt(0) as number) - PLACEHOLDER_BASE];
      if (phoneme) parts.push({ ipa: phoneme.ipa, text: phoneme.text });
    } else text += char;
  }
  if (text.trim() !== '') parts.push({ text: text.trim() });
  return parts;
}
