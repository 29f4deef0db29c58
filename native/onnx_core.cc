#include "onnx_core.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <utility>

namespace voxmill {
namespace {

// The process's one ONNX Runtime: opened once, kept for the life of the process (an OrtEnv released while a
// session of another Node environment still runs would take that session down; the OS frees it all at exit).
struct Runtime {
  std::mutex mutex;
  void* handle = nullptr;
  const OrtApi* api = nullptr;
  OrtEnv* env = nullptr;
  std::string path;
  std::string version;
};

Runtime& TheRuntime() {
  static Runtime* runtime = new Runtime();  // never destroyed: see above
  return *runtime;
}

// ONNX Runtime's own log lines (warnings about unused initializers, ...) would go to the host app's stderr; every
// failure that matters comes back as a status, which becomes the JavaScript error.
void QuietLogger(void*, OrtLoggingLevel, const char*, const char*, const char*, const char*) {}

// Throws OnnxError(code, "<context>: <ONNX Runtime's message>") for a failed status, releasing it.
void Check(const OrtApi& api, OrtStatus* status, const char* code, const std::string& context) {
  if (status == nullptr) return;
  std::string message = context + ": " + api.GetErrorMessage(status);
  api.ReleaseStatus(status);
  throw OnnxError(code, message);
}

std::string ElementTypeName(ONNXTensorElementDataType type) {
  switch (type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
      return "float32";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
      return "int64";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
      return "int32";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8:
      return "uint8";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8:
      return "int8";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
      return "float16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
      return "float64";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL:
      return "bool";
    default:
      return "onnx-type-" + std::to_string(static_cast<int>(type));
  }
}

// Releases what ONNX Runtime handed out, whichever way the function that took it ends.
template <typename T>
class Owned {
 public:
  using Release = void (*)(T*);
  Owned(Release release) : release_(release) {}
  ~Owned() {
    if (value_ != nullptr) release_(value_);
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  T** out() { return &value_; }
  T* get() const { return value_; }
  T* take() { return std::exchange(value_, nullptr); }

 private:
  Release release_;
  T* value_ = nullptr;
};

// A name ONNX Runtime allocated, copied out and freed.
std::string TakeName(const OrtApi& api, OrtAllocator* allocator, char* name) {
  std::string copy(name);
  // Freeing cannot fail for the default allocator; a status it returns anyway is released, not leaked.
  if (OrtStatus* status = api.AllocatorFree(allocator, name)) api.ReleaseStatus(status);
  return copy;
}

TensorFacts FactsOf(const OrtApi& api, const std::string& name, const OrtTypeInfo* info) {
  TensorFacts facts{name, "not-a-tensor", {}};
  const OrtTensorTypeAndShapeInfo* tensor = nullptr;
  Check(api, api.CastTypeInfoToTensorInfo(info, &tensor), "MODEL_LOAD_FAILED", "reading the type of " + name);
  if (tensor == nullptr) return facts;
  ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  Check(api, api.GetTensorElementType(tensor, &type), "MODEL_LOAD_FAILED", "reading the type of " + name);
  size_t rank = 0;
  Check(api, api.GetDimensionsCount(tensor, &rank), "MODEL_LOAD_FAILED", "reading the shape of " + name);
  facts.type = ElementTypeName(type);
  facts.shape.resize(rank);
  if (rank > 0) {
    Check(api, api.GetDimensions(tensor, facts.shape.data(), rank), "MODEL_LOAD_FAILED",
          "reading the shape of " + name);
  }
  return facts;
}

size_t ElementSize(TensorType type) { return type == TensorType::Int64 ? sizeof(int64_t) : sizeof(float); }

}  // namespace

size_t Tensor::ElementCount() const { return bytes.size() / ElementSize(type); }

const OrtApi& OnnxApi(const std::string& path) {
  Runtime& runtime = TheRuntime();
  std::lock_guard<std::mutex> lock(runtime.mutex);
  if (runtime.api != nullptr) {
    if (path != runtime.path) {
      throw OnnxError("MODEL_LOAD_FAILED", "ONNX Runtime is already loaded from " + runtime.path +
                                               " in this process; cannot load another from " + path);
    }
    return *runtime.api;
  }
  // RTLD_LOCAL: its symbols stay out of the process's global namespace, where they could clash with another copy of
  // ONNX Runtime that the host app loads (onnxruntime-node, sherpa-onnx).
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    throw OnnxError("MODEL_LOAD_FAILED",
                    "cannot load ONNX Runtime from " + path + ": " + (why != nullptr ? why : "unknown error"));
  }
  using GetApiBase = const OrtApiBase* (*)();
  auto getApiBase = reinterpret_cast<GetApiBase>(dlsym(handle, "OrtGetApiBase"));
  const OrtApiBase* base = getApiBase != nullptr ? getApiBase() : nullptr;
  const OrtApi* api = base != nullptr ? base->GetApi(ORT_API_VERSION) : nullptr;
  if (api == nullptr) {
    std::string version = base != nullptr ? base->GetVersionString() : "unknown";
    dlclose(handle);
    throw OnnxError("MODEL_LOAD_FAILED", path + " is ONNX Runtime " + version + ", which does not serve API version " +
                                             std::to_string(ORT_API_VERSION) + " (ONNX Runtime 1." +
                                             std::to_string(ORT_API_VERSION) + " or later is needed)");
  }
  OrtEnv* env = nullptr;
  Check(*api, api->CreateEnvWithCustomLogger(QuietLogger, nullptr, ORT_LOGGING_LEVEL_WARNING, "voxmill", &env),
        "MODEL_LOAD_FAILED", "starting ONNX Runtime");
  runtime.handle = handle;
  runtime.api = api;
  runtime.env = env;
  runtime.path = path;
  runtime.version = base->GetVersionString();
  return *api;
}

std::string OnnxLoadedPath() {
  Runtime& runtime = TheRuntime();
  std::lock_guard<std::mutex> lock(runtime.mutex);
  return runtime.path;
}

std::string OnnxLoadedVersion() {
  Runtime& runtime = TheRuntime();
  std::lock_guard<std::mutex> lock(runtime.mutex);
  return runtime.version;
}

void RunCancel::Cancel() {
  std::lock_guard<std::mutex> lock(mutex_);
  cancelled_.store(true);
  if (running_ != nullptr && api_ != nullptr) {
    OrtStatus* status = api_->RunOptionsSetTerminate(running_);
    if (status != nullptr) api_->ReleaseStatus(status);
  }
}

std::shared_ptr<OnnxSessionCore> OnnxSessionCore::Load(const std::string& runtimePath, const std::string& modelPath,
                                                       const std::vector<uint8_t>& bytes,
                                                       const SessionOptions& options) {
  const OrtApi& api = OnnxApi(runtimePath);
  OrtEnv* env = TheRuntime().env;
  const std::string what = bytes.empty() ? modelPath : "the model in memory (" + modelPath + ")";
  const std::string context = "cannot load " + what;
  Owned<OrtSessionOptions> sessionOptions(api.ReleaseSessionOptions);
  Check(api, api.CreateSessionOptions(sessionOptions.out()), "MODEL_LOAD_FAILED", context);
  OrtSessionOptions* so = sessionOptions.get();
  Check(api, api.SetIntraOpNumThreads(so, options.intraOpThreads), "MODEL_LOAD_FAILED", context);
  Check(api, api.SetInterOpNumThreads(so, 1), "MODEL_LOAD_FAILED", context);
  Check(api, api.SetSessionExecutionMode(so, ORT_SEQUENTIAL), "MODEL_LOAD_FAILED", context);
  Check(api, api.SetSessionGraphOptimizationLevel(so, ORT_ENABLE_ALL), "MODEL_LOAD_FAILED", context);
  if (!options.memoryArena) {
    Check(api, api.DisableCpuMemArena(so), "MODEL_LOAD_FAILED", context);
    Check(api, api.DisableMemPattern(so), "MODEL_LOAD_FAILED", context);
  }
  Owned<OrtSession> session(api.ReleaseSession);
  const std::string cached =
      options.optimizedCache.empty() ? "" : options.optimizedCache + "-ort" + OnnxLoadedVersion() + ".onnx";
  std::error_code missing;
  if (!cached.empty() && std::filesystem::is_regular_file(cached, missing)) {
    // The optimized copy of an earlier load; should it fail to load, the model itself is loaded below.
    OrtStatus* status = api.CreateSession(env, cached.c_str(), so, session.out());
    if (status != nullptr) api.ReleaseStatus(status);
  }
  if (session.get() == nullptr && !cached.empty()) {
    // Optimized here at the extended level and written to a name of this load's own, then renamed into place, so a
    // reader never sees half a file and two processes loading at once do not write into each other's.
    static std::atomic<unsigned> counter{0};
    const std::string partial = cached + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    Owned<OrtSessionOptions> saving(api.ReleaseSessionOptions);
    Check(api, api.CloneSessionOptions(so, saving.out()), "MODEL_LOAD_FAILED", context);
    Check(api, api.SetSessionGraphOptimizationLevel(saving.get(), ORT_ENABLE_EXTENDED), "MODEL_LOAD_FAILED", context);
    Check(api, api.SetOptimizedModelFilePath(saving.get(), partial.c_str()), "MODEL_LOAD_FAILED", context);
    OrtStatus* status = bytes.empty()
                            ? api.CreateSession(env, modelPath.c_str(), saving.get(), session.out())
                            : api.CreateSessionFromArray(env, bytes.data(), bytes.size(), saving.get(), session.out());
    // A cache that cannot be written (a read-only folder) only costs the next load its speed.
    if (status != nullptr) api.ReleaseStatus(status);
    std::error_code ignored;
    if (session.get() != nullptr) {
      std::error_code renamed;
      std::filesystem::rename(partial, cached, renamed);
      if (!renamed) {
        // That session was optimized at the extended level only; the one that serves is the copy at every level,
        // as every later load makes it (the same kernels, so the same output from the first load on).
        OrtSession* extended = session.take();
        api.ReleaseSession(extended);
        OrtStatus* reload = api.CreateSession(env, cached.c_str(), so, session.out());
        if (reload != nullptr) api.ReleaseStatus(reload);
      }
    }
    std::filesystem::remove(partial, ignored);
  }
  if (session.get() == nullptr) {
    if (bytes.empty()) {
      Check(api, api.CreateSession(env, modelPath.c_str(), so, session.out()), "MODEL_LOAD_FAILED", context);
    } else {
      Check(api, api.CreateSessionFromArray(env, bytes.data(), bytes.size(), so, session.out()), "MODEL_LOAD_FAILED",
            context);
    }
  }
  std::shared_ptr<OnnxSessionCore> core(new OnnxSessionCore(api, session.take()));
  OrtAllocator* allocator = nullptr;
  Check(api, api.GetAllocatorWithDefaultOptions(&allocator), "MODEL_LOAD_FAILED", context);
  size_t count = 0;
  Check(api, api.SessionGetInputCount(core->session_, &count), "MODEL_LOAD_FAILED", context);
  for (size_t i = 0; i < count; i++) {
    char* name = nullptr;
    Check(api, api.SessionGetInputName(core->session_, i, allocator, &name), "MODEL_LOAD_FAILED", context);
    std::string input = TakeName(api, allocator, name);
    Owned<OrtTypeInfo> info(api.ReleaseTypeInfo);
    Check(api, api.SessionGetInputTypeInfo(core->session_, i, info.out()), "MODEL_LOAD_FAILED", context);
    core->inputs_.push_back(FactsOf(api, input, info.get()));
  }
  Check(api, api.SessionGetOutputCount(core->session_, &count), "MODEL_LOAD_FAILED", context);
  for (size_t i = 0; i < count; i++) {
    char* name = nullptr;
    Check(api, api.SessionGetOutputName(core->session_, i, allocator, &name), "MODEL_LOAD_FAILED", context);
    std::string output = TakeName(api, allocator, name);
    Owned<OrtTypeInfo> info(api.ReleaseTypeInfo);
    Check(api, api.SessionGetOutputTypeInfo(core->session_, i, info.out()), "MODEL_LOAD_FAILED", context);
    core->outputs_.push_back(FactsOf(api, output, info.get()));
  }
  return core;
}

OnnxSessionCore::OnnxSessionCore(const OrtApi& api, OrtSession* session) : api_(api), session_(session) {}

OnnxSessionCore::~OnnxSessionCore() { api_.ReleaseSession(session_); }

std::vector<NamedTensor> OnnxSessionCore::Run(const std::vector<NamedTensor>& feeds,
                                              const std::vector<std::string>& wanted, RunCancel& cancel) const {
  const OrtApi& api = api_;
  Owned<OrtMemoryInfo> memory(api.ReleaseMemoryInfo);
  Check(api, api.CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, memory.out()), "INFERENCE_FAILED",
        "preparing the inputs");

  // Inputs: ONNX Runtime reads the bytes where they are (it never writes an input).
  std::vector<OrtValue*> inputs;
  std::vector<const char*> inputNames;
  struct ReleaseValues {
    const OrtApi& api;
    std::vector<OrtValue*>& values;
    ~ReleaseValues() {
      for (OrtValue* value : values)
        if (value != nullptr) api.ReleaseValue(value);
    }
  } releaseInputs{api, inputs};
  for (const NamedTensor& feed : feeds) {
    OrtValue* value = nullptr;
    const auto type = feed.tensor.type == TensorType::Int64 ? ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64
                                                            : ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
    Check(api,
          api.CreateTensorWithDataAsOrtValue(memory.get(), const_cast<uint8_t*>(feed.tensor.bytes.data()),
                                             feed.tensor.bytes.size(), feed.tensor.dims.data(), feed.tensor.dims.size(),
                                             type, &value),
          "INFERENCE_FAILED", "input " + feed.name);
    inputs.push_back(value);
    inputNames.push_back(feed.name.c_str());
  }

  std::vector<std::string> names = wanted;
  if (names.empty()) {
    for (const TensorFacts& output : outputs_) names.push_back(output.name);
  }
  std::vector<const char*> outputNames;
  for (const std::string& name : names) outputNames.push_back(name.c_str());
  std::vector<OrtValue*> outputs(names.size(), nullptr);
  ReleaseValues releaseOutputs{api, outputs};

  Owned<OrtRunOptions> runOptions(api.ReleaseRunOptions);
  Check(api, api.CreateRunOptions(runOptions.out()), "INFERENCE_FAILED", "preparing the run");
  {
    std::lock_guard<std::mutex> lock(cancel.mutex_);
    if (cancel.Cancelled()) throw OnnxError("ABORTED", "the run was cancelled");
    cancel.api_ = &api;
    cancel.running_ = runOptions.get();
  }
  OrtStatus* status = api.Run(session_, runOptions.get(), inputNames.data(), inputs.data(), inputs.size(),
                              outputNames.data(), outputNames.size(), outputs.data());
  {
    std::lock_guard<std::mutex> lock(cancel.mutex_);
    cancel.running_ = nullptr;
  }
  if (status != nullptr && cancel.Cancelled()) {
    api.ReleaseStatus(status);
    throw OnnxError("ABORTED", "the run was cancelled");
  }
  Check(api, status, "INFERENCE_FAILED", "ONNX Runtime failed");

  std::vector<NamedTensor> results;
  for (size_t i = 0; i < outputs.size(); i++) {
    NamedTensor result{names[i], {}};
    Owned<OrtTensorTypeAndShapeInfo> info(api.ReleaseTensorTypeAndShapeInfo);
    Check(api, api.GetTensorTypeAndShape(outputs[i], info.out()), "INFERENCE_FAILED", "output " + names[i]);
    ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
    Check(api, api.GetTensorElementType(info.get(), &type), "INFERENCE_FAILED", "output " + names[i]);
    if (type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
      result.tensor.type = TensorType::Float32;
    } else if (type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64) {
      result.tensor.type = TensorType::Int64;
    } else {
      throw OnnxError("INFERENCE_FAILED", "output " + names[i] + " is " + ElementTypeName(type) +
                                              "; voxmill reads float32 and int64 outputs");
    }
    size_t rank = 0;
    Check(api, api.GetDimensionsCount(info.get(), &rank), "INFERENCE_FAILED", "output " + names[i]);
    result.tensor.dims.resize(rank);
    if (rank > 0) {
      Check(api, api.GetDimensions(info.get(), result.tensor.dims.data(), rank), "INFERENCE_FAILED",
            "output " + names[i]);
    }
    size_t count = 0;
    Check(api, api.GetTensorShapeElementCount(info.get(), &count), "INFERENCE_FAILED", "output " + names[i]);
    void* data = nullptr;
    Check(api, api.GetTensorMutableData(outputs[i], &data), "INFERENCE_FAILED", "output " + names[i]);
    const size_t bytes = count * ElementSize(result.tensor.type);
    result.tensor.bytes.resize(bytes);
    if (bytes > 0) std::memcpy(result.tensor.bytes.data(), data, bytes);
    results.push_back(std::move(result));
  }
  return results;
}

}  // namespace voxmill
