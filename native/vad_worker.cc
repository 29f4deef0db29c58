#include "vad_worker.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>
#include <vector>

#include "js_args.h"
#include "promise_worker.h"
#include "vad.h"

namespace voxmill {
namespace {

// Bounds for memory safety (TypeScript never sends threads, and takes no path longer than the system does).
constexpr int kMaxVadThreads = 64;
constexpr size_t kMaxPathBytes = 4096;

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

VadOptions ReadVadOptions(Napi::Env env, const JsObject& params, bool overlap) {
  // All required: TypeScript fills in every setting (src/audio/vad-settings.ts). The ranges are not TypeScript's
  // (0-60,000 ms, 0-3,600 s, ...), which it alone enforces, but the bounds the arithmetic needs (vad.h).
  VadOptions options;
  options.modelPath = ReadString(env, params, "modelPath", 1, kMaxPathBytes);
  options.threshold = static_cast<float>(ReadNumber(env, params, "threshold", 0, 1));
  options.minSpeechMs = static_cast<int>(ReadInteger(env, params, "minSpeechMs", 0, kMaxVadMilliseconds));
  options.minSilenceMs = static_cast<int>(ReadInteger(env, params, "minSilenceMs", 0, kMaxVadMilliseconds));
  options.maxSpeechSeconds = static_cast<float>(ReadNumber(env, params, "maxSpeechSeconds", 0, FLT_MAX));
  options.speechPadMs = static_cast<int>(ReadInteger(env, params, "speechPadMs", 0, kMaxVadMilliseconds));
  if (overlap)
    options.overlapSeconds = static_cast<float>(ReadNumber(env, params, "overlapSeconds", 0, kMaxVadSeconds));
  return options;
}

Napi::Value DetectSpeechJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Float32Array samples = ReadFloat32ArrayArg(env, info, 0, "samples");
  const JsObject params = ReadObjectArg(env, info, 1, "params");
  VadOptions options = ReadVadOptions(env, params, false);
  // Both off unless asked for: one thread (see VadOptions::threads), our own segmentation.
  options.threads = OptionalInteger(env, params, "threads", 1, 1, kMaxVadThreads);
  options.whisperSegmentation = OptionalBoolean(env, params, "whisperSegmentation", false);
  auto* worker = new VadDetectWorker(env, samples, std::move(options));
  return worker->Start();
}

}  // namespace voxmill
