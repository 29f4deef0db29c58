#include "vad.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <memory>

#include "whisper.h"
#include "whisper_log.h"

namespace voxmill {
namespace {

constexpr int kSampleRate = WHISPER_SAMPLE_RATE;
// Same gap whisper.cpp puts between speech stretches, so decoding sees the same audio as with whisper_full().
constexpr size_t kGapSamples = kSampleRate / 10;
// Audio handed to whisper.cpp per detection call; the cancel flag is read between calls. A power of two, so
// a whole number of Silero windows (512 samples at 16 kHz). Measured on gb0.wav (127 s): 417 ms either way,
// in 2 s blocks or in one call, and the probabilities are identical (the LSTM state carries over).
constexpr size_t kBlockSamples = 32768;

struct VadContextDeleter {
  void operator()(whisper_vad_context* ctx) const { whisper_vad_free(ctx); }
};
struct VadSegmentsDeleter {
  void operator()(whisper_vad_segments* segments) const { whisper_vad_free_segments(segments); }
};
using VadContext = std::unique_ptr<whisper_vad_context, VadContextDeleter>;

size_t CentisecondsToSamples(float cs, size_t count) {
  if (!(cs > 0)) return 0;
  const double samples = static_cast<double>(cs) / 100.0 * kSampleRate;
  return std::min(count, static_cast<size_t>(samples));
}

// whisper.cpp hands out region bounds rounded to centiseconds (as floats), which ExtractSpeech has always
// turned back into samples with CentisecondsToSamples; doing exactly the same keeps the cut audio identical.
size_t RoundToCentisecond(int64_t samples, size_t count) {
  const int64_t cs = static_cast<int64_t>(static_cast<double>(samples) / kSampleRate * 100.0 + 0.5);
  return CentisecondsToSamples(static_cast<float>(cs), count);
}

whisper_vad_params WhisperParams(const VadOptions& options) {
  whisper_vad_params params = whisper_vad_default_params();
  params.threshold = options.threshold;
  params.min_speech_duration_ms = options.minSpeechMs;
  params.min_silence_duration_ms = options.minSilenceMs;
  if (options.maxSpeechSeconds > 0) params.max_speech_duration_s = options.maxSpeechSeconds;
  params.speech_pad_ms = options.speechPadMs;
  params.samples_overlap = options.overlapSeconds;
  return params;
}

// whisper.cpp's VAD loader trusts every number in the file: a whisper model or a damaged file passed as the
// VAD model makes it index past arrays and hit GGML_ASSERT, which aborts the process. So the file's layout is
// checked first: Silero's architecture exactly as whisper.cpp 1.9.1's VAD graph is written for it (it
// hard-codes those channel counts and the window), then every tensor record's type, shape and size.
class ModelReader {
 public:
  explicit ModelReader(FILE* file) : file_(file) {}
  bool Int(int32_t& value) { return std::fread(&value, sizeof(value), 1, file_) == 1; }
  bool Skip(int64_t bytes) { return bytes >= 0 && fseeko(file_, bytes, SEEK_CUR) == 0; }
  bool AtEnd() {
    const int c = std::fgetc(file_);
    if (c == EOF) return true;
    std::ungetc(c, file_);
    return false;
  }
  int64_t Remaining() {
    const off_t here = ftello(file_);
    if (here < 0 || fseeko(file_, 0, SEEK_END) != 0) return -1;
    const off_t end = ftello(file_);
    if (fseeko(file_, here, SEEK_SET) != 0) return -1;
    return static_cast<int64_t>(end - here);
  }

 private:
  FILE* file_;
};

bool CheckVadModelFile(const std::string& path, std::string& error) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!file) return true;  // whisper.cpp reports a missing or unreadable file itself, without harm
  ModelReader in(file.get());
  auto bad = [&](const std::string& why) {
    error = "cannot load the VAD model " + path + ": not a Silero VAD model in ggml format (" + why + ")";
    return false;
  };
  int32_t magic = 0, typeLength = 0;
  if (!in.Int(magic) || static_cast<uint32_t>(magic) != 0x67676d6c) return bad("bad magic");
  if (!in.Int(typeLength) || typeLength < 1 || typeLength > 64 || !in.Skip(typeLength)) return bad("bad model type");
  // version (3), window, context, encoder layers (4 x in, out, kernel), LSTM in/hidden, final conv in/out.
  constexpr int32_t kExpected[] = {512, 64, 4, 129, 128, 3, 128, 64, 3, 64, 64, 3, 64, 128, 3, 128, 128, 128, 1};
  int32_t version[3];
  for (int32_t& v : version) {
    if (!in.Int(v)) return bad("truncated header");
  }
  for (int32_t expected : kExpected) {
    int32_t value = 0;
    if (!in.Int(value)) return bad("truncated header");
    if (value != expected) return bad("unexpected hyperparameters");
  }
  int tensors = 0;
  while (!in.AtEnd()) {
    int32_t dims = 0, nameLength = 0, type = 0;
    if (!in.Int(dims) || !in.Int(nameLength) || !in.Int(type)) return bad("truncated tensor header");
    if (dims < 0 || dims > 4 || nameLength < 1 || nameLength > 256) return bad("bad tensor header");
    if (type != 0 && type != 1) return bad("tensor type other than f32/f16");
    int64_t elements = 1;
    for (int32_t d = 0; d < dims; d++) {
      int32_t n = 0;
      if (!in.Int(n) || n < 1 || n > (1 << 20)) return bad("bad tensor shape");
      elements *= n;
      if (elements > (int64_t{1} << 30)) return bad("tensor too large");
    }
    const int64_t bytes = elements * (type == 0 ? 4 : 2);
    if (in.Remaining() < nameLength + bytes || !in.Skip(nameLength + bytes)) return bad("truncated tensor data");
    tensors++;
  }
  if (tensors == 0) return bad("no weights");
  return true;
}

// Loaded per call: a context holds the LSTM state and the probabilities of the audio it ran on, so it cannot
// serve two calls at once, and loading the 885 kB model takes about 1 ms (measured) — far less than a cache
// with a pool and locks per environment would be worth.
VadContext LoadVad(const VadOptions& options, std::string& error) {
  whisper_vad_context_params contextParams = whisper_vad_default_context_params();
  contextParams.n_threads = std::max(1, options.threads);
  contextParams.use_gpu = false;
  if (!CheckVadModelFile(options.modelPath, error)) return nullptr;
  ResetThreadLog();
  VadContext vad(whisper_vad_init_from_file_with_params(options.modelPath.c_str(), contextParams));
  if (!vad) {
    error = "cannot load the VAD model " + options.modelPath;
    const std::string log = ThreadLog();
    if (!log.empty()) error += ": " + log;
  }
  return vad;
}

// whisper.cpp's own segmentation, in one call that cannot be interrupted.
VadStatus WhisperSegmentation(whisper_vad_context* vad, const float* samples, size_t count, const VadOptions& options,
                              std::vector<SpeechRegion>& regions, std::string& error) {
  if (count > static_cast<size_t>(INT_MAX)) {
    error = "too many samples for whisper.cpp's VAD";
    return VadStatus::kFailed;
  }
  std::unique_ptr<whisper_vad_segments, VadSegmentsDeleter> segments(
      whisper_vad_segments_from_samples(vad, WhisperParams(options), samples, static_cast<int>(count)));
  if (!segments) {
    error = "voice activity detection failed";
    return VadStatus::kFailed;
  }
  const int n = whisper_vad_segments_n_segments(segments.get());
  for (int i = 0; i < n; i++) {
    regions.push_back({CentisecondsToSamples(whisper_vad_segments_get_segment_t0(segments.get(), i), count),
                       CentisecondsToSamples(whisper_vad_segments_get_segment_t1(segments.get(), i), count)});
  }
  return VadStatus::kOk;
}

enum class ProbabilityStatus { kOk, kAborted, kFailed };

// Silero's speech probability for every window of the input, computed block by block so that the cancel
// flag is honoured, without copying the audio (only a zero-padded last block). `window` receives the
// model's window in samples, learnt from how many probabilities a block yields.
ProbabilityStatus ComputeProbabilities(whisper_vad_context* vad, const float* samples, size_t count,
                                       const std::atomic<bool>* cancel, std::vector<float>& probs, int64_t& window) {
  probs.clear();
  window = 0;
  whisper_vad_reset_state(vad);
  std::vector<float> tail;
  for (size_t offset = 0; offset < count; offset += kBlockSamples) {
    if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) return ProbabilityStatus::kAborted;
    const size_t length = std::min(kBlockSamples, count - offset);
    const float* block = samples + offset;
    // whisper.cpp zero-pads a partial last window too, and windows after it do not change those before.
    if (length < kBlockSamples) {
      tail.assign(kBlockSamples, 0.0f);
      std::copy(block, block + length, tail.begin());
      block = tail.data();
    }
    if (!whisper_vad_detect_speech_no_reset(vad, block, static_cast<int>(kBlockSamples))) {
      return ProbabilityStatus::kFailed;
    }
    const int produced = whisper_vad_n_probs(vad);
    // The layout check pins the window to 512, which divides the block; anything else is a broken context.
    if (produced <= 0 || kBlockSamples % static_cast<size_t>(produced) != 0) return ProbabilityStatus::kFailed;
    const int64_t blockWindow = static_cast<int64_t>(kBlockSamples / static_cast<size_t>(produced));
    if (window == 0) {
      window = blockWindow;
      probs.reserve((count + window - 1) / window);
    } else if (blockWindow != window) {
      return ProbabilityStatus::kFailed;
    }
    const size_t wanted = (length + window - 1) / window;
    const float* p = whisper_vad_probs(vad);
    probs.insert(probs.end(), p, p + std::min(wanted, static_cast<size_t>(produced)));
  }
  return ProbabilityStatus::kOk;
}

struct Stretch {
  int64_t start, end;
};

// Speech stretches from window probabilities, following whisper.cpp 1.9.1's whisper_vad_segments_from_probs
// (Silero's get_speech_timestamps plus whisper.cpp's merging and padding) step by step, quirks included,
// so transcription cuts the same audio as whisper_full() would. It is redone here rather than called
// because whisper.cpp only segments probabilities it computed itself in one call, which cannot be
// interrupted (24 s for two hours of audio here). The test "matches whisper.cpp's own segmentation"
// (test/native/speech-regions.test.ts) compares both on real speech with several settings.
std::vector<Stretch> SegmentProbabilities(const std::vector<float>& probs, int64_t window, const VadOptions& options) {
  const int64_t rate = kSampleRate;
  const float threshold = options.threshold;
  const float endThreshold = std::max(threshold - 0.15f, 0.01f);
  const int64_t minSilence = rate * options.minSilenceMs / 1000;
  const int64_t minSpeech = rate * options.minSpeechMs / 1000;
  const int64_t pad = rate * options.speechPadMs / 1000;
  const int64_t length = static_cast<int64_t>(probs.size()) * window;
  // whisper.cpp counts the limit in whole seconds and takes an unusable one as no limit.
  int64_t maxSpeech = INT_MAX / 2;
  if (options.maxSpeechSeconds > 0 && options.maxSpeechSeconds <= 100000.0f) {
    const int64_t limit = rate * static_cast<int64_t>(options.maxSpeechSeconds) - window - 2 * pad;
    if (limit >= 0 && limit <= INT_MAX) maxSpeech = limit;
  }
  // A silence at least this long marks where an over-long stretch may be split (Silero's 98 ms).
  const int64_t splitSilence = rate * 98 / 1000;

  std::vector<Stretch> stretches;
  bool inSpeech = false;
  bool open = false;
  int64_t start = 0, silenceStart = 0, lastSplit = 0, resume = 0;  // 0 = none, as in whisper.cpp
  for (size_t i = 0; i < probs.size(); i++) {
    const float p = probs[i];
    const int64_t at = window * static_cast<int64_t>(i);
    if (p >= threshold && silenceStart != 0) {
      silenceStart = 0;
      if (resume < lastSplit) resume = at;
    }
    if (p >= threshold && !inSpeech) {
      inSpeech = true;
      open = true;
      start = at;
      continue;
    }
    if (inSpeech && at - start > maxSpeech) {
      if (lastSplit != 0) {
        stretches.push_back({start, lastSplit});
        open = true;
        if (resume < lastSplit) {
          inSpeech = false;
          open = false;
        } else {
          start = resume;
        }
        lastSplit = resume = silenceStart = 0;
      } else {
        stretches.push_back({start, at});
        lastSplit = resume = silenceStart = 0;
        inSpeech = false;
        open = false;
        continue;
      }
    }
    if (p < endThreshold && inSpeech) {
      if (silenceStart == 0) silenceStart = at;
      if (at - silenceStart > splitSilence) lastSplit = silenceStart;
      if (at - silenceStart < minSilence) continue;
      if (silenceStart - start > minSpeech) stretches.push_back({start, silenceStart});
      lastSplit = resume = silenceStart = 0;
      inSpeech = false;
      open = false;
      continue;
    }
  }
  if (open && length - start > minSpeech) stretches.push_back({start, length});

  // Stretches less than 200 ms apart become one; then too-short ones go.
  const int64_t mergeGap = rate * 200 / 1000;
  std::vector<Stretch> merged;
  for (const Stretch& s : stretches) {
    if (!merged.empty() && s.start - merged.back().end < mergeGap) {
      merged.back().end = s.end;
    } else {
      merged.push_back(s);
    }
  }
  merged.erase(
      std::remove_if(merged.begin(), merged.end(), [&](const Stretch& s) { return s.end - s.start < minSpeech; }),
      merged.end());

  // Padding: neighbours closer than two pads split the silence between them.
  for (size_t i = 0; i < merged.size(); i++) {
    Stretch& s = merged[i];
    if (i == 0) s.start = s.start > pad ? s.start - pad : 0;
    if (i + 1 < merged.size()) {
      Stretch& next = merged[i + 1];
      const int64_t silence = next.start - s.end;
      if (silence < 2 * pad) {
        s.end += silence / 2;
        next.start = next.start > silence / 2 ? next.start - silence / 2 : 0;
      } else {
        s.end = std::min(s.end + pad, length);
        next.start = next.start > pad ? next.start - pad : 0;
      }
    } else {
      s.end = std::min(s.end + pad, length);
    }
  }
  return merged;
}

// Every region whisper.cpp would report, in samples clamped to `count` (possibly empty ones).
VadStatus FindSpeech(const float* samples, size_t count, const VadOptions& options, const std::atomic<bool>* cancel,
                     std::vector<SpeechRegion>& regions, std::string& error) {
  regions.clear();
  VadContext vad = LoadVad(options, error);
  if (!vad) return VadStatus::kModelLoadFailed;
  if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) return VadStatus::kAborted;
  if (options.whisperSegmentation) return WhisperSegmentation(vad.get(), samples, count, options, regions, error);

  std::vector<float> probs;
  int64_t window = 0;
  switch (ComputeProbabilities(vad.get(), samples, count, cancel, probs, window)) {
    case ProbabilityStatus::kOk:
      break;
    case ProbabilityStatus::kAborted:
      return VadStatus::kAborted;
    case ProbabilityStatus::kFailed:
      error = "voice activity detection failed";
      return VadStatus::kFailed;
  }
  const std::vector<Stretch> stretches = SegmentProbabilities(probs, window, options);
  regions.reserve(stretches.size());
  for (const Stretch& s : stretches) {
    regions.push_back({RoundToCentisecond(s.start, count), RoundToCentisecond(s.end, count)});
  }
  return VadStatus::kOk;
}

}  // namespace

VadStatus DetectSpeechRegions(const float* samples, size_t count, const VadOptions& options,
                              const std::atomic<bool>* cancel, std::vector<SpeechRegion>& regions, std::string& error) {
  const VadStatus status = FindSpeech(samples, count, options, cancel, regions, error);
  if (status != VadStatus::kOk) return status;
  regions.erase(std::remove_if(regions.begin(), regions.end(), [](const SpeechRegion& r) { return r.end <= r.start; }),
                regions.end());
  return VadStatus::kOk;
}

bool ExtractSpeech(const float* samples, size_t count, const VadOptions& options, std::vector<float>& speech,
                   std::vector<SpeechSpan>& spans, std::string& error, const std::atomic<bool>* cancel) {
  speech.clear();
  spans.clear();
  std::vector<SpeechRegion> regions;
  const VadStatus status = FindSpeech(samples, count, options, cancel, regions, error);
  if (status == VadStatus::kAborted) error = "aborted";
  if (status != VadStatus::kOk) return false;
  const size_t n = regions.size();
  const size_t overlap = static_cast<size_t>(std::max(0.0f, options.overlapSeconds) * kSampleRate);
  for (size_t i = 0; i < n; i++) {
    const size_t start = regions[i].start;
    size_t end = regions[i].end;
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
