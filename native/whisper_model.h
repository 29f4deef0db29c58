// WhisperModel: the JavaScript object of one loaded whisper.cpp context (whisper_core.h does the work). It reads
// arguments, runs loading and transcription as PromiseWorker jobs, and turns the results into JS values.
// Concurrent transcriptions share the context, each with its own whisper_state; a running job keeps the context
// alive even if the model is disposed or garbage-collected meanwhile.
#pragma once
#include <napi.h>

#include "whisper_core.h"

namespace voxmill {

class WhisperModel : public Napi::ObjectWrap<WhisperModel> {
 public:
  static Napi::Function Init(Napi::Env env);
  // Wraps a loaded context in a new JS object (main thread).
  static Napi::Object Wrap(Napi::Env env, WhisperContextPtr context, const ModelFacts& facts);

  explicit WhisperModel(const Napi::CallbackInfo& info);

 private:
  // WhisperModel.load(path, { gpu, flashAttention, dtw, gpuDevice }) -> { promise, abort }
  static Napi::Value Load(const Napi::CallbackInfo& info);
  Napi::Value Info(const Napi::CallbackInfo& info);
  // transcribe(samples: Float32Array, params, onEvent?) -> { promise, abort }
  Napi::Value Transcribe(const Napi::CallbackInfo& info);
  // Drops this object's hold on the weights; running jobs finish first.
  Napi::Value Dispose(const Napi::CallbackInfo& info);

  WhisperContextPtr context_;
  ModelFacts facts_;
};

}  // namespace voxmill
