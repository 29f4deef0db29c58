#include "whisper_model.h"

#include <future>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "addon_data.h"
#include "js_args.h"
#include "promise_worker.h"
#include "vad_worker.h"

namespace voxmill {
namespace {

// ---------------------------------------------------------------------------------------------------
// Loading

class WhisperModelLoadWorker final : public PromiseWorker {
 public:
  WhisperModelLoadWorker(Napi::Env env, LoadOptions options)
      : PromiseWorker(env, "voxmill.WhisperModel.load"), options_(std::move(options)) {}

 protected:
  void Run() override {
    WhisperFailure failure;
    context_ = LoadWhisperModel(options_, cancelFlag().get(), facts_, failure);
    if (!context_) Fail(failure.code, failure.message);
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

// What transcribe() was asked for: whisper's parameters, and which events the listener wants.
struct TranscribeRequest {
  TranscribeParams params;
  bool progressEvents = false;
  bool segmentEvents = false;
};

struct JobEvent {
  enum Kind { kProgress, kSegment, kSpeech, kFlush } kind;
  int progress;
  int index;
  double t0, t1;
  std::string text;
  std::vector<SpeechSpan> spans;
  // kFlush: set once every earlier event was delivered (or dropped at shutdown). Shared: a worker that stops waiting
  // (the process is exiting) must not leave the main thread a dangling promise.
  std::shared_ptr<std::promise<void>> delivered;
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

class WhisperModelTranscribeWorker final : public PromiseWorker {
 public:
  WhisperModelTranscribeWorker(Napi::Env env, Napi::Object owner, WhisperContextPtr context, Napi::Float32Array samples,
                               TranscribeRequest request, Napi::Function onEvent)
      : PromiseWorker(env, "voxmill.WhisperModel.transcribe"),
        context_(std::move(context)),
        request_(std::move(request)),
        samples_(samples.Data()),
        count_(samples.ElementLength()) {
    owner_ = Napi::Persistent(owner);
    // The samples are read in place, not copied: hold the array until the job settles.
    input_ = Napi::Persistent(samples.As<Napi::Object>());
    if (!onEvent.IsEmpty()) {
      events_ = EventFunction::New(env, onEvent, "voxmill.transcribe.events", 0, 1);
      hasEvents_ = true;
    }
  }

 protected:
  void Run() override {
    WhisperFailure failure;
    if (!TranscribeWhisper(context_.get(), samples_, count_, request_.params, cancelFlag().get(), Callbacks(), result_,
                           failure)) {
      Fail(failure.code, failure.message);
    }
    FlushEvents();
#if defined(__GLIBC__)
    // A call frees hundreds of MB (state, DTW scratch); glibc keeps it in this thread's arena unless asked,
    // so a server's RSS would sit at the peak of its busiest moment. Returning it costs about a millisecond.
    malloc_trim(0);
#endif
  }

  Napi::Value Result(Napi::Env env) override {
    Napi::Object result = Napi::Object::New(env);
    result.Set("language", result_.language);
    result.Set("vad", result_.vad);
    result.Set("speech", SpansToJs(env, result_.speech));
    Napi::Array segments = Napi::Array::New(env, result_.segments.size());
    for (size_t i = 0; i < result_.segments.size(); i++) {
      const SegmentOut& s = result_.segments[i];
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
    result_.segments.clear();
    result_.segments.shrink_to_fit();
  }

 private:
  // Events go to the listener only when there is one, and progress and segments only when asked for.
  TranscribeCallbacks Callbacks() {
    TranscribeCallbacks callbacks;
    if (!hasEvents_) return callbacks;
    callbacks.speech = [this](const std::vector<SpeechSpan>& spans) {
      Emit(new JobEvent{JobEvent::kSpeech, 0, 0, 0, 0, {}, spans});
    };
    if (request_.progressEvents) {
      callbacks.progress = [this](int progress) { Emit(new JobEvent{JobEvent::kProgress, progress, 0, 0, 0, {}, {}}); };
    }
    if (request_.segmentEvents) {
      callbacks.segment = [this](int index, double t0, double t1, const std::string& text) {
        Emit(new JobEvent{JobEvent::kSegment, 0, index, t0, t1, text, {}});
      };
    }
    return callbacks;
  }

  void Emit(JobEvent* event) {
    if (events_.NonBlockingCall(event) != napi_ok) delete event;
  }

  // Thread-safe-function calls and the worker's completion reach the main thread through different
  // handles, so without this a promise could settle before its last segment event is delivered.
  void FlushEvents() {
    if (!hasEvents_) return;
    auto delivered = std::make_shared<std::promise<void>>();
    std::future<void> done = delivered->get_future();
    auto* marker = new JobEvent{JobEvent::kFlush, 0, 0, 0, 0, {}, {}, delivered};
    if (events_.NonBlockingCall(marker) != napi_ok) {
      delete marker;
      return;
    }
    // Waits in steps so that a process that is exiting (and will never deliver the marker) lets this thread end.
    while (done.wait_for(std::chrono::milliseconds(10)) != std::future_status::ready) {
      if (ProcessExiting()) return;
    }
  }

  WhisperContextPtr context_;
  TranscribeRequest request_;
  const float* samples_;
  size_t count_;
  Napi::ObjectReference owner_;
  Napi::ObjectReference input_;
  EventFunction events_;
  bool hasEvents_ = false;
  TranscriptionOut result_;
};

// ---------------------------------------------------------------------------------------------------
// Arguments. TypeScript validates every option and sends each one it defaults (WhisperModel.load,
// normalizeTranscribeOptions): those are required here. The bounds are TypeScript's own numbers, kept because
// they are also what keeps a direct caller from exhausting the machine (a million threads, a beam of 10,000).

constexpr size_t kMaxPathBytes = 4096;
constexpr int kMaxGpuDevice = 64;
constexpr int kMaxThreads = 64;
constexpr int kMaxBeam = 16;
// Not TypeScript's limit (2,000 characters, at most 6,000 UTF-8 bytes): only a bound on what is copied.
constexpr size_t kMaxPromptBytes = 64 * 1024;
constexpr size_t kMaxLanguageBytes = 16;
constexpr int kMaxSegmentLength = 1 << 20;
// Every whisper model has 1500 audio positions (checked at load) and 448 text positions.
constexpr int kMaxAudioContext = 1500;
constexpr int kMaxWindowTokens = 448;

LoadOptions ReadLoadOptions(Napi::Env env, const Napi::CallbackInfo& info) {
  LoadOptions options;
  options.path = ReadStringArg(env, info, 0, "path", kMaxPathBytes);
  const JsObject o = ReadObjectArg(env, info, 1, "options");
  options.gpu = ReadBoolean(env, o, "gpu");
  options.flashAttention = ReadBoolean(env, o, "flashAttention");
  options.dtw = ReadBoolean(env, o, "dtw");
  options.decoderInt8 = ReadBoolean(env, o, "decoderInt8");
  options.greedyInt8Vocabulary = ReadBoolean(env, o, "greedyInt8Vocabulary");
  options.gpuDevice = static_cast<int>(ReadInteger(env, o, "gpuDevice", 0, kMaxGpuDevice));
  return options;
}

TranscribeRequest ReadTranscribeRequest(Napi::Env env, const JsObject& o) {
  TranscribeRequest request;
  TranscribeParams& p = request.params;
  p.translate = ReadBoolean(env, o, "translate");
  p.threads = static_cast<int>(ReadInteger(env, o, "threads", 1, kMaxThreads));
  p.beamSize = static_cast<int>(ReadInteger(env, o, "beamSize", 0, kMaxBeam));
  p.bestOf = static_cast<int>(ReadInteger(env, o, "bestOf", 1, kMaxBeam));
  p.temperature = static_cast<float>(ReadNumber(env, o, "temperature", 0, 1));
  p.temperatureIncrement = static_cast<float>(ReadNumber(env, o, "temperatureIncrement", 0, 1));
  p.entropyThreshold = static_cast<float>(ReadNumber(env, o, "entropyThreshold", 0, 100));
  p.logprobThreshold = static_cast<float>(ReadNumber(env, o, "logprobThreshold", -100, 0));
  p.noSpeechThreshold = static_cast<float>(ReadNumber(env, o, "noSpeechThreshold", 0, 1));
  p.initialPrompt = ReadString(env, o, "initialPrompt", 0, kMaxPromptBytes);
  p.tokenTimestamps = ReadBoolean(env, o, "tokenTimestamps");
  p.tinydiarize = ReadBoolean(env, o, "tinydiarize");
  p.suppressNonSpeech = ReadBoolean(env, o, "suppressNonSpeech");
  p.conditionOnPreviousText = ReadBoolean(env, o, "conditionOnPreviousText");
  // Optional in the native API; absent means off (auto-detected language, whisper's plain segmentation, no VAD,
  // no events).
  p.language = OptionalString(env, o, "language", "", kMaxLanguageBytes);
  p.maxSegmentLength = OptionalInteger(env, o, "maxSegmentLength", 0, 0, kMaxSegmentLength);
  p.splitOnWord = OptionalBoolean(env, o, "splitOnWord", false);
  if (const std::optional<JsObject> vad = OptionalObject(env, o, "vad")) {
    p.vad = true;
    // One Silero thread whatever the transcription uses (VadOptions::threads).
    p.vadOptions = ReadVadOptions(env, *vad, true);
  }
  p.audioContext = OptionalInteger(env, o, "audioContext", 0, 0, kMaxAudioContext);
  p.maxWindowTokens = OptionalInteger(env, o, "maxWindowTokens", 0, 0, kMaxWindowTokens);
  request.progressEvents = OptionalBoolean(env, o, "progressEvents", false);
  request.segmentEvents = OptionalBoolean(env, o, "segmentEvents", false);
  return request;
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
    ThrowCoded(info.Env(), "INVALID_ARGUMENT", "WhisperModel cannot be constructed directly; use WhisperModel.load()");
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
  auto* worker = new WhisperModelLoadWorker(info.Env(), ReadLoadOptions(info.Env(), info));
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
  o.Set("decoderInt8", facts_.decoderInt8);
  o.Set("greedyInt8Vocabulary", facts_.greedyInt8Vocabulary);
  o.Set("gpu", facts_.gpu);
  o.Set("device", facts_.device);
  o.Set("disposed", context_ == nullptr);
  return o;
}

Napi::Value WhisperModel::Transcribe(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!context_) throw Napi::Error::New(env, "this model has been disposed");
  Napi::Float32Array samples = ReadFloat32ArrayArg(env, info, 0, "samples");
  TranscribeRequest request = ReadTranscribeRequest(env, ReadObjectArg(env, info, 1, "params"));
  Napi::Function onEvent = OptionalFunctionArg(env, info, 2, "onEvent");
  auto threads = std::make_shared<std::atomic<int>>(request.params.threads);
  request.params.liveThreads = threads;
  auto* worker = new WhisperModelTranscribeWorker(env, Value(), context_, samples, std::move(request), onEvent);
  Napi::Object job = worker->Start();
  // setThreads(n): the threads of the call's next graph passes (the CPU budget lends and takes back threads while a
  // call runs). The counter is shared, so a call to it after the job ended is harmless.
  job.Set("setThreads", Napi::Function::New(env, [threads](const Napi::CallbackInfo& call) {
            Napi::Env callEnv = call.Env();
            const int n = static_cast<int>(ReadIntegerArg(callEnv, call, 0, "threads", 1, kMaxThreads));
            threads->store(n, std::memory_order_relaxed);
            return callEnv.Undefined();
          }));
  return job;
}

Napi::Value WhisperModel::Dispose(const Napi::CallbackInfo& info) {
  context_.reset();
  return info.Env().Undefined();
}

}  // namespace voxmill
