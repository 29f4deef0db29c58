// Text to IPA phonemes with espeak-ng, compiled into the addon (its sources from Debian's espeak-ng 1.52.0 source
// package at build time: scripts/native-deps.mjs) and reading the espeak-ng data Piper's voices were trained with,
// shipped beside the addon. Pure C++: no N-API here (phonemizer.h wraps it for JavaScript).
//
// espeak-ng keeps global state, so every call in the process (any Node environment, any pool thread) takes one lock;
// a call phonemizes a batch of texts under it, which costs well under a millisecond per sentence.
#pragma once
#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

namespace voxmill {

class PhonemizeError : public std::runtime_error {
 public:
  PhonemizeError(std::string code, const std::string& message) : std::runtime_error(message), code(std::move(code)) {}
  std::string code;
};

// espeak-ng's output for one clause of text: IPA phonemes (UTF-8, language switches such as "(fr)" included) and
// espeak-ng's clause terminator flags (punctuation, intonation, whether the clause ends a sentence).
struct Clause {
  std::string phonemes;
  int terminator = 0;
};

// The clauses of each text, for espeak-ng voice `voice` ("en-us"), reading the data in `dataDir` (the first call in
// the process fixes it). Throws PhonemizeError: NO_VOICE for a voice espeak-ng does not have, PHONEMIZER_FAILED when
// the data cannot be read, ABORTED when `cancel` was set between texts.
std::vector<std::vector<Clause>> Phonemize(const std::string& dataDir, const std::string& voice,
                                           const std::vector<std::string>& texts, const std::atomic<bool>* cancel);

// The espeak-ng version compiled in ("1.52.0").
std::string EspeakVersion();

}  // namespace voxmill
