// Speech extraction with whisper.cpp's Silero VAD. whisper_full_with_state() (one state per call) does
// not run VAD itself in whisper.cpp 1.9.1 — only whisper_full() on the context's shared state does —
// so we cut the speech out here and hand back a map from the cut audio's time to the original's.
#pragma once
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
  float overlapSeconds = 0.1f;
  int threads = 1;
};

// One kept stretch of speech: [origStart, origEnd] in the input became [procStart, procEnd] in the
// concatenated speech audio. Seconds.
struct SpeechSpan {
  double origStart, origEnd, procStart, procEnd;
};

// Fills `speech` with the speech stretches joined by 100 ms of silence, and `spans` with the map.
// Empty output means no speech. Returns false with `error` set when the VAD could not run.
bool ExtractSpeech(const float* samples, size_t count, const VadOptions& options, std::vector<float>& speech,
                   std::vector<SpeechSpan>& spans, std::string& error);

}  // namespace voxmill
