// VadStream (JS): Silero speech probabilities over audio pushed in pieces (a live stream). Its state is shared with
// the push that is running, so dispose() or garbage collection during a push frees it only once the push let go.
#pragma once
#include <napi.h>

#include <memory>

#include "vad.h"

namespace voxmill {

class VadStreamWrap : public Napi::ObjectWrap<VadStreamWrap> {
 public:
  static Napi::Function Init(Napi::Env env);

  // new VadStream({ modelPath, threads }); throws an Error with code INVALID_ARGUMENT for a bad argument. The model
  // is loaded by the first push (on a worker thread), which fails with MODEL_LOAD_FAILED when it cannot be.
  explicit VadStreamWrap(const Napi::CallbackInfo& info);

  // Called by a push on the main thread once it settled.
  void PushSettled();

 private:
  // push(samples: Float32Array of 16 kHz mono, at most kMaxPushSamples) -> { promise: Promise<Float32Array>, abort }:
  // the probability of every 512-sample window the samples complete.
  Napi::Value Push(const Napi::CallbackInfo& info);
  // Frees the model now, or when the running push ends; idempotent.
  Napi::Value Dispose(const Napi::CallbackInfo& info);

  std::shared_ptr<VadStream> stream_;
  bool busy_ = false;
};

}  // namespace voxmill
