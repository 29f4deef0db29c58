/** English sentences for the accuracy tier and the benches (sentences.mjs). */
export const ACCURACY_SENTENCES: readonly string[];
