/** 50 English sentences as written and as read aloud (normalization-sentences.mjs). */
export const NORMALIZATION_SENTENCES: ReadonlyArray<readonly [written: string, spoken: string]>;
