// libFuzzer harness for voxmill::DecodeAudio, the one native entry point that takes bytes straight from users
// (HTTP uploads, files). Built and run by scripts/fuzz.sh with AddressSanitizer and UBSan; not part of the addon
// (CMakeLists.txt only globs native/*.cc).
//
// The input is passed whole as the audio bytes, so seed files (real wav/mp3/flac/ogg/opus/m4a/webm) stay valid
// containers. The options come from the last byte instead of a prefix for the same reason; that byte is still part
// of the audio, which costs nothing since most formats ignore trailing bytes.
#include "../audio_decode.h"

#include <cstddef>
#include <cstdint>

namespace {

// Low enough that one input decodes in milliseconds, high enough that a few seconds of real speech fits, so the
// resampler and the duration limit (AUDIO_TOO_LONG) are both reached from the seeds.
constexpr double kMaxDurationSeconds = 60.0;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const uint8_t flags = size > 0 ? data[size - 1] : 0;
  voxmill::DecodeRequest request;
  request.data = data;
  request.size = size;
  request.maxDurationSeconds = kMaxDurationSeconds;
  // Stereo adds a second resampler (planar output, the downmix of 3+ channels), a separate code path.
  request.stereo = (flags & 1) != 0;
  if ((flags & 2) != 0) {
    // The widest range a caller can configure (src/audio/decode.ts SAMPLE_RATE_LIMIT): extreme rates reach the
    // resampler instead of being refused at the header.
    request.minSampleRate = 1;
    request.maxSampleRate = voxmill::kMaxSampleRate;
  } else {
    // The TypeScript defaults (DEFAULT_MIN_SAMPLE_RATE, DEFAULT_MAX_SAMPLE_RATE).
    request.minSampleRate = 4000;
    request.maxSampleRate = 384000;
  }
  voxmill::DecodedAudio out;
  voxmill::DecodeFailure failure;
  const bool ok = voxmill::DecodeAudio(request, out, failure);
  // The documented output contract, checked so a violation is a finding and not just a silent wrong answer.
  if (ok) {
    if (out.samples.empty()) __builtin_trap();
    if (request.stereo && out.channels >= 2 &&
        (out.left.size() != out.samples.size() || out.right.size() != out.samples.size())) {
      __builtin_trap();
    }
    for (float v : out.samples) {
      if (!(v >= -1.0f && v <= 1.0f)) __builtin_trap();
    }
  } else if (failure.code.empty()) {
    __builtin_trap();
  }
  return 0;
}
