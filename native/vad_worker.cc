#include "vad_worker.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "js_args.h"
#include "promise_worker.h"
#include "vad.h"

namespace voxmill {
namespace {

class VadDetectWorker final : public PromiseWorker {
 public:
  VadDetectWorker(Napi::Env env, Napi::Float32Array samples, VadOptions options)
      : PromiseWorker(env, "voxmill.detectSpeech"),
        samples_(samples.Data()),
        count_(samples.ElementLength()),
        options_(std::move(options)) {
    // The samples are read in place, not copied (the input may be hours long): hold the array until the
    // job settles.
    input_ = Napi::Persistent(static_cast<Napi::Object>(samples));
  }

 protected:
  void Run() override {
    std::string error;
    switch (DetectSpeechRegions(samples_, count_, options_, cancelFlag().get(), regions_, error)) {
      case VadStatus::kOk:
        return;
      case VadStatus::kAborted:
        return Fail("ABORTED", "speech detection was aborted");
      case VadStatus::kModelLoadFailed:
        return Fail("MODEL_LOAD_FAILED", error);
      case VadStatus::kFailed:
        return Fail("VAD_FAILED", error);
    }
  }

  Napi::Value Result(Napi::Env env) override {
    Napi::Array result = Napi::Array::New(env, regions_.size());
    for (size_t i = 0; i < regions_.size(); i++) {
      Napi::Object region = Napi::Object::New(env);
      region.Set("start", static_cast<double>(regions_[i].start) / kRate);
      region.Set("end", static_cast<double>(regions_[i].end) / kRate);
      result.Set(static_cast<uint32_t>(i), region);
    }
    return result;
  }

  void Settled() override { input_.Reset(); }

  void ReleaseNative() override {
    regions_.clear();
    regions_.shrink_to_fit();
  }

 private:
  static constexpr double kRate = 16000.0;
  const float* samples_;
  size_t count_;
  VadOptions options_;
  std::vector<SpeechRegion> regions_;
  Napi::ObjectReference input_;
};

}  // namespace

Napi::Value DetectSpeechJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsTypedArray() ||
      info[0].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array || !info[1].IsObject()) {
    throw Napi::TypeError::New(env, "detectSpeech(samples: Float32Array, params: object)");
  }
  Napi::Object params = info[1].As<Napi::Object>();
  VadOptions options;
  Napi::Value modelPath = params.Get("modelPath");
  if (!modelPath.IsString() || modelPath.As<Napi::String>().Utf8Value().empty()) {
    throw Napi::TypeError::New(env, "detectSpeech: params.modelPath must be a non-empty string");
  }
  options.modelPath = modelPath.As<Napi::String>().Utf8Value();
  options.threshold = static_cast<float>(OptionalNumber(env, params, "threshold", options.threshold, 0, 1));
  options.minSpeechMs = static_cast<int>(OptionalNumber(env, params, "minSpeechMs", options.minSpeechMs, 0, 3600000));
  options.minSilenceMs =
      static_cast<int>(OptionalNumber(env, params, "minSilenceMs", options.minSilenceMs, 0, 3600000));
  options.maxSpeechSeconds =
      static_cast<float>(OptionalNumber(env, params, "maxSpeechSeconds", options.maxSpeechSeconds, 0, 100000));
  options.speechPadMs = static_cast<int>(OptionalNumber(env, params, "speechPadMs", options.speechPadMs, 0, 3600000));
  // One thread: Silero's graph is too small to split (measured on gb0.wav: 417 ms on 1 thread, 548 ms on 2).
  options.threads = static_cast<int>(OptionalNumber(env, params, "threads", 1, 1, 64));
  Napi::Value whisperSegmentation = params.Get("whisperSegmentation");
  options.whisperSegmentation = whisperSegmentation.IsBoolean() && whisperSegmentation.As<Napi::Boolean>().Value();
  auto* worker = new VadDetectWorker(env, info[0].As<Napi::Float32Array>(), std::move(options));
  return worker->Start();
}

}  // namespace voxmill
