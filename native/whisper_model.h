// WhisperModel: one loaded whisper.cpp context (the weights), shared by concurrent transcriptions that
// each get their own whisper_state. The context is reference-counted: a running job keeps it alive
// even if the model is disposed or garbage-collected meanwhile.
#pragma once
#include <napi.h>

#include <memory>
#include <string>

#include "whisper.h"

namespace voxmill {

struct ModelFacts {
  std::string type;  // "tiny", "base", ... as whisper.cpp reads it
  bool multilingual = false;
  int vocabSize = 0;
  int audioLayers = 0;
  int textLayers = 0;
  int audioState = 0;
  int mels = 0;
  int ftype = 0;
  std::string dtwPreset;  // "" when DTW is off
  bool flashAttention = false;
  bool gpu = false;
};

using WhisperContextPtr = std::shared_ptr<whisper_context>;

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
