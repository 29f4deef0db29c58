// Per-environment state (main thread and each worker_thread that loads the addon get their own).
#pragma once
#include <napi.h>

namespace voxmill {

struct AddonData {
  Napi::FunctionReference whisperModel;
  Napi::FunctionReference onnxSession;

  static AddonData& From(Napi::Env env) { return *env.GetInstanceData<AddonData>(); }
};

}  // namespace voxmill
