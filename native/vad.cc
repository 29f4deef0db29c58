#include "vad.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "regular_file.h"
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
// VAD model makes it index past arrays and hit GGML_ASSERT, which aborts the process. It also returns on an
// unknown, missing or mis-sized tensor without freeing its context (about 900 kB lost per call), and loads
// a file that repeats one tensor in place of another with the other's weights left uninitialised. So the
// whole file is read and checked first, and whisper.cpp is given exactly the bytes that were checked (from
// memory, through its loader API, so the file cannot change between the check and the load): Silero's
// architecture exactly as whisper.cpp 1.9.1's VAD graph is written for it (it hard-codes those channel
// counts and the window), then every tensor record against the table below.

// The largest file accepted; a real one is 885,098 bytes (Silero v5.1.2 and v6.2.0 alike).
constexpr int64_t kMaxVadModelBytes = 4 << 20;

struct VadTensorSpec {
  const char* name;
  int32_t ne[4];  // ggml order, padded with 1
  int32_t type;   // 0 = f32, 1 = f16
};

// Every tensor whisper.cpp 1.9.1's whisper_vad_init_with_params creates, with the shape and type it creates
// it with (hparams as pinned by kExpectedHparams below), under the name models/convert-silero-vad-to-ggml.py
// writes it. The converter is the same for every Silero release and squeezes shapes (so the final conv is
// written as [128] and its bias as a scalar): v5.1.2 and v6.2.0 files have the same records (and the same
// size, 885,098 bytes, per models/catalog.json). A record may give fewer dimensions than listed when the rest
// are 1, as the loader compares only the padded shape; its type must be the one listed (the loader would
// read f32 data into an f16 tensor of the same byte size).
constexpr VadTensorSpec kVadTensors[] = {
    {"_model.encoder.0.reparam_conv.weight", {3, 129, 128, 1}, 1},
    {"_model.encoder.0.reparam_conv.bias", {128, 1, 1, 1}, 0},
    {"_model.encoder.1.reparam_conv.weight", {3, 128, 64, 1}, 1},
    {"_model.encoder.1.reparam_conv.bias", {64, 1, 1, 1}, 0},
    {"_model.encoder.2.reparam_conv.weight", {3, 64, 64, 1}, 1},
    {"_model.encoder.2.reparam_conv.bias", {64, 1, 1, 1}, 0},
    {"_model.encoder.3.reparam_conv.weight", {3, 64, 128, 1}, 1},
    {"_model.encoder.3.reparam_conv.bias", {128, 1, 1, 1}, 0},
    {"_model.decoder.rnn.weight_ih", {128, 512, 1, 1}, 0},
    {"_model.decoder.rnn.weight_hh", {128, 512, 1, 1}, 0},
    {"_model.decoder.rnn.bias_ih", {512, 1, 1, 1}, 0},
    {"_model.decoder.rnn.bias_hh", {512, 1, 1, 1}, 0},
    {"_model.decoder.decoder.2.weight", {128, 1, 1, 1}, 1},
    {"_model.decoder.decoder.2.bias", {1, 1, 1, 1}, 0},
    {"_model.stft.forward_basis_buffer", {256, 1, 258, 1}, 1},
};
constexpr size_t kVadTensorCount = sizeof(kVadTensors) / sizeof(kVadTensors[0]);

// After magic, model type and version (3): window, context, encoder layers (4 x in, out, kernel), LSTM
// in/hidden, final conv in/out.
constexpr int32_t kExpectedHparams[] = {512, 64, 4, 129, 128, 3, 128, 64, 3, 64, 64, 3, 64, 128, 3, 128, 128, 128, 1};

// Reads a model image in memory; every read is bounds-checked.
class ModelReader {
 public:
  ModelReader(const char* data, size_t size) : data_(data), size_(size) {}
  bool Int(int32_t& value) {
    if (size_ - pos_ < sizeof(value)) return false;
    std::memcpy(&value, data_ + pos_, sizeof(value));
    pos_ += sizeof(value);
    return true;
  }
  bool Bytes(size_t count, const char*& out) {
    if (size_ - pos_ < count) return false;
    out = data_ + pos_;
    pos_ += count;
    return true;
  }
  bool Skip(size_t count) {
    const char* ignored = nullptr;
    return Bytes(count, ignored);
  }
  bool AtEnd() const { return pos_ == size_; }

 private:
  const char* data_;
  size_t size_;
  size_t pos_ = 0;
};

// whisper.cpp's loader interface over the checked bytes. Like its own file loader, a read past the end
// reports the full size and sets eof (which is how the loader finds the end of the tensor records); the
// missing bytes read as zeros.
struct MemoryLoader {
  const char* data;
  size_t size;
  size_t pos = 0;
  bool eof = false;

  static size_t Read(void* ctx, void* output, size_t readSize) {
    auto* self = static_cast<MemoryLoader*>(ctx);
    const size_t available = std::min(readSize, self->size - self->pos);
    if (available > 0) std::memcpy(output, self->data + self->pos, available);
    if (available < readSize) {
      std::memset(static_cast<char*>(output) + available, 0, readSize - available);
      self->eof = true;
    }
    self->pos += available;
    return readSize;
  }
  static bool Eof(void* ctx) { return static_cast<MemoryLoader*>(ctx)->eof; }
  static void Close(void* /*ctx*/) {}
};

// Reads the whole file at `path` (which must be a regular file, opened without blocking: a FIFO must not
// hang the worker thread) into `bytes`.
bool ReadVadModelFile(const std::string& path, std::vector<char>& bytes, std::string& error) {
  const std::string prefix = "cannot load the VAD model " + path + ": ";
  RegularFile opened;
  if (!OpenRegularFile(path, opened)) {
    error = prefix + (opened.error != 0 ? std::strerror(opened.error)
                                        : "not a regular file (a directory, FIFO, socket or device)");
    return false;
  }
  std::unique_ptr<FILE, int (*)(FILE*)> file(opened.file, std::fclose);
  if (opened.size > kMaxVadModelBytes) {
    error = prefix + "not a Silero VAD model in ggml format (" + std::to_string(opened.size) + " bytes, too large)";
    return false;
  }
  // One byte more than stat() said, to notice a file that grew meanwhile; the check below sees the bytes read.
  bytes.resize(static_cast<size_t>(opened.size) + 1);
  const size_t got = std::fread(bytes.data(), 1, bytes.size(), file.get());
  if (std::ferror(file.get())) {
    error = prefix + "read error";
    return false;
  }
  if (got > static_cast<size_t>(opened.size)) {
    error = prefix + "the file changed while it was read";
    return false;
  }
  bytes.resize(got);
  return true;
}

bool CheckVadModel(const std::vector<char>& bytes, const std::string& path, std::string& error) {
  ModelReader in(bytes.data(), bytes.size());
  auto bad = [&](const std::string& why) {
    error = "cannot load the VAD model " + path + ": not a Silero VAD model in ggml format (" + why + ")";
    return false;
  };
  int32_t magic = 0, typeLength = 0;
  if (!in.Int(magic) || static_cast<uint32_t>(magic) != 0x67676d6c) return bad("bad magic");
  if (!in.Int(typeLength) || typeLength < 1 || typeLength > 64 || !in.Skip(static_cast<size_t>(typeLength))) {
    return bad("bad model type");
  }
  int32_t version[3];
  for (int32_t& v : version) {
    if (!in.Int(v)) return bad("truncated header");
  }
  for (int32_t expected : kExpectedHparams) {
    int32_t value = 0;
    if (!in.Int(value)) return bad("truncated header");
    if (value != expected) return bad("unexpected hyperparameters");
  }
  bool seen[kVadTensorCount] = {};
  size_t found = 0;
  while (!in.AtEnd()) {
    int32_t dims = 0, nameLength = 0, type = 0;
    if (!in.Int(dims) || !in.Int(nameLength) || !in.Int(type)) return bad("truncated tensor header");
    if (dims < 0 || dims > 4 || nameLength < 1 || nameLength > 256) return bad("bad tensor header");
    int32_t ne[4] = {1, 1, 1, 1};
    for (int32_t d = 0; d < dims; d++) {
      if (!in.Int(ne[d])) return bad("truncated tensor header");
    }
    const char* nameBytes = nullptr;
    if (!in.Bytes(static_cast<size_t>(nameLength), nameBytes)) return bad("truncated tensor header");
    const std::string name(nameBytes, static_cast<size_t>(nameLength));
    size_t index = 0;
    while (index < kVadTensorCount && name != kVadTensors[index].name) index++;
    if (index == kVadTensorCount) return bad("unknown tensor");
    const VadTensorSpec& spec = kVadTensors[index];
    if (seen[index]) return bad("tensor " + name + " appears twice");
    seen[index] = true;
    found++;
    if (type != spec.type) return bad("tensor " + name + " has the wrong type");
    int64_t elements = 1;
    for (int d = 0; d < 4; d++) {
      if (ne[d] != spec.ne[d]) return bad("tensor " + name + " has the wrong shape");
      elements *= ne[d];
    }
    if (!in.Skip(static_cast<size_t>(elements) * (type == 0 ? 4 : 2))) return bad("truncated tensor data");
  }
  if (found == 0) return bad("no weights");
  if (found != kVadTensorCount) return bad("missing tensors");
  return true;
}

// Loaded per call: a context holds the LSTM state and the probabilities of the audio it ran on, so it cannot
// serve two calls at once, and loading the 885 kB model takes about 1 ms (measured) — far less than a cache
// with a pool and locks per environment would be worth.
VadContext LoadVad(const VadOptions& options, std::string& error) {
  whisper_vad_context_params contextParams = whisper_vad_default_context_params();
  contextParams.n_threads = std::max(1, options.threads);
  contextParams.use_gpu = false;
  std::vector<char> bytes;
  if (!ReadVadModelFile(options.modelPath, bytes, error)) return nullptr;
  if (!CheckVadModel(bytes, options.modelPath, error)) return nullptr;
  ResetThreadLog();
  MemoryLoader source{bytes.data(), bytes.size()};
  whisper_model_loader loader = {};
  loader.context = &source;
  loader.read = &MemoryLoader::Read;
  loader.eof = &MemoryLoader::Eof;
  loader.close = &MemoryLoader::Close;
  VadContext vad(whisper_vad_init_with_params(&loader, contextParams));
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

// --- VadStream ---------------------------------------------------------------------------------------------------

namespace {
// Silero's window in whisper.cpp 1.9.1 (the model layout check pins it).
constexpr size_t kWindowSamples = 512;
}  // namespace

struct VadStream::State {
  VadContext vad;
  std::vector<float> carry;  // fewer than kWindowSamples samples waiting for the rest of their window
  VadStatus failed = VadStatus::kOk;
  std::string failure;
};

VadStream::VadStream(VadOptions options) : options_(std::move(options)), state_(std::make_unique<State>()) {}

VadStream::~VadStream() = default;

VadStatus VadStream::Push(const float* samples, size_t count, std::vector<float>& probs, std::string& error) {
  // Out of memory part-way would leave the model's state ahead of the carried samples: the stream fails for good.
  try {
    return PushSamples(samples, count, probs, error);
  } catch (const std::bad_alloc&) {
    state_->failed = VadStatus::kFailed;
    state_->failure = "out of memory in the VAD stream";
    error = state_->failure;
    return VadStatus::kFailed;
  }
}

VadStatus VadStream::PushSamples(const float* samples, size_t count, std::vector<float>& probs, std::string& error) {
  probs.clear();
  State& state = *state_;
  if (state.failed != VadStatus::kOk) {
    error = state.failure;
    return state.failed;
  }
  const auto fail = [&](VadStatus status, const std::string& message) {
    state.failed = status;
    state.failure = message;
    error = message;
    return status;
  };
  if (!state.vad) {
    std::string loadError;
    state.vad = LoadVad(options_, loadError);
    if (!state.vad) return fail(VadStatus::kModelLoadFailed, loadError);
    whisper_vad_reset_state(state.vad.get());
  }
  // Windows are taken from the carried samples and then straight from the input, never copying the whole piece.
  std::vector<float> first;
  size_t offset = 0;
  if (!state.carry.empty()) {
    const size_t need = kWindowSamples - state.carry.size();
    if (count < need) {
      state.carry.insert(state.carry.end(), samples, samples + count);
      return VadStatus::kOk;
    }
    first = std::move(state.carry);
    state.carry.clear();
    first.insert(first.end(), samples, samples + need);
    offset = need;
  }
  const size_t windows = (count - offset) / kWindowSamples;
  probs.reserve(windows + (first.empty() ? 0 : 1));
  const auto run = [&](const float* block, size_t n) {
    ResetThreadLog();
    if (!whisper_vad_detect_speech_no_reset(state.vad.get(), block, static_cast<int>(n * kWindowSamples)) ||
        whisper_vad_n_probs(state.vad.get()) != static_cast<int>(n)) {
      const std::string log = ThreadLog();
      fail(VadStatus::kFailed, log.empty() ? "the VAD failed" : "the VAD failed: " + log);
      return false;
    }
    const float* p = whisper_vad_probs(state.vad.get());
    probs.insert(probs.end(), p, p + n);
    return true;
  };
  if (!first.empty() && !run(first.data(), 1)) return state.failed;
  for (size_t done = 0; done < windows;) {
    const size_t n = std::min(windows - done, kBlockSamples / kWindowSamples);
    if (!run(samples + offset + done * kWindowSamples, n)) return state.failed;
    done += n;
  }
  const size_t used = offset + windows * kWindowSamples;
  state.carry.assign(samples + used, samples + count);
  return VadStatus::kOk;
}

}  // namespace voxmill
