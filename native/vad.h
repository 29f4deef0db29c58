// Speech detection with whisper.cpp's Silero VAD. whisper_full_with_state() (one state per call) does
// not run VAD itself in whisper.cpp 1.9.1 — only whisper_full() on the context's shared state does —
// so we find the speech here: either only its regions (DetectSpeechRegions), or cut out and joined
// with a map from the cut audio's time to the original's (ExtractSpeech).
#pragma once
#include <atomic>
#include <cstddef>
#include <string>
#include <vector>

namespace voxmill {

struct VadOptions {
  std::string modelPath;
  float threshold = 0.5f;
  int minSpeechMs = 250;
  int minSilenceMs = 100;
  float maxSpeechSeconds = 0;  // 0 = no limit
  int speechPadMs = 30;
  float overlapSeconds = 0.1f;  // ExtractSpeech only
  int threads = 1;
  // Tests only: let whisper.cpp build the regions itself (whisper_vad_segments_from_samples), in one
  // pass that cannot be cancelled, to check that our segmentation gives the same result.
  bool whisperSegmentation = false;
};

// A stretch of speech in samples of the input: [start, end), start < end <= the input's length.
struct SpeechRegion {
  size_t start, end;
};

enum class VadStatus { kOk, kModelLoadFailed, kFailed, kAborted };

// Finds the speech in 16 kHz mono `samples` without copying them: sorted, non-overlapping regions,
// identical to the segments whisper.cpp's own VAD produces (centisecond-aligned). `cancel` (may be
// null) is checked about every 2 s of audio. On failure `error` says why.
VadStatus DetectSpeechRegions(const float* samples, size_t count, const VadOptions& options,
                              const std::atomic<bool>* cancel, std::vector<SpeechRegion>& regions, std::string& error);

// One kept stretch of speech: [origStart, origEnd] in the input became [procStart, procEnd] in the
// concatenated speech audio. Seconds.
struct SpeechSpan {
  double origStart, origEnd, procStart, procEnd;
};

// Fills `speech` with the speech stretches joined by 100 ms of silence, and `spans` with the map.
// Empty output means no speech. Returns false with `error` set when the VAD could not run, or was
// cancelled through `cancel` (then `error` is "aborted").
bool ExtractSpeech(const float* samples, size_t count, const VadOptions& options, std::vector<float>& speech,
                   std::vector<SpeechSpan>& spans, std::string& error, const std::atomic<bool>* cancel = nullptr);

}  // namespace voxmill
