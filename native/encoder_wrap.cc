#include "encoder_wrap.h"

#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "js_args.h"
#include "promise_worker.h"

namespace voxmill {
namespace {

// A streamed chunk is a few hundred bytes to a few KB: copying it costs less than the heap object and
// GC finalizer of an external buffer. Whole files and big chunks are handed over without a copy.
constexpr size_t kAdoptFromBytes = 64 * 1024;

Napi::Buffer<uint8_t> ToBuffer(Napi::Env env, std::vector<uint8_t>&& bytes) {
  if (bytes.size() < kAdoptFromBytes) return Napi::Buffer<uint8_t>::Copy(env, bytes.data(), bytes.size());
  // Owned here until the Buffer exists: when creating it throws (a worker_thread terminated mid-encode),
  // node-addon-api drops the finalizer without calling it, and the vector must not leak.
  auto owned = std::make_unique<std::vector<uint8_t>>(std::move(bytes));
  Napi::Buffer<uint8_t> buffer = Napi::Buffer<uint8_t>::NewOrCopy(
      env, owned->data(), owned->size(), [](Napi::Env, uint8_t*, std::vector<uint8_t>* v) { delete v; }, owned.get());
  owned.release();  // the buffer's finalizer frees it now (or already did, if it copied)
  return buffer;
}

// Shared by encode() and finish(): holds the JS object (so GC cannot finalize it mid-job) and its own
// share of the encoder (so dispose() mid-job cannot free what the worker thread is using).
class AudioEncoderWorker : public PromiseWorker {
 public:
  AudioEncoderWorker(Napi::Env env, const char* resourceName, AudioEncoderWrap* wrap, Napi::Object owner,
                     std::shared_ptr<AudioEncoder> encoder)
      : PromiseWorker(env, resourceName), wrap_(wrap), encoder_(std::move(encoder)) {
    owner_ = Napi::Persistent(owner);
  }

 protected:
  // Runs `work` unless the job was aborted before it started (then the encoder is left as it was).
  template <typename Work>
  void RunUnlessAborted(Work work) {
    if (Cancelled()) {
      healthy_ = true;
      return Fail("ABORTED", "encoding was aborted");
    }
    EncodeFailure failure;
    healthy_ = work(failure);
    if (!healthy_) Fail(failure.code, failure.message);
  }

  Napi::Value Result(Napi::Env env) override { return ToBuffer(env, std::move(output_)); }

  void Settled() override {
    // Anything that escaped Run() (out of memory) left healthy_ false: the encoder is closed then too.
    wrap_->JobSettled(closesEncoder_ || !healthy_);
    encoder_.reset();
    owner_.Reset();
  }

  void ReleaseNative() override {
    encoder_.reset();
    output_.clear();
    output_.shrink_to_fit();
  }

  std::shared_ptr<AudioEncoder> encoder_;
  std::vector<uint8_t> output_;
  bool closesEncoder_ = false;

 private:
  AudioEncoderWrap* wrap_;
  Napi::ObjectReference owner_;
  bool healthy_ = false;
};

class AudioEncoderEncodeWorker final : public AudioEncoderWorker {
 public:
  AudioEncoderEncodeWorker(Napi::Env env, AudioEncoderWrap* wrap, Napi::Object owner,
                           std::shared_ptr<AudioEncoder> encoder, std::vector<float> samples)
      : AudioEncoderWorker(env, "voxmill.AudioEncoder.encode", wrap, owner, std::move(encoder)),
        samples_(std::move(samples)) {}

 protected:
  void Run() override {
    RunUnlessAborted([this](EncodeFailure& failure) {
      const bool ok = encoder_->Encode(samples_.data(), samples_.size(), output_, failure);
      samples_ = std::vector<float>();
      return ok;
    });
  }

 private:
  std::vector<float> samples_;
};

class AudioEncoderFinishWorker final : public AudioEncoderWorker {
 public:
  AudioEncoderFinishWorker(Napi::Env env, AudioEncoderWrap* wrap, Napi::Object owner,
                           std::shared_ptr<AudioEncoder> encoder)
      : AudioEncoderWorker(env, "voxmill.AudioEncoder.finish", wrap, owner, std::move(encoder)) {}

 protected:
  void Run() override {
    RunUnlessAborted([this](EncodeFailure& failure) {
      closesEncoder_ = true;
      return encoder_->Finish(output_, failure);
    });
  }
};

}  // namespace

Napi::Function AudioEncoderWrap::Init(Napi::Env env) {
  return DefineClass(env, "AudioEncoder",
                     {
                         InstanceMethod<&AudioEncoderWrap::Encode>("encode"),
                         InstanceMethod<&AudioEncoderWrap::Finish>("finish"),
                         InstanceMethod<&AudioEncoderWrap::Dispose>("dispose"),
                     });
}

AudioEncoderWrap::AudioEncoderWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<AudioEncoderWrap>(info) {
  Napi::Env env = info.Env();
  const JsObject o = ReadObjectArg(env, info, 0, "options");
  EncodeOptions options;
  // The values are checked by ValidateEncodeOptions (the encoder's own limits); here only their types.
  options.format = ReadString(env, o, "format", 1, 16);
  options.inputSampleRate = static_cast<int>(ReadInteger(env, o, "inputSampleRate", 0, 1e7));
  options.outputSampleRate = static_cast<int>(ReadInteger(env, o, "outputSampleRate", 0, 1e7));
  options.whole = ReadBoolean(env, o, "whole");
  // Always sent (TypeScript applies the format's default); ignored for PCM.
  options.bitRate = ReadInteger(env, o, "bitRate", 0, 1e9);
  EncodeFailure failure;
  if (!ValidateEncodeOptions(options, failure)) ThrowCoded(env, failure.code, failure.message);
  encoder_ = std::make_shared<AudioEncoder>(std::move(options));
}

const char* AudioEncoderWrap::Refusal() const {
  if (closed_) return "ENCODER_CLOSED";
  if (busy_) return "ENCODER_BUSY";
  return nullptr;
}

Napi::Value AudioEncoderWrap::Encode(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsTypedArray() ||
      info[0].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array) {
    // Rejected rather than thrown, as every refusal of encode() is.
    return RejectedJob(env, "INVALID_ARGUMENT", "samples must be a Float32Array; received " + Describe(info[0]));
  }
  if (const char* refusal = Refusal()) {
    return RejectedJob(env, refusal,
                       closed_ ? "the encoder was finished, disposed, or failed earlier"
                               : "another encode() or finish() is still running; await it first");
  }
  // Copied rather than borrowed: chunks are small (a sentence of speech is a few hundred KB at most),
  // and a copy cannot be changed or freed under the worker thread (a transferred or reused buffer).
  Napi::Float32Array array = info[0].As<Napi::Float32Array>();
  std::vector<float> samples;
  try {
    samples.assign(array.Data(), array.Data() + array.ElementLength());
  } catch (const std::bad_alloc&) {
    return RejectedJob(env, "OUT_OF_MEMORY",
                       "out of memory copying " + std::to_string(array.ElementLength()) + " samples");
  }
  auto* worker = new AudioEncoderEncodeWorker(env, this, Value(), encoder_, std::move(samples));
  Napi::Object job = worker->Start();
  busy_ = true;
  return job;
}

Napi::Value AudioEncoderWrap::Finish(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (const char* refusal = Refusal()) {
    return RejectedJob(env, refusal,
                       closed_ ? "the encoder was finished, disposed, or failed earlier"
                               : "another encode() or finish() is still running; await it first");
  }
  auto* worker = new AudioEncoderFinishWorker(env, this, Value(), encoder_);
  Napi::Object job = worker->Start();
  // Later calls are refused at once, though the finish itself is still running.
  busy_ = true;
  closed_ = true;
  return job;
}

Napi::Value AudioEncoderWrap::Dispose(const Napi::CallbackInfo& info) {
  closed_ = true;
  encoder_.reset();
  return info.Env().Undefined();
}

void AudioEncoderWrap::JobSettled(bool closes) {
  busy_ = false;
  if (closes) {
    closed_ = true;
    encoder_.reset();
  }
}

}  // namespace voxmill
