// libFuzzer harness for voxmill::Phonemize: espeak-ng, compiled into the addon, reading text that comes from users
// (every synthesis request, SSML, live speech). Built and run by scripts/fuzz.sh (VOXMILL_FUZZ_TARGET=phonemize) with
// AddressSanitizer and UBSan, espeak-ng's sources instrumented too; not part of the addon (CMakeLists.txt only globs
// native/*.cc). TypeScript cleans text before it gets here (control characters, long words), but the native call must
// hold on its own: the input goes in as it is, up to its first NUL (which TypeScript refuses, and espeak-ng would stop
// at).
//
// The last byte picks the espeak-ng voice, so one corpus reaches several languages' rules (numbers, abbreviations,
// scripts); VOXMILL_FUZZ_ESPEAK_DATA is the espeak-ng data folder (scripts/fuzz.sh passes the one beside the addon).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "../phonemizer_core.h"

namespace {

const char* const kVoices[] = {"en-us", "de", "fr", "es", "ru", "cmn", "ar", "hi", "vi", "pt-br", "ja", "el"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const char* dataDir = std::getenv("VOXMILL_FUZZ_ESPEAK_DATA");
  if (dataDir == nullptr || size == 0) return 0;
  const char* voice = kVoices[data[size - 1] % (sizeof(kVoices) / sizeof(kVoices[0]))];
  std::string text(reinterpret_cast<const char*>(data), size - 1);
  text = text.substr(0, text.find('\0'));
  try {
    voxmill::Phonemize(dataDir, voice, std::vector<std::string>{text}, nullptr);
  } catch (const voxmill::PhonemizeError&) {
    // A coded error is the right outcome for text espeak-ng cannot read; anything else reaches libFuzzer as a crash.
  }
  return 0;
}
