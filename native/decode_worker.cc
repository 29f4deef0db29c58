#include "decode_worker.h"

#include <memory>
#include <string>
#include <vector>

#include "audio_decode.h"
#include "promise_worker.h"

namespace voxmill {
namespace {

class DecodeWorker final : public PromiseWorker {
 public:
  DecodeWorker(Napi::Env env, DecodeRequest request, Napi::Object keepAlive)
      : PromiseWorker(env, "voxmill.decodeAudio"), request_(std::move(request)) {
    // The input bytes are borrowed, not copied: hold the JS buffer until the job settles.
    if (!keepAlive.IsEmpty()) input_ = Napi::Persistent(keepAlive);
    request_.cancel = cancelFlag().get();
  }

 protected:
  void Run() override {
    DecodeFailure failure;
    if (!DecodeAudio(request_, audio_, failure)) Fail(failure.code, failure.message);
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

  void Settled() override { input_.Reset(); }

  void ReleaseNative() override {
    for (std::vector<float>* v : {&audio_.samples, &audio_.left, &audio_.right}) {
      v->clear();
      v->shrink_to_fit();
    }
  }

 private:
  DecodeRequest request_;
  DecodedAudio audio_;
  Napi::ObjectReference input_;
};

}  // namespace

Napi::Float32Array AdoptSamples(Napi::Env env, std::vector<float>&& samples) {
  auto* owned = new std::vector<float>(std::move(samples));
  const size_t count = owned->size();
  if (count == 0) {
    delete owned;
    return Napi::Float32Array::New(env, 0);
  }
  Napi::ArrayBuffer buffer = Napi::ArrayBuffer::New(
      env, owned->data(), count * sizeof(float), [](Napi::Env, void*, std::vector<float>* v) { delete v; }, owned);
  return Napi::Float32Array::New(env, count, buffer, 0);
}

Napi::Value DecodeAudioJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[1].IsNumber()) {
    throw Napi::TypeError::New(env, "decodeAudio(input, maxDurationSeconds): maxDurationSeconds must be a number");
  }
  DecodeRequest request;
  request.maxDurationSeconds = info[1].As<Napi::Number>().DoubleValue();
  if (!(request.maxDurationSeconds > 0)) {
    throw Napi::RangeError::New(env, "decodeAudio: maxDurationSeconds must be > 0");
  }
  if (info.Length() > 2 && !info[2].IsUndefined()) {
    if (!info[2].IsBoolean()) throw Napi::TypeError::New(env, "decodeAudio: stereo must be a boolean");
    request.stereo = info[2].As<Napi::Boolean>().Value();
  }
  Napi::Object keepAlive;
  if (info[0].IsString()) {
    request.path = info[0].As<Napi::String>().Utf8Value();
    if (request.path.empty()) throw Napi::TypeError::New(env, "decodeAudio: the path is empty");
  } else if (info[0].IsTypedArray()) {
    Napi::TypedArray array = info[0].As<Napi::TypedArray>();
    if (array.TypedArrayType() != napi_uint8_array) {
      throw Napi::TypeError::New(env, "decodeAudio: input must be a Uint8Array or a path string");
    }
    Napi::Uint8Array bytes = array.As<Napi::Uint8Array>();
    request.data = bytes.Data();
    request.size = bytes.ByteLength();
    keepAlive = bytes;
  } else {
    throw Napi::TypeError::New(env, "decodeAudio: input must be a Uint8Array or a path string");
  }
  auto* worker = new DecodeWorker(env, std::move(request), keepAlive);
  return worker->Start();
}

}  // namespace voxmill
