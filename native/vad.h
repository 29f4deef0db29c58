// Speech detection with whisper.cpp's Silero VAD. whisper_full_with_state() (one state per call) does
// not run VAD itself in whisper.cpp 1.9.1 — only whisper_full() on the context's shared state does —
// so we find the speech here: either only its regions (DetectSpeechRegions), or cut out and joined
// with a map from the cut audio's time to the original's (ExtractSpeech).
#pragma once
#include <atomic>
#include <climits>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace voxmill {

// Bounds that keep the arithmetic safe, not policy (TypeScript owns the ranges, and its own are far inside these):
// whisper.cpp turns each millisecond setting into samples as `16000 * ms / 1000` in a C int, and ExtractSpeech
// adds overlapSeconds' samples to a sample index.
constexpr int kMaxVadMilliseconds = INT_MAX / 16000;             // 134,217 ms
constexpr double kMaxVadSeconds = kMaxVadMilliseconds / 1000.0;  // overlapSeconds

struct VadOptions {
  std::string modelPath;
  // Tuning: every value is set by the caller (TypeScript's VAD_DEFAULTS fill in what its caller left out).
  float threshold = 0;
  int minSpeechMs = 0;
  int minSilenceMs = 0;
  float maxSpeechSeconds = 0;  // 0, or above 100000 as in whisper.cpp: no limit
  int speechPadMs = 0;
  float overlapSeconds = 0;  // ExtractSpeech only
  // Silero is a small recurrent model over 32 ms chunks: measured slower on 2 threads than on 1 (548 vs 440 ms on
  // gb0.wav), so one unless a caller asks for more.
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

// Silero's speech probability for audio that arrives in pieces (a live stream): one per 512-sample window (32 ms at
// 16 kHz), the model's recurrent state carried from one piece to the next, so the probabilities equal those of the
// whole audio at once. Samples that do not fill a window wait for the next piece (fewer than 512 are kept). Not
// thread-safe: one Push at a time (the JS wrap refuses a second while one runs).
class VadStream {
 public:
  explicit VadStream(VadOptions options);
  ~VadStream();
  VadStream(const VadStream&) = delete;
  VadStream& operator=(const VadStream&) = delete;

  // Appends `count` samples and sets `probs` to the probability of every window they complete. Loads the model on
  // the first call (the caller's thread: a worker). On failure `error` says why, and the stream refuses every later
  // call with the same status.
  VadStatus Push(const float* samples, size_t count, std::vector<float>& probs, std::string& error);

 private:
  VadStatus PushSamples(const float* samples, size_t count, std::vector<float>& probs, std::string& error);

  struct State;
  VadOptions options_;
  std::unique_ptr<State> state_;
};

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
