// When each word of a chunk is spoken, sentence by sentence, from the voice's frames per phoneme id: a word starts
// where its first sound's id starts and ends where its last sound's id ends (the pad symbols between phonemes belong
// to no word). Frames become samples by the sentence's own ratio (Piper decodes 256 samples per frame; taking the
// ratio keeps any voice right). Every word is reported once, in order: one no sound was aligned to is given no
// length, where the words around it meet.

import type { SpokenWord } from './types.js';
import type { TextWord } from './word-alignment.js';

/** One synthesized sentence, as the word timer needs it. */
export interface TimedSentence {
  /** Index of the sentence among its chunk's sentences. */
  index: number;
  /** For each id, the phoneme it came from (-1: start, end or pad). */
  sources: readonly number[];
  /** Frames of each id, as the voice computed them. */
  frames: ArrayLike<number>;
  /** Samples of the sentence's audio (without the pause before it). */
  samples: number;
  /** Samples of pause before it in the posted audio. */
  leadSamples: number;
  sampleRate: number;
  /** The chunk's last spoken sentence: words never aligned are reported at its end. */
  last: boolean;
}

export class ChunkWordTimer {
  /** The next word to report: words are reported in order. */
  #next = 0;

  constructor(
    private readonly words: readonly TextWord[],
    /** Per sentence, the word of each phoneme (wordOfEachPhoneme). */
    private readonly wordOf: readonly Int32Array[],
  ) {}

  sentence(sentence: TimedSentence): SpokenWord[] {
    const wordOf = this.wordOf[sentence.index] as Int32Array;
    const spans = new Map<number, { start: number; end: number }>();
    let frame = 0;
    let totalFrames = 0;
    for (let i = 0; i < sentence.frames.length; i++) totalFrames += sentence.frames[i] as number;
    for (let i = 0; i < sentence.sources.length; i++) {
      const length = (sentence.frames[i] as number | undefined) ?? 0;
      const phoneme = sentence.sources[i] as number;
      const word = phoneme >= 0 ? (wordOf[phoneme] ?? -1) : -1;
      if (word >= this.#next) {
        const span = spans.get(word);
        if (span) span.end = frame + length;
        else spans.set(word, { start: frame, end: frame + length });
      }
      frame += length;
    }
    const perFrame = totalFrames > 0 ? sentence.samples / totalFrames : 0;
    const seconds = (frames: number) => (sentence.leadSamples + frames * perFrame) / sentence.sampleRate;
    const out: SpokenWord[] = [];
    const report = (word: number, start: number, end: number) => {
      out.push({ word: (this.words[word] as TextWord).text, start: seconds(start), end: seconds(end) });
    };
    for (const [word, span] of [...spans].sort((a, b) => a[0] - b[0])) {
      // Words before this one that no sound was aligned to: no length, where this one starts.
      while (this.#next < word) report(this.#next++, span.start, span.start);
      report(word, span.start, span.end);
      this.#next = word + 1;
    }
    if (sentence.last) while (this.#next < this.words.length) report(this.#next++, totalFrames, totalFrames);
    return out;
  }
}
