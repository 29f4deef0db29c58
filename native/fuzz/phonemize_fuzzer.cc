// libFuzzer harness for voxmill::Phonemize: espeak-ng, compiled into the addon, reading text that comes from users
// (every synthesis request, SSML, live speech). Built and run by scripts/fuzz.sh (VOXMILL_FUZZ_TARGET=phonemize) with
// AddressSanitizer and UBSan, espeak-ng's sources instrumented too; not part of the addon (CMakeLists.txt only globs
// native/*.cc). TypeScript cleans text before it gets here (control characters, long words), but the native call must
// hold on its own: the input goes in as any JavaScript string can reach it (valid UTF-8, see ValidUtf8), up to its
// first NUL (which the addon refuses, and espeak-ng would stop at).
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

// The text as the addon receives it: N-API hands over a JavaScript string as valid UTF-8 (a lone surrogate becomes
// U+FFFD), so the bytes are made valid the same way: each ill-formed sequence becomes U+FFFD.
std::string ValidUtf8(const uint8_t* data, size_t size) {
  std::string out;
  size_t i = 0;
  while (i < size) {
    const uint8_t lead = data[i];
    size_t length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
    bool valid = length > 0 && i + length <= size && !(lead == 0xC0 || lead == 0xC1 || lead > 0xF4);
    uint32_t code = length == 1 ? lead : length == 2 ? lead & 0x1F : length == 3 ? lead & 0x0F : lead & 0x07;
    for (size_t k = 1; valid && k < length; k++) {
      valid = (data[i + k] & 0xC0) == 0x80;
      code = (code << 6) | (data[i + k] & 0x3F);
    }
    // Overlong forms, surrogates and code points past U+10FFFF are ill-formed too.
    const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (valid && (code < least[length] || (code >= 0xD800 && code <= 0xDFFF) || code > 0x10FFFF)) valid = false;
    if (valid) {
      out.append(reinterpret_cast<const char*>(data + i), length);
      i += length;
    } else {
      out.append("\xEF\xBF\xBD");
      i += 1;
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const char* dataDir = std::getenv("VOXMILL_FUZZ_ESPEAK_DATA");
  if (dataDir == nullptr || size == 0) return 0;
  const char* voice = kVoices[data[size - 1] % (sizeof(kVoices) / sizeof(kVoices[0]))];
  std::string text = ValidUtf8(data, size - 1);
  text = text.substr(0, text.find('\0'));
  try {
    voxmill::Phonemize(dataDir, voice, std::vector<std::string>{text}, nullptr);
  } catch (const voxmill::PhonemizeError&) {
    // A coded error is the right outcome for text espeak-ng cannot read; anything else reaches libFuzzer as a crash.
  }
  return 0;
}
