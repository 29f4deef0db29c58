#include "phonemizer_core.h"

#include <espeak-ng/speak_lib.h>

#include <mutex>

#include "espeak_clauses.h"

namespace voxmill {
namespace {

// espeak-ng's IPA output (phoneme mode bit 1).
constexpr int kIpa = 0x02;
// A clause's phonemes are a few hundred bytes; this bounds what one hostile clause can make us hold.
constexpr size_t kMaxClauseBytes = 1 << 20;

struct Espeak {
  std::mutex mutex;
  std::string dataDir;  // set once espeak-ng has loaded its data
  std::string voice;    // the voice espeak-ng has selected
};

Espeak& TheEspeak() {
  static Espeak* espeak = new Espeak();  // process lifetime: espeak-ng's own state is global too
  return *espeak;
}

// Loads espeak-ng's data once per process (under the lock).
void Initialize(Espeak& espeak, const std::string& dataDir) {
  if (!espeak.dataDir.empty()) {
    if (espeak.dataDir != dataDir) {
      throw PhonemizeError("PHONEMIZER_FAILED", "espeak-ng already reads its data from " + espeak.dataDir +
                                                    " in this process; cannot switch to " + dataDir);
    }
    return;
  }
  // DONT_EXIT: without it espeak-ng ends the whole process when its data is missing.
  const int rate = espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 0, dataDir.c_str(), espeakINITIALIZE_DONT_EXIT);
  if (rate <= 0) {
    throw PhonemizeError("PHONEMIZER_FAILED", "espeak-ng cannot read its data in " + dataDir +
                                                  " (the espeak-ng-data folder shipped beside the addon)");
  }
  espeak.dataDir = dataDir;
}

}  // namespace

std::vector<std::vector<Clause>> Phonemize(const std::string& dataDir, const std::string& voice,
                                           const std::vector<std::string>& texts, const std::atomic<bool>* cancel) {
  Espeak& espeak = TheEspeak();
  std::lock_guard<std::mutex> lock(espeak.mutex);
  Initialize(espeak, dataDir);
  if (espeak.voice != voice) {
    espeak.voice.clear();
    const espeak_ERROR changed = espeak_SetVoiceByName(voice.c_str());
    voxmill_espeak_drop_wave_commands();
    if (changed != EE_OK) throw PhonemizeError("NO_VOICE", "espeak-ng has no voice \"" + voice + "\"");
    espeak.voice = voice;
  }
  std::vector<std::vector<Clause>> out;
  out.reserve(texts.size());
  for (const std::string& text : texts) {
    if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) {
      throw PhonemizeError("ABORTED", "phonemizing was cancelled");
    }
    std::vector<Clause> clauses;
    voxmill_espeak_begin_text();
    // An empty text has no clause (espeak-ng would report one empty clause ending the input).
    const void* position = text.empty() ? nullptr : text.c_str();
    while (position != nullptr) {
      Clause clause;
      const char* phonemes = voxmill_espeak_clause_phonemes(&position, espeakCHARS_AUTO, kIpa, &clause.terminator);
      if (phonemes == nullptr) {
        throw PhonemizeError("PHONEMIZER_FAILED", "espeak-ng could not read the text as UTF-8");
      }
      clause.phonemes.assign(phonemes);
      if (clause.phonemes.size() > kMaxClauseBytes) {
        throw PhonemizeError("PHONEMIZER_FAILED", "espeak-ng gave more than 1 MiB of phonemes for one clause");
      }
      clauses.push_back(std::move(clause));
    }
    out.push_back(std::move(clauses));
  }
  return out;
}

std::string EspeakVersion() {
  const char* path = nullptr;
  const char* version = espeak_Info(&path);
  return version != nullptr ? version : "";
}

}  // namespace voxmill
