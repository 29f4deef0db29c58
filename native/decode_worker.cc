#include "decode_worker.h"

#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "audio_decode.h"
#include "js_args.h"
#include "promise_worker.h"

namespace voxmill {
namespace {

// A bound on what is copied, not policy: no system takes a longer path.
constexpr size_t kMaxPathBytes = 4096;

class DecodeWorker final : public PromiseWorker {
 public:
  // `input`: the caller's bytes, copied (empty for a path). Compressed audio is small next to what it
  // decodes to, and a copy cannot be detached, transferred, resized or rewritten under the worker thread.
  DecodeWorker(Napi::Env env, DecodeRequest request, std::vector<uint8_t> input)
      : PromiseWorker(env, "voxmill.decodeAudio"), request_(std::move(request)), input_(std::move(input)) {
    if (request_.path.empty()) {
      request_.data = input_.data();
      request_.size = input_.size();
    }
    request_.cancel = cancelFlag().get();
  }

 protected:
  void Run() override {
    DecodeFailure failure;
    const bool ok = DecodeAudio(request_, audio_, failure);
    // The input is not needed any more: free it before the samples are handed over.
    request_.data = nullptr;
    request_.size = 0;
    input_ = std::vector<uint8_t>();
    if (!ok) Fail(failure.code, failure.message);
  }

  Napi::Value Result(Napi::Env env) override {
    Napi::Object result = Napi::Object::New(env);
    result.Set("container", audio_.container);
    result.Set("codec", audio_.codec);
    result.Set("sampleRate", audio_.sampleRate);
    result.Set("channels", audio_.channels);
    result.Set("bitRate", static_cast<double>(audio_.bitRate));
    result.Set("samples", AdoptSamples(env, std::move(audio_.samples)));
    if (!audio_.left.empty()) {
      Napi::Object stereo = Napi::Object::New(env);
      stereo.Set("left", AdoptSamples(env, std::move(audio_.left)));
      stereo.Set("right", AdoptSamples(env, std::move(audio_.right)));
      result.Set("stereo", stereo);
    }
    return result;
  }

  void ReleaseNative() override {
    input_ = std::vector<uint8_t>();
    for (std::vector<float>* v : {&audio_.samples, &audio_.left, &audio_.right}) {
      v->clear();
      v->shrink_to_fit();
    }
  }

 private:
  DecodeRequest request_;
  DecodedAudio audio_;
  std::vector<uint8_t> input_;
};

}  // namespace

Napi::Float32Array AdoptSamples(Napi::Env env, std::vector<float>&& samples) {
  const size_t count = samples.size();
  if (count == 0) return Napi::Float32Array::New(env, 0);
  // Owned here until the ArrayBuffer exists: if creating it throws (an environment being torn down),
  // node-addon-api drops the finalizer without calling it, and the vector must not leak.
  auto owned = std::make_unique<std::vector<float>>(std::move(samples));
  Napi::ArrayBuffer buffer = Napi::ArrayBuffer::New(
      env, owned->data(), count * sizeof(float), [](Napi::Env, void*, std::vector<float>* v) { delete v; },
      owned.get());
  owned.release();  // the buffer's finalizer frees it now
  return Napi::Float32Array::New(env, count, buffer, 0);
}

Napi::Value DecodeAudioJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const JsObject o = ReadObjectArg(env, info, 1, "options");
  DecodeRequest request;
  request.maxDurationSeconds = ReadNumber(env, o, "maxDurationSeconds", 1e-3, 1e7);
  request.minSampleRate = static_cast<int>(ReadInteger(env, o, "minSampleRate", 1, kMaxSampleRate));
  request.maxSampleRate = static_cast<int>(ReadInteger(env, o, "maxSampleRate", request.minSampleRate, kMaxSampleRate));
  // Optional in the native API: absent means mono only.
  request.stereo = OptionalBoolean(env, o, "stereo", false);
  // Optional: absent means no samples is AUDIO_EMPTY.
  request.allowEmpty = OptionalBoolean(env, o, "allowEmpty", false);
  PathOrBytes source = ReadPathOrBytesArg(env, info, 0, "input", kMaxPathBytes);
  request.path = std::move(source.path);
  std::vector<uint8_t> input;
  if (request.path.empty()) {
    const uint8_t* data = source.bytes.Data();
    const size_t size = source.bytes.ByteLength();
    try {
      if (size > 0) input.assign(data, data + size);
    } catch (const std::bad_alloc&) {
      return RejectedJob(env, "OUT_OF_MEMORY", "out of memory copying " + std::to_string(size) + " bytes of audio");
    }
  }
  auto* worker = new DecodeWorker(env, std::move(request), std::move(input));
  return worker->Start();
}

}  // namespace voxmill
