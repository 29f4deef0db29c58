// One clause of text to IPA phonemes with espeak-ng, and the clause's terminator (its punctuation and whether it ends
// a sentence), which Piper's phonemizer turns into punctuation phonemes and sentence breaks. espeak-ng 1.52.0's
// release has the internal TranslateClauseWithTerminator but not yet its public wrapper (added upstream in
// espeak-ng#2127, which Debian carries as a patch): this is that wrapper, compiled against espeak-ng's internal
// headers, so the sources need no patching. C, like espeak-ng; not thread-safe (espeak-ng has global state): callers
// hold the phonemizer's lock.
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

// As espeak_TextToPhonemes(textptr, textmode, phonememode), also writing the clause's terminator flags.
const char* voxmill_espeak_clause_phonemes(const void** textptr, int textmode, int phonememode, int* terminator);

// Resets what espeak-ng keeps from one text to the next (say-as and emphasis options, a word held back, the sentence
// and word counts), as espeak-ng's own synthesis does before each text and espeak_TextToPhonemes does not: each text
// is phonemized as if it were the first (the phonemizer fuzzer found a read past a word buffer that depended on the
// texts before).
void voxmill_espeak_begin_text(void);

// Empties espeak-ng's queue of commands for its waveform generator, freeing what they own. A voice change queues a
// copy of the voice there, which only generating audio frees; voxmill generates none (phonemes only), so without
// this every change of voice would leak the copy (found by the phonemizer fuzzer: 1.3 KB a change).
void voxmill_espeak_drop_wave_commands(void);

#ifdef __cplusplus
}
#endif
