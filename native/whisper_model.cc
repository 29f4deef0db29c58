#include "whisper_model.h"

#include <atomic>
#include <climits>
#include <cmath>
#include <future>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "addon_data.h"
#include "ggml-backend.h"
#include "js_args.h"
#include "promise_worker.h"
#include "vad.h"
#include "whisper_log.h"

namespace voxmill {
namespace {

// ---------------------------------------------------------------------------------------------------
// Loading

struct LoadOptions {
  std::string path;
  bool gpu = true;
  bool flashAttention = true;
  bool dtw = true;  // use DTW token timestamps when a preset matches the model
  int gpuDevice = 0;
};

struct Header {
  int32_t vocab, audioCtx, audioState, audioHead, audioLayers, textCtx, textState, textHead, textLayers, mels, ftype;
};

// Reads the ggml header before whisper.cpp sees the file: a wrong file fails with a clear message,
// and the header decides the DTW alignment-heads preset, which must be fixed at load time.
bool ReadHeader(const std::string& path, Header& header, std::string& error) {
  FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    error = "cannot open " + path;
    return false;
  }
  uint32_t magic = 0;
  const bool ok = std::fread(&magic, sizeof(magic), 1, file) == 1 && std::fread(&header, sizeof(header), 1, file) == 1;
  std::fclose(file);
  if (!ok || magic != 0x67676d6c) {
    error = path + " is not a whisper.cpp ggml model (bad magic or too short)";
    return false;
  }
  return true;
}

whisper_alignment_heads_preset DtwPreset(const Header& h, std::string& name) {
  const bool english = h.vocab == 51864;
  switch (h.audioLayers) {
    case 4:
      name = english ? "tiny.en" : "tiny";
      return english ? WHISPER_AHEADS_TINY_EN : WHISPER_AHEADS_TINY;
    case 6:
      name = english ? "base.en" : "base";
      return english ? WHISPER_AHEADS_BASE_EN : WHISPER_AHEADS_BASE;
    case 12:
      name = english ? "small.en" : "small";
      return english ? WHISPER_AHEADS_SMALL_EN : WHISPER_AHEADS_SMALL;
    case 24:
      name = english ? "medium.en" : "medium";
      return english ? WHISPER_AHEADS_MEDIUM_EN : WHISPER_AHEADS_MEDIUM;
    case 32:
      // large-v1 and v2 share every shape, so only v3 (128 mels) and v3-turbo (4 text layers) are known.
      if (h.mels == 128) {
        name = h.textLayers == 4 ? "large-v3-turbo" : "large-v3";
        return h.textLayers == 4 ? WHISPER_AHEADS_LARGE_V3_TURBO : WHISPER_AHEADS_LARGE_V3;
      }
      break;
    default:
      break;
  }
  name.clear();
  return WHISPER_AHEADS_NONE;
}

bool HasGpuDevice() {
  for (size_t i = 0; i < ggml_backend_dev_count(); i++) {
    const auto type = ggml_backend_dev_type(ggml_backend_dev_get(i));
    if (type == GGML_BACKEND_DEVICE_TYPE_GPU || type == GGML_BACKEND_DEVICE_TYPE_IGPU) return true;
  }
  return false;
}

class WhisperModelLoadWorker final : public PromiseWorker {
 public:
  WhisperModelLoadWorker(Napi::Env env, LoadOptions options)
      : PromiseWorker(env, "voxmill.WhisperModel.load"), options_(std::move(options)) {}

 protected:
  void Run() override {
    Header header{};
    std::string error;
    if (!ReadHeader(options_.path, header, error)) return Fail("MODEL_LOAD_FAILED", error);
    whisper_context_params params = whisper_context_default_params();
    params.use_gpu = options_.gpu;
    params.gpu_device = options_.gpuDevice;
    params.flash_attn = options_.flashAttention;
    if (options_.dtw) {
      params.dtw_aheads_preset = DtwPreset(header, facts_.dtwPreset);
      params.dtw_token_timestamps = params.dtw_aheads_preset != WHISPER_AHEADS_NONE;
      // whisper.cpp computes DTW only without flash attention.
      if (params.dtw_token_timestamps) params.flash_attn = false;
    }
    if (Cancelled()) return Fail("ABORTED", "model loading was aborted");
    ResetThreadLog();
    whisper_context* ctx = whisper_init_from_file_with_params_no_state(options_.path.c_str(), params);
    if (ctx == nullptr) {
      const std::string log = ThreadLog();
      return Fail("MODEL_LOAD_FAILED", "whisper.cpp could not load " + options_.path + (log.empty() ? "" : ": " + log));
    }
    context_.reset(ctx, whisper_free);
    facts_.type = whisper_model_type_readable(ctx);
    facts_.multilingual = whisper_is_multilingual(ctx) != 0;
    facts_.vocabSize = whisper_model_n_vocab(ctx);
    facts_.audioLayers = whisper_model_n_audio_layer(ctx);
    facts_.textLayers = whisper_model_n_text_layer(ctx);
    facts_.audioState = whisper_model_n_audio_state(ctx);
    facts_.mels = whisper_model_n_mels(ctx);
    facts_.ftype = whisper_model_ftype(ctx);
    facts_.flashAttention = params.flash_attn;
    facts_.gpu = params.use_gpu && HasGpuDevice();
    if (!params.dtw_token_timestamps) facts_.dtwPreset.clear();
  }

  Napi::Value Result(Napi::Env env) override { return WhisperModel::Wrap(env, std::move(context_), facts_); }

  void ReleaseNative() override { context_.reset(); }

 private:
  LoadOptions options_;
  WhisperContextPtr context_;
  ModelFacts facts_;
};

// ---------------------------------------------------------------------------------------------------
// Transcription

struct TranscribeParams {
  std::string language;  // "" = auto-detect
  bool translate = false;
  int threads = 4;
  int beamSize = 0;  // 0 or 1 = greedy
  int bestOf = 5;
  float temperature = 0.0f;
  float temperatureIncrement = 0.2f;  // 0 = no fallback
  float entropyThreshold = 2.4f;
  float logprobThreshold = -1.0f;
  float noSpeechThreshold = 0.6f;
  std::string initialPrompt;
  bool tokenTimestamps = false;
  bool tinydiarize = false;
  bool suppressNonSpeech = false;
  bool noContext = false;
  int maxSegmentLength = 0;
  bool splitOnWord = false;
  bool vad = false;
  VadOptions vadOptions;
  bool progressEvents = false;
  bool segmentEvents = false;
};

struct TokenOut {
  int id;
  float p;
  double t0, t1, tDtw;  // seconds; tDtw < 0 when unavailable
  bool special;
  uint32_t byteLength;
};

struct SegmentOut {
  double t0, t1;
  std::string text;
  bool speakerTurnNext;
  float noSpeechProb;
  std::vector<TokenOut> tokens;
  std::string tokenBytes;  // every token's text back to back (UTF-8 may split across tokens)
};

struct JobEvent {
  enum Kind { kProgress, kSegment, kSpeech, kFlush } kind;
  int progress;
  int index;
  double t0, t1;
  std::string text;
  std::vector<SpeechSpan> spans;
  // kFlush: set once every earlier event was delivered (or dropped at shutdown).
  std::promise<void>* delivered = nullptr;
};

Napi::Array SpansToJs(Napi::Env env, const std::vector<SpeechSpan>& spans) {
  Napi::Array out = Napi::Array::New(env, spans.size());
  for (size_t i = 0; i < spans.size(); i++) {
    Napi::Object span = Napi::Object::New(env);
    span.Set("origStart", spans[i].origStart);
    span.Set("origEnd", spans[i].origEnd);
    span.Set("procStart", spans[i].procStart);
    span.Set("procEnd", spans[i].procEnd);
    out.Set(static_cast<uint32_t>(i), span);
  }
  return out;
}

void DeliverEvent(Napi::Env env, Napi::Function callback, std::nullptr_t*, JobEvent* event) {
  std::unique_ptr<JobEvent> owned(event);
  try {
    if (owned->kind == JobEvent::kFlush) {
      owned->delivered->set_value();
      return;
    }
    if (env == nullptr || callback.IsEmpty()) return;
    Napi::Object payload = Napi::Object::New(env);
    const char* kind = "progress";
    if (owned->kind == JobEvent::kProgress) {
      payload.Set("progress", owned->progress);
    } else if (owned->kind == JobEvent::kSegment) {
      kind = "segment";
      payload.Set("index", owned->index);
      payload.Set("start", owned->t0);
      payload.Set("end", owned->t1);
      payload.Set("text", owned->text);
    } else {
      kind = "speech";
      payload.Set("spans", SpansToJs(env, owned->spans));
    }
    callback.Call({Napi::String::New(env, kind), payload});
  } catch (...) {
    // The JS side guards user callbacks; anything thrown here (a JS exception, std::bad_alloc while building the
    // payload) is dropped: an exception escaping a thread-safe function's callback terminates the whole process.
  }
}

using EventFunction = Napi::TypedThreadSafeFunction<std::nullptr_t, JobEvent, DeliverEvent>;

double Centiseconds(int64_t t) { return static_cast<double>(t) / 100.0; }

class WhisperModelTranscribeWorker final : public PromiseWorker {
 public:
  WhisperModelTranscribeWorker(Napi::Env env, Napi::Object owner, WhisperContextPtr context, Napi::Float32Array samples,
                               TranscribeParams params, Napi::Function onEvent)
      : PromiseWorker(env, "voxmill.WhisperModel.transcribe"),
        context_(std::move(context)),
        params_(std::move(params)),
        samples_(samples.Data()),
        count_(samples.ElementLength()) {
    owner_ = Napi::Persistent(owner);
    input_ = Napi::Persistent(samples.As<Napi::Object>());
    if (!onEvent.IsEmpty()) {
      events_ = EventFunction::New(env, onEvent, "voxmill.transcribe.events", 0, 1);
      hasEvents_ = true;
    }
  }

 protected:
  void Run() override {
    Transcribe();
    FlushEvents();
#if defined(__GLIBC__)
    // A call frees hundreds of MB (state, DTW scratch); glibc keeps it in this thread's arena unless asked,
    // so a server's RSS would sit at the peak of its busiest moment. Returning it costs about a millisecond.
    malloc_trim(0);
#endif
  }

 private:
  // Thread-safe-function calls and the worker's completion reach the main thread through different
  // handles, so without this a promise could settle before its last segment event is delivered.
  void FlushEvents() {
    if (!hasEvents_) return;
    std::promise<void> delivered;
    std::future<void> done = delivered.get_future();
    auto* marker = new JobEvent{JobEvent::kFlush, 0, 0, 0, 0, {}, {}, &delivered};
    if (events_.BlockingCall(marker) != napi_ok) {
      delete marker;
      return;
    }
    done.wait();
  }

  void Transcribe() {
    if (count_ > static_cast<size_t>(INT_MAX)) return Fail("AUDIO_TOO_LONG", "too many samples for whisper.cpp");
    // The decoder and the TypeScript layer hand over finite samples only; a direct caller that does not is refused
    // here rather than letting NaN reach whisper.cpp (whose DTW timestamps crash on it). About 0.1 ms per minute.
    for (size_t i = 0; i < count_; i++) {
      if (!std::isfinite(samples_[i])) {
        return Fail("INVALID_ARGUMENT", "samples[" + std::to_string(i) + "] is not finite (NaN or Infinity)");
      }
    }
    const float* audio = samples_;
    size_t audioCount = count_;
    std::vector<float> speech;
    if (params_.vad) {
      std::string error;
      if (!ExtractSpeech(samples_, count_, params_.vadOptions, speech, spans_, error, cancelFlag().get())) {
        return Cancelled() ? Fail("ABORTED", "aborted") : Fail("VAD_FAILED", error);
      }
      vadUsed_ = true;
      // Segment events carry times of the cut audio; the listener needs the map first (events stay in order).
      if (hasEvents_) Emit(new JobEvent{JobEvent::kSpeech, 0, 0, 0, 0, {}, spans_});
      // No speech: the decoder is not run at all, so it cannot hallucinate on silence.
      if (speech.empty()) return;
      audio = speech.data();
      audioCount = speech.size();
    }
    if (Cancelled()) return Fail("ABORTED", "transcription was aborted");

    whisper_context* ctx = context_.get();
    ResetThreadLog();
    std::unique_ptr<whisper_state, void (*)(whisper_state*)> state(whisper_init_state(ctx), whisper_free_state);
    if (!state) return Fail("OUT_OF_MEMORY", "cannot allocate a whisper state: " + ThreadLog());

    whisper_full_params wp =
        whisper_full_default_params(params_.beamSize > 1 ? WHISPER_SAMPLING_BEAM_SEARCH : WHISPER_SAMPLING_GREEDY);
    wp.n_threads = params_.threads;
    wp.translate = params_.translate;
    wp.language = params_.language.empty() ? "auto" : params_.language.c_str();
    wp.detect_language = false;
    wp.print_progress = false;
    wp.print_realtime = false;
    wp.print_timestamps = false;
    wp.print_special = false;
    wp.token_timestamps = params_.tokenTimestamps;
    wp.temperature = params_.temperature;
    wp.temperature_inc = params_.temperatureIncrement;
    wp.entropy_thold = params_.entropyThreshold;
    wp.logprob_thold = params_.logprobThreshold;
    wp.no_speech_thold = params_.noSpeechThreshold;
    wp.greedy.best_of = params_.bestOf;
    wp.beam_search.beam_size = params_.beamSize > 1 ? params_.beamSize : wp.beam_search.beam_size;
    wp.initial_prompt = params_.initialPrompt.empty() ? nullptr : params_.initialPrompt.c_str();
    wp.tdrz_enable = params_.tinydiarize;
    wp.suppress_nst = params_.suppressNonSpeech;
    wp.no_context = params_.noContext;
    wp.max_len = params_.maxSegmentLength;
    wp.split_on_word = params_.splitOnWord;
    wp.abort_callback = [](void* self) {
      auto* worker = static_cast<WhisperModelTranscribeWorker*>(self);
      return worker->Cancelled() || worker->nonFiniteOutput_.load(std::memory_order_relaxed);
    };
    wp.abort_callback_user_data = this;
    // Guards whisper.cpp's DTW timestamps independently of the samples. They backtrack through the cross-attention
    // of the finished segment; when that is NaN no cost comparison holds, the path never steps diagonally, is one
    // step longer than the buffer whisper.cpp allots (N + M - 1), writes before it, and the token walk runs past the
    // last segment: SIGSEGV. NaN attention means a NaN decoder state, so every logit is NaN too: seeing one here,
    // the step is steered away from ending the segment (end-of-text ruled out, the rest made finite) and the next
    // graph pass aborts, so no segment decoded from NaN ever reaches DTW.
    wp.logits_filter_callback = [](whisper_context* ctx, whisper_state*, const whisper_token_data*, int, float* logits,
                                   void* self) {
      const int n = whisper_n_vocab(ctx);
      bool finite = true;
      for (int i = 0; i < n && finite; i++) finite = std::isfinite(logits[i]) || logits[i] == -INFINITY;
      if (finite) return;
      static_cast<WhisperModelTranscribeWorker*>(self)->nonFiniteOutput_.store(true, std::memory_order_relaxed);
      for (int i = 0; i < n; i++) logits[i] = 0.0f;
      logits[whisper_token_eot(ctx)] = -INFINITY;
    };
    wp.logits_filter_callback_user_data = this;
    wp.encoder_begin_callback = [](whisper_context*, whisper_state*, void* flag) {
      return !static_cast<std::atomic<bool>*>(flag)->load();
    };
    wp.encoder_begin_callback_user_data = cancelFlag().get();
    if (hasEvents_ && params_.progressEvents) {
      wp.progress_callback = [](whisper_context*, whisper_state*, int progress, void* self) {
        static_cast<WhisperModelTranscribeWorker*>(self)->Emit(
            new JobEvent{JobEvent::kProgress, progress, 0, 0, 0, {}, {}});
      };
      wp.progress_callback_user_data = this;
    }
    if (hasEvents_ && params_.segmentEvents) {
      // whisper.cpp's n_new is wrong when DTW is on, so count what was reported ourselves.
      wp.new_segment_callback = [](whisper_context*, whisper_state* st, int, void* self) {
        static_cast<WhisperModelTranscribeWorker*>(self)->EmitSegments(st);
      };
      wp.new_segment_callback_user_data = this;
    }

    const int rc = whisper_full_with_state(ctx, state.get(), wp, audio, static_cast<int>(audioCount));
    if (Cancelled()) return Fail("ABORTED", "transcription was aborted");
    if (nonFiniteOutput_.load()) {
      return Fail("TRANSCRIPTION_FAILED",
                  "the model produced non-finite values (NaN or Infinity); its weights may be damaged. Stopped before "
                  "computing timestamps");
    }
    if (rc != 0) {
      const std::string log = ThreadLog();
      return Fail("TRANSCRIPTION_FAILED",
                  "whisper.cpp failed with code " + std::to_string(rc) + (log.empty() ? "" : ": " + log));
    }
    Collect(ctx, state.get());
  }

 protected:
  Napi::Value Result(Napi::Env env) override {
    Napi::Object result = Napi::Object::New(env);
    result.Set("language", language_);
    result.Set("vad", vadUsed_);
    result.Set("speech", SpansToJs(env, spans_));
    Napi::Array segments = Napi::Array::New(env, segments_.size());
    for (size_t i = 0; i < segments_.size(); i++) {
      const SegmentOut& s = segments_[i];
      Napi::Object segment = Napi::Object::New(env);
      segment.Set("start", s.t0);
      segment.Set("end", s.t1);
      segment.Set("text", s.text);
      segment.Set("speakerTurnNext", s.speakerTurnNext);
      segment.Set("noSpeechProb", s.noSpeechProb);
      segment.Set("tokenBytes", Napi::Buffer<char>::Copy(env, s.tokenBytes.data(), s.tokenBytes.size()));
      Napi::Array tokens = Napi::Array::New(env, s.tokens.size());
      for (size_t j = 0; j < s.tokens.size(); j++) {
        const TokenOut& t = s.tokens[j];
        Napi::Object token = Napi::Object::New(env);
        token.Set("id", t.id);
        token.Set("p", t.p);
        token.Set("start", t.t0);
        token.Set("end", t.t1);
        token.Set("dtw", t.tDtw);
        token.Set("special", t.special);
        token.Set("byteLength", t.byteLength);
        tokens.Set(static_cast<uint32_t>(j), token);
      }
      segment.Set("tokens", tokens);
      segments.Set(static_cast<uint32_t>(i), segment);
    }
    result.Set("segments", segments);
    return result;
  }

  void Settled() override {
    if (hasEvents_) events_.Release();
    input_.Reset();
    owner_.Reset();
  }

  void ReleaseNative() override {
    context_.reset();
    segments_.clear();
    segments_.shrink_to_fit();
  }

 private:
  void Emit(JobEvent* event) {
    if (events_.NonBlockingCall(event) != napi_ok) delete event;
  }

  void EmitSegments(whisper_state* state) {
    const int total = whisper_full_n_segments_from_state(state);
    for (; reported_ < total; reported_++) {
      const char* text = whisper_full_get_segment_text_from_state(state, reported_);
      Emit(new JobEvent{JobEvent::kSegment,
                        0,
                        reported_,
                        Centiseconds(whisper_full_get_segment_t0_from_state(state, reported_)),
                        Centiseconds(whisper_full_get_segment_t1_from_state(state, reported_)),
                        text != nullptr ? text : "",
                        {}});
    }
  }

  void Collect(whisper_context* ctx, whisper_state* state) {
    const int langId = whisper_full_lang_id_from_state(state);
    const char* lang = langId >= 0 ? whisper_lang_str(langId) : nullptr;
    language_ = lang != nullptr ? lang : params_.language;
    const whisper_token eot = whisper_token_eot(ctx);
    const int n = whisper_full_n_segments_from_state(state);
    segments_.reserve(static_cast<size_t>(n));
    for (int i = 0; i < n; i++) {
      SegmentOut segment;
      segment.t0 = Centiseconds(whisper_full_get_segment_t0_from_state(state, i));
      segment.t1 = Centiseconds(whisper_full_get_segment_t1_from_state(state, i));
      const char* text = whisper_full_get_segment_text_from_state(state, i);
      segment.text = text != nullptr ? text : "";
      segment.speakerTurnNext = whisper_full_get_segment_speaker_turn_next_from_state(state, i);
      segment.noSpeechProb = whisper_full_get_segment_no_speech_prob_from_state(state, i);
      const int tokens = whisper_full_n_tokens_from_state(state, i);
      segment.tokens.reserve(static_cast<size_t>(tokens));
      for (int j = 0; j < tokens; j++) {
        const whisper_token_data data = whisper_full_get_token_data_from_state(state, i, j);
        const char* piece = whisper_full_get_token_text_from_state(ctx, state, i, j);
        const std::string bytes = piece != nullptr ? piece : "";
        segment.tokenBytes += bytes;
        segment.tokens.push_back({data.id, data.p, Centiseconds(data.t0), Centiseconds(data.t1),
                                  data.t_dtw >= 0 ? Centiseconds(data.t_dtw) : -1.0, data.id >= eot,
                                  static_cast<uint32_t>(bytes.size())});
      }
      segments_.push_back(std::move(segment));
    }
  }

  WhisperContextPtr context_;
  TranscribeParams params_;
  const float* samples_;
  size_t count_;
  Napi::ObjectReference owner_;
  Napi::ObjectReference input_;
  EventFunction events_;
  bool hasEvents_ = false;
  int reported_ = 0;
  bool vadUsed_ = false;
  std::atomic<bool> nonFiniteOutput_{false};
  std::vector<SpeechSpan> spans_;
  std::string language_;
  std::vector<SegmentOut> segments_;
};

// --- reading JS options: TypeScript validates and defaults them; these bounds are the last line of defence
// for a direct caller (a thread count of a million or a beam of 10,000 would exhaust the machine) -----------

// whisper.cpp's own limits are far above what TypeScript allows; the native bounds match TypeScript's.
constexpr int kMaxThreads = 64;
constexpr int kMaxBeam = 16;
constexpr size_t kMaxPromptBytes = 64 * 1024;

TranscribeParams ReadParams(Napi::Env env, const Napi::Object& o) {
  TranscribeParams p;
  p.language = OptionalString(env, o, "language", "", 16);
  p.translate = OptionalBoolean(env, o, "translate", p.translate);
  p.threads = OptionalInteger(env, o, "threads", p.threads, 1, kMaxThreads);
  p.beamSize = OptionalInteger(env, o, "beamSize", p.beamSize, 0, kMaxBeam);
  p.bestOf = OptionalInteger(env, o, "bestOf", p.bestOf, 1, kMaxBeam);
  p.temperature = static_cast<float>(OptionalNumber(env, o, "temperature", p.temperature, 0, 1));
  p.temperatureIncrement =
      static_cast<float>(OptionalNumber(env, o, "temperatureIncrement", p.temperatureIncrement, 0, 1));
  p.entropyThreshold = static_cast<float>(OptionalNumber(env, o, "entropyThreshold", p.entropyThreshold, 0, 100));
  p.logprobThreshold = static_cast<float>(OptionalNumber(env, o, "logprobThreshold", p.logprobThreshold, -100, 0));
  p.noSpeechThreshold = static_cast<float>(OptionalNumber(env, o, "noSpeechThreshold", p.noSpeechThreshold, 0, 1));
  p.initialPrompt = OptionalString(env, o, "initialPrompt", "", kMaxPromptBytes);
  p.tokenTimestamps = OptionalBoolean(env, o, "tokenTimestamps", p.tokenTimestamps);
  p.tinydiarize = OptionalBoolean(env, o, "tinydiarize", p.tinydiarize);
  p.suppressNonSpeech = OptionalBoolean(env, o, "suppressNonSpeech", p.suppressNonSpeech);
  p.noContext = OptionalBoolean(env, o, "noContext", p.noContext);
  p.maxSegmentLength = OptionalInteger(env, o, "maxSegmentLength", 0, 0, 1 << 20);
  p.splitOnWord = OptionalBoolean(env, o, "splitOnWord", p.splitOnWord);
  p.progressEvents = OptionalBoolean(env, o, "progressEvents", false);
  p.segmentEvents = OptionalBoolean(env, o, "segmentEvents", false);
  Napi::Value vad = o.Get("vad");
  if (!vad.IsUndefined()) {
    if (!vad.IsObject())
      ThrowCoded(env, "INVALID_ARGUMENT", "options.vad must be an object; received " + Describe(vad));
    Napi::Object v = vad.As<Napi::Object>();
    p.vad = true;
    VadOptions& vo = p.vadOptions;
    vo.modelPath = OptionalString(env, v, "modelPath", "", 4096);
    vo.threshold = static_cast<float>(OptionalNumber(env, v, "threshold", vo.threshold, 0, 1));
    vo.minSpeechMs = OptionalInteger(env, v, "minSpeechMs", vo.minSpeechMs, 0, 3600000);
    vo.minSilenceMs = OptionalInteger(env, v, "minSilenceMs", vo.minSilenceMs, 0, 3600000);
    vo.maxSpeechSeconds =
        static_cast<float>(OptionalNumber(env, v, "maxSpeechSeconds", vo.maxSpeechSeconds, 0, 100000));
    vo.speechPadMs = OptionalInteger(env, v, "speechPadMs", vo.speechPadMs, 0, 3600000);
    vo.overlapSeconds = static_cast<float>(OptionalNumber(env, v, "overlapSeconds", vo.overlapSeconds, 0, 10));
    // Silero is a small recurrent model over 32 ms chunks: measured slower on 2 threads than on 1 (548 vs 440 ms on
    // gb0.wav), so it keeps one whatever the transcription uses.
    vo.threads = 1;
  }
  return p;
}

}  // namespace

// ---------------------------------------------------------------------------------------------------

Napi::Function WhisperModel::Init(Napi::Env env) {
  return DefineClass(env, "WhisperModel",
                     {
                         StaticMethod<&WhisperModel::Load>("load"),
                         InstanceMethod<&WhisperModel::Info>("info"),
                         InstanceMethod<&WhisperModel::Transcribe>("transcribe"),
                         InstanceMethod<&WhisperModel::Dispose>("dispose"),
                     });
}

WhisperModel::WhisperModel(const Napi::CallbackInfo& info) : Napi::ObjectWrap<WhisperModel>(info) {
  // Only Wrap() may construct: it passes the context through an External.
  if (info.Length() != 1 || !info[0].IsExternal()) {
    throw Napi::TypeError::New(info.Env(), "WhisperModel cannot be constructed directly; use WhisperModel.load()");
  }
  auto* pending = info[0].As<Napi::External<std::pair<WhisperContextPtr, ModelFacts>>>().Data();
  context_ = std::move(pending->first);
  facts_ = pending->second;
}

Napi::Object WhisperModel::Wrap(Napi::Env env, WhisperContextPtr context, const ModelFacts& facts) {
  std::pair<WhisperContextPtr, ModelFacts> pending{std::move(context), facts};
  Napi::Function constructor = AddonData::From(env).whisperModel.Value();
  return constructor.New({Napi::External<std::pair<WhisperContextPtr, ModelFacts>>::New(env, &pending)});
}

Napi::Value WhisperModel::Load(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString())
    throw Napi::TypeError::New(env, "load(path, options): path must be a string");
  LoadOptions options;
  options.path = info[0].As<Napi::String>().Utf8Value();
  if (info.Length() > 1 && info[1].IsObject()) {
    Napi::Object o = info[1].As<Napi::Object>();
    options.gpu = OptionalBoolean(env, o, "gpu", options.gpu);
    options.flashAttention = OptionalBoolean(env, o, "flashAttention", options.flashAttention);
    options.dtw = OptionalBoolean(env, o, "dtw", options.dtw);
    options.gpuDevice = OptionalInteger(env, o, "gpuDevice", options.gpuDevice, 0, 64);
  }
  auto* worker = new WhisperModelLoadWorker(env, std::move(options));
  return worker->Start();
}

Napi::Value WhisperModel::Info(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = Napi::Object::New(env);
  o.Set("type", facts_.type);
  o.Set("multilingual", facts_.multilingual);
  o.Set("vocabSize", facts_.vocabSize);
  o.Set("audioLayers", facts_.audioLayers);
  o.Set("textLayers", facts_.textLayers);
  o.Set("audioState", facts_.audioState);
  o.Set("mels", facts_.mels);
  o.Set("ftype", facts_.ftype);
  o.Set("dtwPreset", facts_.dtwPreset.empty() ? env.Null() : Napi::String::New(env, facts_.dtwPreset));
  o.Set("flashAttention", facts_.flashAttention);
  o.Set("gpu", facts_.gpu);
  o.Set("disposed", context_ == nullptr);
  return o;
}

Napi::Value WhisperModel::Transcribe(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!context_) throw Napi::Error::New(env, "this model has been disposed");
  if (info.Length() < 2 || !info[0].IsTypedArray() ||
      info[0].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array || !info[1].IsObject()) {
    throw Napi::TypeError::New(env, "transcribe(samples: Float32Array, params: object, onEvent?: function)");
  }
  Napi::Function onEvent;
  if (info.Length() > 2 && info[2].IsFunction()) onEvent = info[2].As<Napi::Function>();
  TranscribeParams params = ReadParams(env, info[1].As<Napi::Object>());
  if (params.vad && params.vadOptions.modelPath.empty()) {
    throw Napi::TypeError::New(env, "transcribe: vad.modelPath must be a non-empty string");
  }
  auto* worker = new WhisperModelTranscribeWorker(env, Value(), context_, info[0].As<Napi::Float32Array>(),
                                                  std::move(params), onEvent);
  return worker->Start();
}

Napi::Value WhisperModel::Dispose(const Napi::CallbackInfo& info) {
  context_.reset();
  return info.Env().Undefined();
}

}  // namespace voxmill
