#include "vad.h"

#include <algorithm>
#include <memory>

#include "whisper.h"
#include "whisper_log.h"

namespace voxmill {
namespace {

constexpr int kSampleRate = WHISPER_SAMPLE_RATE;
// Same gap whisper.cpp puts between speech stretches, so decoding sees the same audio as with whisper_full().
constexpr size_t kGapSamples = kSampleRate / 10;

struct VadContextDeleter {
  void operator()(whisper_vad_context* ctx) const { whisper_vad_free(ctx); }
};
struct VadSegmentsDeleter {
  void operator()(whisper_vad_segments* segments) const { whisper_vad_free_segments(segments); }
};

size_t CentisecondsToSamples(float cs, size_t count) {
  if (!(cs > 0)) return 0;
  const double samples = static_cast<double>(cs) / 100.0 * kSampleRate;
  return std::min(count, static_cast<size_t>(samples));
}

}  // namespace

bool ExtractSpeech(const float* samples, size_t count, const VadOptions& options, std::vector<float>& speech,
                   std::vector<SpeechSpan>& spans, std::string& error) {
  speech.clear();
  spans.clear();
  whisper_vad_context_params contextParams = whisper_vad_default_context_params();
  contextParams.n_threads = options.threads;
  contextParams.use_gpu = false;
  ResetThreadLog();
  std::unique_ptr<whisper_vad_context, VadContextDeleter> vad(
      whisper_vad_init_from_file_with_params(options.modelPath.c_str(), contextParams));
  if (!vad) {
    error = "cannot load the VAD model " + options.modelPath;
    const std::string log = ThreadLog();
    if (!log.empty()) error += ": " + log;
    return false;
  }
  whisper_vad_params params = whisper_vad_default_params();
  params.threshold = options.threshold;
  params.min_speech_duration_ms = options.minSpeechMs;
  params.min_silence_duration_ms = options.minSilenceMs;
  if (options.maxSpeechSeconds > 0) params.max_speech_duration_s = options.maxSpeechSeconds;
  params.speech_pad_ms = options.speechPadMs;
  params.samples_overlap = options.overlapSeconds;

  std::unique_ptr<whisper_vad_segments, VadSegmentsDeleter> segments(
      whisper_vad_segments_from_samples(vad.get(), params, samples, static_cast<int>(count)));
  if (!segments) {
    error = "voice activity detection failed";
    return false;
  }
  const int n = whisper_vad_segments_n_segments(segments.get());
  const size_t overlap = static_cast<size_t>(std::max(0.0f, options.overlapSeconds) * kSampleRate);
  for (int i = 0; i < n; i++) {
    const size_t start = CentisecondsToSamples(whisper_vad_segments_get_segment_t0(segments.get(), i), count);
    size_t end = CentisecondsToSamples(whisper_vad_segments_get_segment_t1(segments.get(), i), count);
    if (i + 1 < n) end = std::min(count, end + overlap);
    if (end <= start) continue;
    if (!spans.empty()) speech.insert(speech.end(), kGapSamples, 0.0f);
    const size_t procStart = speech.size();
    speech.insert(speech.end(), samples + start, samples + end);
    spans.push_back({static_cast<double>(start) / kSampleRate, static_cast<double>(end) / kSampleRate,
                     static_cast<double>(procStart) / kSampleRate, static_cast<double>(speech.size()) / kSampleRate});
  }
  return true;
}

}  // namespace voxmill
