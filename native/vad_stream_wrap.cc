#include "vad_stream_wrap.h"

#include <algorithm>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "js_args.h"
#include "promise_worker.h"

namespace voxmill {
namespace {

// A live stream sends 20-100 ms at a time; 10 s in one push is far beyond that and bounds the copy.
constexpr size_t kMaxPushSamples = 160000;
constexpr int kMaxVadThreads = 64;
constexpr size_t kMaxPathBytes = 4096;

// Holds the JS object (so GC cannot finalize it mid-push) and its own share of the stream (so dispose() mid-push
// cannot free what the worker thread is using).
class VadPushWorker final : public PromiseWorker {
 public:
  VadPushWorker(Napi::Env env, VadStreamWrap* wrap, Napi::Object owner, std::shared_ptr<VadStream> stream,
                std::vector<float> samples)
      : PromiseWorker(env, "voxmill.VadStream.push"),
        wrap_(wrap),
        stream_(std::move(stream)),
        samples_(std::move(samples)) {
    owner_ = Napi::Persistent(owner);
  }

 protected:
  void Run() override {
    if (Cancelled()) return Fail("ABORTED", "speech detection was aborted");
    std::string error;
    const VadStatus status = stream_->Push(samples_.data(), samples_.size(), probs_, error);
    samples_ = std::vector<float>();
    if (status == VadStatus::kModelLoadFailed) return Fail("MODEL_LOAD_FAILED", error);
    if (status != VadStatus::kOk) return Fail("VAD_FAILED", error);
  }

  Napi::Value Result(Napi::Env env) override {
    Napi::Float32Array out = Napi::Float32Array::New(env, probs_.size());
    std::copy(probs_.begin(), probs_.end(), out.Data());
    return out;
  }

  void Settled() override {
    wrap_->PushSettled();
    stream_.reset();
    owner_.Reset();
  }

  void ReleaseNative() override {
    stream_.reset();
    samples_ = std::vector<float>();
    probs_ = std::vector<float>();
  }

 private:
  VadStreamWrap* wrap_;
  Napi::ObjectReference owner_;
  std::shared_ptr<VadStream> stream_;
  std::vector<float> samples_;
  std::vector<float> probs_;
};

}  // namespace

Napi::Function VadStreamWrap::Init(Napi::Env env) {
  return DefineClass(env, "VadStream",
                     {
                         InstanceMethod<&VadStreamWrap::Push>("push"),
                         InstanceMethod<&VadStreamWrap::Dispose>("dispose"),
                     });
}

VadStreamWrap::VadStreamWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<VadStreamWrap>(info) {
  Napi::Env env = info.Env();
  const JsObject params = ReadObjectArg(env, info, 0, "params");
  VadOptions options;
  options.modelPath = ReadString(env, params, "modelPath", 1, kMaxPathBytes);
  options.threads = OptionalInteger(env, params, "threads", 1, 1, kMaxVadThreads);
  stream_ = std::make_shared<VadStream>(std::move(options));
}

Napi::Value VadStreamWrap::Push(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsTypedArray() ||
      info[0].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array) {
    return RejectedJob(env, "INVALID_ARGUMENT", "samples must be a Float32Array; received " + Describe(info[0]));
  }
  if (!stream_) return RejectedJob(env, "VAD_STREAM_CLOSED", "the VAD stream was disposed");
  if (busy_) return RejectedJob(env, "VAD_STREAM_BUSY", "another push() is still running; await it first");
  Napi::Float32Array array = info[0].As<Napi::Float32Array>();
  if (array.ElementLength() > kMaxPushSamples) {
    return RejectedJob(env, "INVALID_ARGUMENT",
                       "at most " + std::to_string(kMaxPushSamples) + " samples a push; received " +
                           std::to_string(array.ElementLength()));
  }
  // Copied: small, and a copy cannot be changed or detached under the worker thread.
  std::vector<float> samples;
  try {
    samples.assign(array.Data(), array.Data() + array.ElementLength());
  } catch (const std::bad_alloc&) {
    return RejectedJob(env, "OUT_OF_MEMORY",
                       "out of memory copying " + std::to_string(array.ElementLength()) + " samples");
  }
  auto* worker = new VadPushWorker(env, this, Value(), stream_, std::move(samples));
  Napi::Object job = worker->Start();
  busy_ = true;
  return job;
}

Napi::Value VadStreamWrap::Dispose(const Napi::CallbackInfo& info) {
  stream_.reset();
  return info.Env().Undefined();
}

void VadStreamWrap::PushSettled() { busy_ = false; }

}  // namespace voxmill
