// ONNX Runtime from C++: the shared library shipped beside the addon (libonnxruntime.so.1, from the onnxruntime wheel
// at build time: scripts/native-deps.mjs), opened on first use with dlopen from the path TypeScript gives
// (never the system's), and sessions on it. Pure C++: no N-API here (onnx_session.h wraps it for JavaScript).
//
// The addon does not link against ONNX Runtime, so a missing or broken library fails the first voice or speaker
// model with a clear error, and transcription (whisper.cpp) still works. The C API is versioned: the headers are
// ORT 1.21's (Debian's libonnxruntime-dev), and any library of 1.21 or later serves that API version.
#pragma once
#include <onnxruntime_c_api.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace voxmill {

// An error from ONNX Runtime or from this layer, with the code the JavaScript error carries.
class OnnxError : public std::runtime_error {
 public:
  OnnxError(std::string code, const std::string& message) : std::runtime_error(message), code(std::move(code)) {}
  std::string code;
};

// Opens the library at `path` once per process and returns its API, or throws OnnxError (MODEL_LOAD_FAILED). Later
// calls with another path are refused: one process has one ONNX Runtime.
const OrtApi& OnnxApi(const std::string& path);
// The path and version of the loaded runtime ("" before the first load).
std::string OnnxLoadedPath();
std::string OnnxLoadedVersion();

enum class TensorType { Float32, Int64 };

// A tensor passed to or returned from a session: its element type, its shape and its bytes.
struct Tensor {
  TensorType type = TensorType::Float32;
  std::vector<int64_t> dims;
  std::vector<uint8_t> bytes;
  size_t ElementCount() const;
};

struct NamedTensor {
  std::string name;
  Tensor tensor;
};

// What a session's graph takes or gives: a name, an element type ("float32", "int64", or ONNX's number for others)
// and a shape whose unknown dimensions are -1.
struct TensorFacts {
  std::string name;
  std::string type;
  std::vector<int64_t> shape;
};

struct SessionOptions {
  int intraOpThreads = 1;
  // ONNX Runtime's CPU memory arena and memory patterns: faster repeated runs, but buffers stay with the session.
  bool memoryArena = true;
  // Where the graph ONNX Runtime optimized is kept for the next load (a path prefix; this runtime's version and
  // ".onnx" are appended), or "" for none. Optimizing the graph is most of a load: the joe voice loads in 307 ms from
  // its file and in 107 ms from the optimized copy (ONNX Runtime 1.32), which runs the same and gives the same audio.
  // The copy is saved at the extended level, which holds no CPU-specific layout, and loaded with every optimization.
  std::string optimizedCache;
};

// Cancels a run from another thread, before it starts or while it runs (ONNX Runtime's run-options terminate flag,
// which its executor checks between kernels).
class RunCancel {
 public:
  RunCancel() = default;
  RunCancel(const RunCancel&) = delete;
  RunCancel& operator=(const RunCancel&) = delete;
  void Cancel();
  bool Cancelled() const { return cancelled_.load(); }

 private:
  friend class OnnxSessionCore;
  // The options of the run in progress (set by the running thread, under the mutex), or null.
  std::mutex mutex_;
  const OrtApi* api_ = nullptr;
  OrtRunOptions* running_ = nullptr;
  std::atomic<bool> cancelled_{false};
};

// One loaded model. Runs from several threads at once are allowed (ONNX Runtime sessions are thread-safe for Run).
class OnnxSessionCore {
 public:
  // From a file or from bytes in memory (`bytes` non-empty). Throws OnnxError.
  static std::shared_ptr<OnnxSessionCore> Load(const std::string& runtimePath, const std::string& modelPath,
                                               const std::vector<uint8_t>& bytes, const SessionOptions& options);
  ~OnnxSessionCore();
  OnnxSessionCore(const OnnxSessionCore&) = delete;
  OnnxSessionCore& operator=(const OnnxSessionCore&) = delete;

  const std::vector<TensorFacts>& inputs() const { return inputs_; }
  const std::vector<TensorFacts>& outputs() const { return outputs_; }

  // Runs the graph on `feeds` and returns the outputs named in `wanted` (every output when empty), as float32 or
  // int64 tensors. Throws OnnxError: ABORTED when `cancel` was set, INFERENCE_FAILED otherwise.
  std::vector<NamedTensor> Run(const std::vector<NamedTensor>& feeds, const std::vector<std::string>& wanted,
                               RunCancel& cancel) const;

 private:
  OnnxSessionCore(const OrtApi& api, OrtSession* session);
  const OrtApi& api_;
  OrtSession* session_;
  std::vector<TensorFacts> inputs_;
  std::vector<TensorFacts> outputs_;
};

}  // namespace voxmill
