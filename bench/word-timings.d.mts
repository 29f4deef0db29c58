// Types of the helpers bench/word-timings.mjs shares with test/accuracy/word-timings.test.ts.
interface TimedWord {
  word: string;
  start: number;
  end: number;
}

/** Pairs two timed word lists in order where their spelling is equal (their longest common subsequence). */
export function pairWords<A extends TimedWord, B extends TimedWord>(a: readonly A[], b: readonly B[]): Array<[A, B]>;

/** Median and 95th percentile of |a.start - b.start| over pairs, in ms, and the mean signed difference. */
export function startDifferences(pairs: ReadonlyArray<readonly [TimedWord, TimedWord]>): {
  pairs: number;
  medianMs: number;
  p95Ms: number;
  meanSignedMs: number;
};

/** The sentence sets, by name. */
export function sentenceSets(): Record<'accuracy' | 'prose', string[]>;

/** voxmill's start minus the onset of speech after each silence in 16 kHz samples, in ms (see word-timings.mjs). */
export function onsetDifferences(samples: Float32Array, words: readonly TimedWord[]): number[];

/** Median and 95th percentile of absolute values, and the mean, of differences in ms. */
export function spreadOf(differences: readonly number[]): {
  pairs: number;
  medianMs: number;
  p95Ms: number;
  meanSignedMs: number;
};
