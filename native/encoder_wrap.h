// AudioEncoder (JS): one streaming encoder. Its FFmpeg state is shared with the job that is running,
// so dispose() or garbage collection during a job frees it only once the job has let go.
#pragma once
#include <napi.h>

#include <memory>

#include "audio_encode.h"

namespace voxmill {

class AudioEncoderWrap : public Napi::ObjectWrap<AudioEncoderWrap> {
 public:
  static Napi::Function Init(Napi::Env env);

  // new AudioEncoder({ format, inputSampleRate, outputSampleRate, whole, bitRate? }); throws an Error
  // with code INVALID_ARGUMENT or ENCODE_UNSUPPORTED_RATE.
  explicit AudioEncoderWrap(const Napi::CallbackInfo& info);

  // Called by a job on the main thread once it settled; `closes` after finish() and after failures.
  void JobSettled(bool closes);

 private:
  // encode(samples: Float32Array) -> { promise: Promise<Buffer>, abort }
  Napi::Value Encode(const Napi::CallbackInfo& info);
  // finish() -> { promise: Promise<Buffer>, abort }
  Napi::Value Finish(const Napi::CallbackInfo& info);
  // Frees the FFmpeg state now, or when the running job ends; idempotent.
  Napi::Value Dispose(const Napi::CallbackInfo& info);

  // A job that is already settled: { promise: rejected with `code`, abort: no-op }.
  // Why a new job cannot start now, or nullptr.
  const char* Refusal() const;

  std::shared_ptr<AudioEncoder> encoder_;
  bool busy_ = false;
  bool closed_ = false;
};

}  // namespace voxmill
