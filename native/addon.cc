// Module entry: registers the native surface that src/native.ts types.
#include <napi.h>

#include <cstdlib>
#include <mutex>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "addon_data.h"
#include "audio_decode.h"
#include "decode_worker.h"
#include "encoder_wrap.h"
#include "ffmpeg_log.h"
#include "ggml-backend.h"
#include "onnx_session.h"
#include "phonemizer.h"
#include "phonemizer_core.h"
#include "vad_stream_wrap.h"
#include "vad_worker.h"
#include "whisper.h"
#include "whisper_log.h"
#include "whisper_model.h"

namespace voxmill {
namespace {

Napi::Value Versions(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object versions = Napi::Object::New(env);
  versions.Set("whisper", whisper_version());
  versions.Set("ffmpeg", FfmpegVersion());
  versions.Set("ffmpegLinkage", VOXMILL_FFMPEG_USED);
  versions.Set("system", whisper_print_system_info());
  versions.Set("cpuTarget", VOXMILL_CPU_TARGET);
  versions.Set("blas", VOXMILL_BLAS_USED);
  versions.Set("espeak", EspeakVersion());
  // The ggml backends compiled in (statically linked, each registered at start): "CPU", "BLAS", "CUDA", "Vulkan", ...
  // A backend is listed even when it found no device on this machine.
  Napi::Array backends = Napi::Array::New(env, ggml_backend_reg_count());
  for (size_t i = 0; i < ggml_backend_reg_count(); i++) {
    backends.Set(static_cast<uint32_t>(i), ggml_backend_reg_name(ggml_backend_reg_get(i)));
  }
  versions.Set("backends", backends);
  return versions;
}

// The compute devices ggml was built with and found (CPU always; CUDA/Vulkan/Metal when compiled in).
Napi::Value Devices(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const size_t count = ggml_backend_dev_count();
  Napi::Array devices = Napi::Array::New(env, count);
  for (size_t i = 0; i < count; i++) {
    ggml_backend_dev_t dev = ggml_backend_dev_get(i);
    Napi::Object d = Napi::Object::New(env);
    d.Set("name", ggml_backend_dev_name(dev));
    d.Set("description", ggml_backend_dev_description(dev));
    const auto type = ggml_backend_dev_type(dev);
    d.Set("type", type == GGML_BACKEND_DEVICE_TYPE_CPU    ? "cpu"
                  : type == GGML_BACKEND_DEVICE_TYPE_GPU  ? "gpu"
                  : type == GGML_BACKEND_DEVICE_TYPE_IGPU ? "igpu"
                                                          : "accelerator");
    devices.Set(static_cast<uint32_t>(i), d);
  }
  return devices;
}

// glibc raises its mmap threshold after the first large free, after which whisper's per-call buffers
// (tens to hundreds of MB) land in per-thread arenas that keep them: RSS then drifts with whichever
// threads ran recent calls. A fixed 128 KiB threshold maps such buffers directly and returns them on
// free (measured: flat RSS over 20+ calls, no measurable time cost). Process-wide, so it can be
// declined with VOXMILL_MALLOC_DEFAULTS=1.
void TuneAllocator() {
#if defined(__GLIBC__)
  static std::once_flag once;
  std::call_once(once, [] {
    if (std::getenv("VOXMILL_MALLOC_DEFAULTS") == nullptr) mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  });
#endif
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  TuneAllocator();
  InstallWhisperLog();
  // FFmpeg has one process-wide logger: installed here, on the main thread, before any job can log, rather
  // than racing to install it from whichever pool thread runs the first decode or encode.
  InstallFfmpegLog();
  auto* data = new AddonData();
  env.SetInstanceData(data);
  Napi::Function whisperModel = WhisperModel::Init(env);
  data->whisperModel = Napi::Persistent(whisperModel);
  exports.Set("WhisperModel", whisperModel);
  Napi::Function onnxSession = OnnxSession::Init(env);
  data->onnxSession = Napi::Persistent(onnxSession);
  exports.Set("OnnxSession", onnxSession);
  exports.Set("onnxRuntime", Napi::Function::New(env, OnnxRuntimeInfo, "onnxRuntime"));
  exports.Set("phonemize", Napi::Function::New(env, PhonemizeJs, "phonemize"));
  exports.Set("decodeAudio", Napi::Function::New(env, DecodeAudioJs, "decodeAudio"));
  exports.Set("detectSpeech", Napi::Function::New(env, DetectSpeechJs, "detectSpeech"));
  exports.Set("AudioEncoder", AudioEncoderWrap::Init(env));
  exports.Set("VadStream", VadStreamWrap::Init(env));
  exports.Set("versions", Napi::Function::New(env, Versions, "versions"));
  exports.Set("devices", Napi::Function::New(env, Devices, "devices"));
  exports.Set("markProcessExiting",
              Napi::Function::New(
                  env, [](const Napi::CallbackInfo&) { MarkProcessExiting(); }, "markProcessExiting"));
  return exports;
}

}  // namespace
}  // namespace voxmill

static Napi::Object InitVoxmill(Napi::Env env, Napi::Object exports) { return voxmill::Init(env, exports); }

NODE_API_MODULE(voxmill, InitVoxmill)
