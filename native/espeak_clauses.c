#include "espeak_clauses.h"

#include <stddef.h>
#include <stdlib.h>

// espeak_ng.h defines what encoding.h uses: this order, not the alphabetical one.
#include <espeak-ng/espeak_ng.h>
#include <espeak-ng/speak_lib.h>

#include <espeak-ng/encoding.h>

#include "dictionary.h"
#include "readclause.h"
#include "synthesize.h"
#include "translate.h"
#include "wavegen.h"

const char* voxmill_espeak_clause_phonemes(const void** textptr, int textmode, int phonememode, int* terminator) {
  if (p_decoder == NULL) p_decoder = create_text_decoder();
  if (p_decoder == NULL || translator == NULL) return NULL;
  if (text_decoder_decode_string_multibyte(p_decoder, *textptr, translator->encoding, textmode) != ENS_OK) return NULL;
  TranslateClauseWithTerminator(translator, NULL, NULL, terminator);
  *textptr = text_decoder_get_buffer(p_decoder);
  return GetTranslatedPhonemeString(phonememode);
}

void voxmill_espeak_begin_text(void) { InitText(0); }

void voxmill_espeak_drop_wave_commands(void) {
  for (int i = wcmdq_head; i != wcmdq_tail; i = (i + 1) % N_WCMDQ) {
    if (wcmdq[i][0] == WCMD_VOICE) free((void*)wcmdq[i][2]);
  }
  WcmdqStop();
}
