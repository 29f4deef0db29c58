// OnnxSession: the JavaScript object of one ONNX model loaded on the addon's ONNX Runtime (onnx_core.h does the
// work): Piper voices and speaker-embedding models. Loading and each run are PromiseWorker jobs on libuv's pool, so
// inference never blocks the event loop; a run's abort() stops ONNX Runtime between kernels. A running job keeps the
// model loaded even if the session is released or garbage-collected meanwhile.
#pragma once
#include <napi.h>

#include <memory>

#include "onnx_core.h"

namespace voxmill {

class OnnxSession : public Napi::ObjectWrap<OnnxSession> {
 public:
  static Napi::Function Init(Napi::Env env);
  // Wraps a loaded model in a new JS object (main thread).
  static Napi::Object Wrap(Napi::Env env, std::shared_ptr<OnnxSessionCore> core);

  explicit OnnxSession(const Napi::CallbackInfo& info);

 private:
  // OnnxSession.load(source: path | Uint8Array, { runtimePath, intraOpThreads, memoryArena }) -> { promise, abort }
  static Napi::Value Load(const Napi::CallbackInfo& info);
  // { inputs, outputs }: each { name, type, shape }.
  Napi::Value Info(const Napi::CallbackInfo& info);
  // run(feeds: { name, type, dims, data }[], outputs: string[]) -> { promise, abort }
  Napi::Value Run(const Napi::CallbackInfo& info);
  // Drops this object's hold on the model; running jobs finish first.
  Napi::Value Release(const Napi::CallbackInfo& info);

  std::shared_ptr<OnnxSessionCore> core_;
};

// onnxRuntime(path?): { path, version } of the ONNX Runtime this process loaded ("" for both before the first model);
// with a path, opens that library first (synchronously, for `voxmill doctor`).
Napi::Value OnnxRuntimeInfo(const Napi::CallbackInfo& info);

}  // namespace voxmill
